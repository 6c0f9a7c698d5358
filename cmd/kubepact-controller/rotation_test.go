package main

import (
	"context"
	"crypto"
	"encoding/pem"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// TestEnrolmentKeyRotationAsShipped rotates a provider's enrolment key
// under a peering from Git, with both controllers as config/ ships them,
// while a probe as the consumer (a SelfSubjectReview with its ControlPlane
// kubeconfig) runs every second:
//
//  1. --enrolment-key-rotation=prepare: a next key is made and published
//     beside the key; the grant is still the key's;
//  2. the consumer commits both keys in its TrustedProvider;
//  3. --enrolment-key-rotation=switch: the next key is the key (the next
//     key's Secret gone), the record publishes it alone, the grant is
//     signed again by it and no longer verifies with the old key, and the
//     endpoint's certificate is issued by it;
//  4. the consumer commits the new key alone, and stays Ready.
//
// Every probe succeeds.
func TestEnrolmentKeyRotationAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-rotate-p"}, peer{consumerEnv, "ctl-rotate-c"}
	provider := startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	_, ac, tp := peerFromGit(ctx, t, a, b, enrolhttp.Limits{PerClient: 100, Burst: 100})
	record := kube.NewEnrolmentKeyRecord(a.admin, "kubepact-system")
	old, err := record.Get(ctx)
	require.NoError(t, err)
	probes, failed := probeEverySecond(ctx, t, reviewAs(kubernetes.NewForConfigOrDie(restConfigOf(t, controlPlaneKubeconfig(ctx, t, a, b))), b.id))

	// 1. prepare
	provider.stop()
	provider = startCurrent(ctx, t, a, "--enrolment-key-rotation=prepare")
	var next crypto.PublicKey
	waitFor(t, "the next key published", func() bool {
		next, err = record.GetNext(ctx)
		require.NoError(t, err)
		return next != nil
	})
	require.False(t, keys.Equal(old, next), "a new key")
	current, err := record.Get(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(old, current), "the key still signs while consumers commit the next one")
	require.NoError(t, grantSignedBy(ctx, t, a, b, ac, tp, old))

	// 2. the consumer commits both.
	tp.Spec.EnrolmentKeys = []string{publicPEM(t, old), publicPEM(t, next)}
	require.NoError(t, b.typed.Update(ctx, tp))

	// 3. switch
	provider.stop()
	provider = startCurrent(ctx, t, a, "--enrolment-key-rotation=switch")
	waitFor(t, "the next key promoted and published alone", func() bool {
		current, err := record.Get(ctx)
		require.NoError(t, err)
		after, err := record.GetNext(ctx)
		require.NoError(t, err)
		return keys.Equal(current, next) && after == nil
	})
	waitFor(t, "the grant signed again by the new key", func() bool {
		return grantSignedBy(ctx, t, a, b, ac, tp, next) == nil
	})
	require.ErrorIs(t, grantSignedBy(ctx, t, a, b, ac, tp, old), enrol.ErrBadGrant, "the old key signs no more")
	secrets := a.admin.CoreV1().Secrets("kubepact-system")
	_, err = secrets.Get(ctx, kube.EnrolmentNextKeyName, metav1.GetOptions{})
	require.Truef(t, apierrors.IsNotFound(err), "the next key's Secret is gone: %v", err)
	waitFor(t, "the endpoint's certificate issued by the new key", func() bool {
		s, err := secrets.Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
		require.NoError(t, err)
		block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
		return block != nil && enrol.VerifyServingCertificate(block.Bytes, []crypto.PublicKey{next}, time.Now()) == nil
	})

	// 4. the consumer commits the new key alone.
	require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
	tp.Spec.EnrolmentKeys = []string{publicPEM(t, next)}
	require.NoError(t, b.typed.Update(ctx, tp))
	waitFor(t, "the TrustedProvider Ready on its new generation", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return tp.Status.ObservedGeneration == tp.Generation && meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	requireControlPlaneWorks(ctx, t, a, b)
	provider.stop()

	waitFor(t, "a few more probes", func() bool { return probes.Load() >= 5 })
	require.Zero(t, failed.Load(), "every probe as the consumer succeeds through the rotation")
}

// probeEverySecond runs probe every second until the test ends, and
// counts the probes and those that failed, logging why.
func probeEverySecond(ctx context.Context, t *testing.T, probe func(context.Context) error) (probes, failed *atomic.Int64) {
	t.Helper()
	probes, failed = &atomic.Int64{}, &atomic.Int64{}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			err := probe(ctx)
			if ctx.Err() != nil {
				return
			}
			probes.Add(1)
			if err != nil {
				failed.Add(1)
				t.Logf("probe: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return probes, failed
}

// reviewAs is a probe that asks the API server of cs who its credentials
// are, and fails unless it answers user.
func reviewAs(cs kubernetes.Interface, user string) func(context.Context) error {
	return func(ctx context.Context) error {
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil && r.Status.UserInfo.Username != user {
			err = apierrors.NewUnauthorized(r.Status.UserInfo.Username)
		}
		return err
	}
}

// grantSignedBy checks the grant ac holds on a's cluster against what tp
// commits, with key as the only enrolment key.
func grantSignedBy(ctx context.Context, t *testing.T, a, b peer, ac *peeringv1alpha1.AuthorizedConsumer, tp *peeringv1alpha1.TrustedProvider, key crypto.PublicKey) error {
	t.Helper()
	var got peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), &got))
	c, err := enrol.FromAuthorizedConsumer(&got)
	require.NoError(t, err)
	_, err = enrol.VerifyGrant(got.Status.Grant, enrol.Trust{ProviderID: a.id, ConsumerID: b.id,
		EnrolmentKeys: []crypto.PublicKey{key}, CASHA256: tp.Spec.CASHA256, Request: c.Request(a.id)})
	return err
}

func publicPEM(t *testing.T, k crypto.PublicKey) string {
	t.Helper()
	b, err := keys.MarshalPublicKey(k)
	require.NoError(t, err)
	return string(b)
}

package main

import (
	"context"
	"crypto"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/renewal"
)

// TestClusterKeyRotationAsShipped rotates a consumer's cluster key under
// a peering from Git, with both controllers as config/ ships them, while
// a probe every second reads the consumer's ControlPlane kubeconfig
// Secret, as the consumer's own components do, and asks the provider who
// it is:
//
//  1. --cluster-key-rotation=prepare: a next key is made and published
//     beside the key; the TrustedProvider shows both, and a request signed
//     by the next key, for a fresh identity key, with the hand-over from
//     the key; it waits for the provider (AwaitingHandOver);
//  2. the provider commits both keys and the new request: the new key
//     takes over the consumer's Tenant, and the consumer's kubeconfig
//     moves to a certificate for the fresh identity key;
//  3. --cluster-key-rotation=switch: the next key is the cluster key (in
//     authentication-keys, which keeps the old key's public half), the
//     next key's Secret is gone, and the record publishes the new key
//     alone; the request stays the one committed;
//  4. the provider drops the old key; all stays Ready.
//
// Every probe succeeds.
func TestClusterKeyRotationAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-clkey-p"}, peer{consumerEnv, "ctl-clkey-c"}
	startCurrent(ctx, t, a)
	consumer := startCurrent(ctx, t, b)
	_, ac, tp := peerFromGit(ctx, t, a, b, enrolhttp.Limits{PerClient: 100, Burst: 100})
	record := kube.NewPublicKeyRecord(b.admin, keys.DefaultNamespace)
	old, err := record.Get(ctx)
	require.NoError(t, err)
	firstKey := controlPlaneKey(ctx, t, a, b)
	probes, failed := probeEverySecond(ctx, t, heldKubeconfigWorks(a, b))

	// 1. prepare
	consumer.stop()
	consumer = startCurrent(ctx, t, b, "--cluster-key-rotation=prepare")
	var next crypto.PublicKey
	waitFor(t, "the next key published", func() bool {
		next, err = record.GetNext(ctx)
		require.NoError(t, err)
		return next != nil
	})
	require.False(t, keys.Equal(old, next), "a new key")
	current, err := record.Get(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(old, current), "the key is the cluster key until the switch")
	waitFor(t, "the TrustedProvider waiting for the provider to grant the hand-over", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		c := meta.FindStatusCondition(tp.Status.Conditions, peeringv1alpha1.ConditionReconciling)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == contract.ReasonAwaitingHandOver
	})
	require.Equal(t, publicPEM(t, old), tp.Status.PublicKey)
	require.Equal(t, publicPEM(t, next), tp.Status.NextPublicKey)
	request, err := enrol.RequestFromAPI(a.id, b.id, tp.Status.Request)
	require.NoError(t, err)
	require.NotNil(t, request.HandOver, "the request carries the hand-over")
	require.True(t, keys.Equal(old, request.HandOver.From))
	require.True(t, keys.Equal(firstKey, request.HandOver.Held), "of the identity key the old key holds")
	fresh, err := request.PublicKey()
	require.NoError(t, err)
	require.False(t, keys.Equal(firstKey, fresh), "for a fresh identity key")

	// 2. the provider commits both keys and the new request.
	require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
	ac.Spec.PublicKeys = []string{tp.Status.PublicKey, tp.Status.NextPublicKey}
	ac.Spec.Request = *tp.Status.Request
	require.NoError(t, a.typed.Update(ctx, ac))
	waitFor(t, "the consumer's kubeconfig moved to the fresh identity key (it asks every 30 s)", func() bool {
		return keys.Equal(fresh, controlPlaneKey(ctx, t, a, b))
	})
	waitFor(t, "the TrustedProvider Ready", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	ring := kube.NewKeyring(b.admin, keys.DefaultNamespace)
	name := identity.ControlPlaneName(a.id)
	moved, err := ring.Get(ctx, name)
	require.NoError(t, err)
	require.True(t, keys.Equal(fresh, moved.Key.Public()), "the fresh key is the identity's key")
	_, err = ring.Get(ctx, renewal.NextKeyName(name))
	require.ErrorIs(t, err, keys.ErrNotFound, "and the old one is gone")
	var stored authv1beta1.Tenant
	require.NoError(t, a.typed.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(b.id), Name: b.id}, &stored))
	storedKey, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	require.NoError(t, err)
	require.True(t, keys.Equal(next, storedKey), "the provider's Tenant is the new key's")

	// 3. switch
	committed := *tp.Status.Request
	consumer.stop()
	consumer = startCurrent(ctx, t, b, "--cluster-key-rotation=switch")
	waitFor(t, "the next key promoted and published alone", func() bool {
		current, after, err := record.GetWithNext(ctx)
		require.NoError(t, err)
		return keys.Equal(current, next) && after == nil
	})
	secrets := b.admin.CoreV1().Secrets(keys.DefaultNamespace)
	sec, err := secrets.Get(ctx, keys.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	held, err := keys.FromSecret(sec)
	require.NoError(t, err)
	require.True(t, keys.Equal(next, held.Public()), "authentication-keys holds the new key")
	previous, err := keys.PreviousFromSecret(sec)
	require.NoError(t, err)
	require.True(t, keys.Equal(old, previous), "and the old key's public half")
	_, err = secrets.Get(ctx, keys.NextSecretName, metav1.GetOptions{})
	require.Truef(t, apierrors.IsNotFound(err), "the next key's Secret is gone: %v", err)
	waitFor(t, "the TrustedProvider showing the new key alone", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return tp.Status.PublicKey == publicPEM(t, next) && tp.Status.NextPublicKey == ""
	})
	require.Equal(t, committed, *tp.Status.Request, "the committed request is kept")
	require.True(t, meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady))

	// 4. the provider drops the old key.
	require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
	ac.Spec.PublicKeys = []string{publicPEM(t, next)}
	require.NoError(t, a.typed.Update(ctx, ac))
	waitFor(t, "the AuthorizedConsumer Ready on its new generation", func() bool {
		require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return ac.Status.ObservedGeneration == ac.Generation && meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	requireControlPlaneWorks(ctx, t, a, b)
	consumer.stop()

	waitFor(t, "a few more probes", func() bool { return probes.Load() >= 5 })
	require.Zero(t, failed.Load(), "every probe with the consumer's kubeconfig succeeds through the rotation")
}

// controlPlaneKey returns the key of the certificate c's ControlPlane
// kubeconfig for p holds.
func controlPlaneKey(ctx context.Context, t *testing.T, p, c peer) crypto.PublicKey {
	t.Helper()
	rc, err := controlPlaneKubeconfig(ctx, t, p, c).RESTConfig()
	require.NoError(t, err)
	leaf, err := csr.ParseCertificate(rc.CertData)
	require.NoError(t, err)
	return leaf.PublicKey
}

// heldKubeconfigWorks is a probe that reads c's ControlPlane kubeconfig
// Secret for p as it is then, as c's own components do, and fails unless
// p's API server, asked with it, answers c.
func heldKubeconfigWorks(p, c peer) func(context.Context) error {
	return func(ctx context.Context) error {
		user, err := selfSubjectReview(ctx, p, c)
		if err == nil && user != c.id {
			err = apierrors.NewUnauthorized(user)
		}
		return err
	}
}

package main

import (
	"context"
	"crypto/tls"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// TestPeeringFromGitAsShipped peers two clusters from Git with both
// controllers as config/ ships them: its RBAC and admission policies, the
// Deployment's args, as the ServiceAccount. The provider's controller
// keeps its enrolment key, its record and the endpoint's certificate in
// its own namespace, grants the AuthorizedConsumer, and the consumer's
// controller applies the grant of its TrustedProvider.
func TestPeeringFromGitAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-gitops-p"}, peer{consumerEnv, "ctl-gitops-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	_, ac, tp := peerFromGit(ctx, t, a, b, enrolhttp.Limits{PerClient: 100, Burst: 100})
	requireControlPlaneWorks(ctx, t, a, b)

	require.NoError(t, a.typed.Delete(ctx, ac))
	require.NoError(t, b.typed.Delete(ctx, tp))
	waitFor(t, "both objects gone, through their controllers", func() bool {
		return apierrors.IsNotFound(a.typed.Get(ctx, client.ObjectKeyFromObject(ac), &peeringv1alpha1.AuthorizedConsumer{})) &&
			apierrors.IsNotFound(b.typed.Get(ctx, client.ObjectKeyFromObject(tp), &peeringv1alpha1.TrustedProvider{}))
	})
}

// peerFromGit serves a's enrolment endpoint as kubepact-enrolment serves
// it (its lookup, the certificate a's controller keeps, limits), commits
// a TrustedProvider on b and an AuthorizedConsumer on a, and waits until
// both are Ready.
func peerFromGit(ctx context.Context, t *testing.T, a, b peer, limits enrolhttp.Limits) (*httptest.Server, *peeringv1alpha1.AuthorizedConsumer, *peeringv1alpha1.TrustedProvider) {
	t.Helper()
	// The endpoint, as kubepact-enrolment serves it, with the certificate
	// the provider's controller keeps.
	var serving *corev1.Secret
	waitFor(t, "the enrolment endpoint's certificate", func() bool {
		s, err := a.admin.CoreV1().Secrets("kubepact-system").Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
		serving = s
		return err == nil
	})
	pair, err := tls.X509KeyPair(serving.Data[corev1.TLSCertKey], serving.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(enrolhttp.NewHandler(func(id string) *peeringv1alpha1.Grant {
		var ac peeringv1alpha1.AuthorizedConsumer
		if err := a.typed.Get(ctx, client.ObjectKey{Name: id}, &ac); err != nil ||
			!meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) || ac.Status.ObservedGeneration != ac.Generation {
			return nil
		}
		return ac.Status.Grant
	}, limits))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	record, err := kube.NewEnrolmentKeyRecord(a.admin, "kubepact-system").Get(ctx)
	require.NoError(t, err)
	recordPEM, err := keys.MarshalPublicKey(record)
	require.NoError(t, err)
	pin, err := enrol.CAPin(a.cluster.CA())
	require.NoError(t, err)

	tp := &peeringv1alpha1.TrustedProvider{
		ObjectMeta: metav1.ObjectMeta{Name: a.id},
		Spec: peeringv1alpha1.TrustedProviderSpec{ClusterID: a.id, Endpoint: srv.URL, CASHA256: pin,
			EnrolmentKeys: []string{string(recordPEM)}},
	}
	require.NoError(t, b.typed.Create(ctx, tp))
	t.Cleanup(func() { _ = b.typed.Delete(context.Background(), tp) })
	waitFor(t, "the TrustedProvider's request", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return tp.Status.Request != nil
	})
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: b.id},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: b.id, PublicKeys: []string{tp.Status.PublicKey},
			Request: *tp.Status.Request},
	}
	require.NoError(t, a.typed.Create(ctx, ac))
	t.Cleanup(func() { _ = a.typed.Delete(context.Background(), ac) })
	waitFor(t, "the AuthorizedConsumer granted", func() bool {
		require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	waitFor(t, "the TrustedProvider ready (it asks every 30 s)", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	return srv, ac, tp
}

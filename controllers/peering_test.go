package controllers_test

import (
	"context"
	"crypto"
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
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
)

// startEnrolmentEndpoint serves the provider's grants over TLS with the
// serving certificate its controller keeps in namespace, as the
// enrolment endpoint does, and returns its URL.
func startEnrolmentEndpoint(ctx context.Context, t *testing.T, namespace string) string {
	t.Helper()
	var serving *corev1.Secret
	eventually(t, "the enrolment endpoint's serving Secret", func() bool {
		serving = secret(ctx, t, providerEnv, namespace, kube.EnrolmentTLSSecretName)
		return serving != nil
	})
	pair, err := tls.X509KeyPair(serving.Data[corev1.TLSCertKey], serving.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	grants := func(consumerID string) *peeringv1alpha1.Grant {
		var ac peeringv1alpha1.AuthorizedConsumer
		if err := providerEnv.client.Get(ctx, client.ObjectKey{Name: consumerID}, &ac); err != nil {
			return nil
		}
		if !meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) || ac.Status.ObservedGeneration != ac.Generation {
			return nil
		}
		return ac.Status.Grant
	}
	srv := httptest.NewUnstartedServer(enrolhttp.NewHandler(grants, enrolhttp.Limits{PerClient: 100, Burst: 100}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

func condition(conds []metav1.Condition, kind string) *metav1.Condition {
	return meta.FindStatusCondition(conds, kind)
}

// TestPeeringFromGit peers two clusters with public material only: the
// consumer's TrustedProvider (the provider's enrolment key, its CA's pin,
// its endpoint), the provider's AuthorizedConsumer (the consumer's key
// and request, copied from the TrustedProvider's status). Until the
// provider commits, the consumer is "not authorized" and the provider
// writes nothing for it. Then the kubeconfig works, and deleting each
// object forgets its side.
func TestPeeringFromGit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	enrolNS := "kubepact-" + providerID
	_, err := providerEnv.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: enrolNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	startManager(t, providerEnv, func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID:          providerID,
			Endpoint:           provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			EnrolmentNamespace: enrolNS,
		})
	})
	startConsumer(t, consumerID, "liqo-"+consumerID)
	url := startEnrolmentEndpoint(ctx, t, enrolNS)

	record, err := kube.NewEnrolmentKeyRecord(providerEnv.core, enrolNS).Get(ctx)
	require.NoError(t, err)
	recordPEM := mustPEM(t, record)
	pin, err := enrol.CAPin(providerEnv.cluster.CA())
	require.NoError(t, err)

	tp := &peeringv1alpha1.TrustedProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerID},
		Spec: peeringv1alpha1.TrustedProviderSpec{ClusterID: providerID, Endpoint: url, CASHA256: pin,
			EnrolmentKeys: []string{recordPEM}},
	}
	require.NoError(t, consumerEnv.client.Create(ctx, tp))
	eventually(t, "the TrustedProvider not authorized, its request published", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		c := condition(tp.Status.Conditions, peeringv1alpha1.ConditionReconciling)
		return tp.Status.Request != nil && c != nil && c.Status == metav1.ConditionTrue && c.Reason == contract.ReasonNotAuthorized
	})
	require.Equal(t, "not authorized", condition(tp.Status.Conditions, peeringv1alpha1.ConditionReconciling).Message)
	_, err = providerEnv.core.CoreV1().Namespaces().Get(ctx, clusterid.TenantNamespace(consumerID), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a consumer not committed causes no write on the provider: %v", err)

	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: consumerID},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: tp.Status.ConsumerID, PublicKeys: []string{tp.Status.PublicKey},
			Request: *tp.Status.Request},
	}
	require.NoError(t, providerEnv.client.Create(ctx, ac))
	eventually(t, "the AuthorizedConsumer granted", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) && ac.Status.ObservedGeneration == ac.Generation
	})
	require.Contains(t, ac.Finalizers, peeringv1alpha1.Finalizer)
	// The consumer asks the endpoint again every 30 s while not
	// authorized.
	require.Eventually(t, func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	}, 45*time.Second, 100*time.Millisecond, "the TrustedProvider ready: %+v", tp.Status.Conditions)
	var id authv1beta1.Identity
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: identity.ControlPlaneName(providerID)}, &id))
	requireWorks(ctx, t, providerID, consumerID, &id)

	// spec.revoked revokes the consumer: its binding and Tenant go, a
	// revocation record refuses it, the kubeconfig no longer grants.
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(ac), ac))
	ac.Spec.Revoked = true
	require.NoError(t, providerEnv.client.Update(ctx, ac))
	eventually(t, "the AuthorizedConsumer revoked", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		c := condition(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
		return ac.Status.ObservedGeneration == ac.Generation && c != nil && c.Status == metav1.ConditionFalse && c.Reason == contract.ReasonConsumerRevoked
	})
	require.Nil(t, ac.Status.Grant, "a revoked consumer is served no grant")
	for _, kind := range []string{peeringv1alpha1.ConditionReconciling, peeringv1alpha1.ConditionStalled} {
		require.Equal(t, metav1.ConditionFalse, condition(ac.Status.Conditions, kind).Status, kind)
	}
	_, err = kube.NewRevocations(providerEnv.core).Get(ctx, consumerID)
	require.NoError(t, err, "a revocation record is in force")
	require.True(t, apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}, &authv1beta1.Tenant{})))

	// Deleting the AuthorizedConsumer forgets the consumer, then the
	// object goes.
	require.NoError(t, providerEnv.client.Delete(ctx, ac))
	eventually(t, "the AuthorizedConsumer gone", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKeyFromObject(ac), &peeringv1alpha1.AuthorizedConsumer{}))
	})
	eventually(t, "the Tenant gone", func() bool {
		return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}, &authv1beta1.Tenant{}))
	})
	// Deleting the TrustedProvider forgets the provider on the consumer.
	require.NoError(t, consumerEnv.client.Delete(ctx, tp))
	eventually(t, "the TrustedProvider and the Identity gone", func() bool {
		return apierrors.IsNotFound(consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(tp), &peeringv1alpha1.TrustedProvider{})) &&
			apierrors.IsNotFound(consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&id), &authv1beta1.Identity{}))
	})
}

func mustPEM(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	b, err := keys.MarshalPublicKey(pub)
	require.NoError(t, err)
	return string(b)
}

// TestCommitBindsTheHandshake: once an AuthorizedConsumer commits a
// consumer ID to another cluster key, liqoctl's declarative handshake for
// that ID is refused with a Warning NotCommitted, before its nonce is
// spent, and the Tenant gets no status.
func TestCommitBindsTheHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)

	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	own, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	r, err := enrol.NewRequest(nil, providerID, consumerID, other, own)
	require.NoError(t, err)
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: consumerID},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: consumerID, PublicKeys: []string{mustPEM(t, other.Public())}, Request: r.API()},
	}
	require.NoError(t, providerEnv.client.Create(ctx, ac))
	t.Cleanup(func() { _ = providerEnv.client.Delete(context.Background(), ac) })

	n := requestNonce(ctx, t, consumerID)
	sig := signNonce(ctx, t, providerID, n)
	tn := buildTenant(ctx, t, providerID, consumerID, keyNS, n, sig, false)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	waitEvent(ctx, t, providerEnv, tn.Namespace, tn.Name, corev1.EventTypeWarning, contract.ReasonNotCommitted)
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), tn))
	require.Nil(t, tn.Status.AuthParams, "no certificate handed out")
	s := secret(ctx, t, providerEnv, tn.Namespace, nonce.SecretName)
	e, err := nonce.FromSecret(s)
	require.NoError(t, err)
	require.Nil(t, e.Redemption, "the nonce is not spent")
}

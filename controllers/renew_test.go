package controllers_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/tenant"
)

// shortLifetime is the lifetime of the certificates in the renewal tests:
// the provider re-signs after 20 s, a Strict consumer renews after 21–27 s.
const shortLifetime = 30 * time.Second

// exactSigner signs at once, with the provider cluster's second client CA,
// certificates valid from a second ago for exactly the lifetime asked.
// The CSR API's signer and csr.LocalCA backdate NotBefore five minutes,
// which puts two thirds of any lifetime minutes away.
type exactSigner struct {
	ca  *x509.Certificate
	key crypto.Signer
}

func newExactSigner(t *testing.T) *exactSigner {
	t.Helper()
	caPEM, key := providerEnv.cluster.SecondClientCA()
	ca, err := csr.ParseCertificate(caPEM)
	require.NoError(t, err)
	return &exactSigner{ca: ca, key: key}
}

func (s *exactSigner) Sign(_ context.Context, r csr.Request) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               r.CSR.Subject(),
		NotBefore:             now.Add(-time.Second),
		NotAfter:              now.Add(r.Lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, r.CSR.PublicKey(), s.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// startRenewingProvider runs the provider's reconcilers issuing
// shortLifetime certificates.
func startRenewingProvider(t *testing.T, providerID string) (stop func()) {
	t.Helper()
	signer := newExactSigner(t)
	return startManager(t, providerEnv, func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID:           providerID,
			Endpoint:            provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			Signer:              signer,
			CertificateLifetime: shortLifetime,
		})
	})
}

// replicateRenew plays Liqo's CRD replicator for the consumer's Renew until
// the test ends: its spec to the consumer's tenant namespace on the
// provider, the provider's status back.
func replicateRenew(ctx context.Context, t *testing.T, providerID, consumerID string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	name := renewal.Name(providerID)
	local := client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: name}
	remote := client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: name}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			var mine, theirs authv1beta1.Renew
			if err := consumerEnv.client.Get(ctx, local, &mine); err != nil {
				continue
			}
			err := providerEnv.client.Get(ctx, remote, &theirs)
			switch {
			case apierrors.IsNotFound(err):
				theirs = authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: remote.Namespace, Labels: map[string]string{
					renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
				}}, Spec: mine.Spec}
				_ = providerEnv.client.Create(ctx, &theirs)
				continue
			case err != nil:
				continue
			case !equality.Semantic.DeepEqual(mine.Spec, theirs.Spec):
				theirs.Spec = mine.Spec
				_ = providerEnv.client.Update(ctx, &theirs)
				continue
			}
			if !equality.Semantic.DeepEqual(mine.Status, theirs.Status) {
				mine.Status = theirs.Status
				_ = consumerEnv.client.Status().Update(ctx, &mine)
			}
		}
	}()
}

// heldKubeconfig returns the kubeconfig of the consumer's Secret for id.
func heldKubeconfig(ctx context.Context, t *testing.T, providerID string) *kubeconfig.Config {
	t.Helper()
	s := secret(ctx, t, consumerEnv, clusterid.TenantNamespace(providerID), kubeconfig.SecretName(identity.ControlPlaneName(providerID)))
	require.NotNil(t, s)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	return cfg
}

func certOf(t *testing.T, cfg *kubeconfig.Config) *x509.Certificate {
	t.Helper()
	cert, err := cfg.ClientCertificate()
	require.NoError(t, err)
	return cert
}

// A provider re-signs by two thirds of the lifetime and answers a Renew
// written as Liqo's replicator writes it with the Tenant's new
// certificate; the kubepact consumer, given that status, switches its
// kubeconfig, which works on the provider.
func TestRenewalLiqoCompatible(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startRenewingProvider(t, providerID)
	startConsumer(t, consumerID, keyNS)
	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	first := certOf(t, heldKubeconfig(ctx, t, providerID))

	// The consumer keeps a Renew, as Liqo's does.
	var mine authv1beta1.Renew
	eventually(t, "the consumer's Renew", func() bool {
		return consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), &mine) == nil
	})
	require.Equal(t, authv1beta1.RenewSpec{ConsumerClusterID: consumerID, IdentityType: authv1beta1.ControlPlaneIdentityType}, mine.Spec)
	require.Equal(t, "true", mine.Labels[renewal.ReplicationLabel])
	require.Equal(t, providerID, mine.Labels[renewal.RemoteIDLabel])
	require.Equal(t, id.UID, metav1.GetControllerOf(&mine).UID)

	// Liqo's replicator, or kubepact's, writes it on the provider.
	theirs := &authv1beta1.Renew{
		ObjectMeta: metav1.ObjectMeta{Name: mine.Name, Namespace: tn.Namespace, Labels: map[string]string{
			renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
		}},
		Spec: mine.Spec,
	}
	createUnlessReplicated(ctx, t, theirs)
	eventually(t, "the Tenant's certificate in the Renew's status", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(theirs), theirs))
		return theirs.Status.AuthParams != nil && string(theirs.Status.AuthParams.SignedCRT) == string(tn.Status.AuthParams.SignedCRT)
	})

	// When it falls due, the provider re-signs, and the Renew carries it.
	var renewed []byte
	require.Eventually(t, func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(theirs), theirs))
		renewed = theirs.Status.AuthParams.SignedCRT
		return string(renewed) != string(tn.Status.AuthParams.SignedCRT)
	}, shortLifetime, 100*time.Millisecond, "a renewed certificate in the Renew's status")
	cert, err := csr.ParseCertificate(renewed)
	require.NoError(t, err)
	require.False(t, cert.NotBefore.Before(renewal.ProviderDeadline(first).Add(-2*time.Second)), "re-signed when due, not before")
	require.True(t, keys.Equal(first.PublicKey, cert.PublicKey), "Liqo's renewal keeps the key")
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), tn))
	require.Equal(t, renewed, tn.Status.AuthParams.SignedCRT, "the Tenant's status holds it too")

	// The replicator brings the status back; the kubeconfig follows.
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&mine), &mine))
	mine.Status = theirs.Status
	require.NoError(t, consumerEnv.client.Status().Update(ctx, &mine))
	eventually(t, "the renewed kubeconfig", func() bool {
		return certOf(t, heldKubeconfig(ctx, t, providerID)).Equal(cert)
	})
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), id))
	require.Equal(t, renewed, id.Spec.AuthParams.SignedCRT)
	requireWorks(ctx, t, providerID, consumerID, id)
	waitEvent(ctx, t, consumerEnv, id.Namespace, id.Name, "Normal", contract.ReasonIdentityRenewed)
	requireCleanup(ctx, t, consumerID, tn, id)
}

// A Strict consumer renews with a fresh key before its certificate
// expires: the new key is stored before its CSR leaves, the kubeconfig
// switches to a certificate the provider issued for it and proved online,
// it works on the provider, and the old key is gone.
func TestRenewalStrictFreshKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startRenewingProvider(t, providerID)
	startManager(t, consumerEnv, func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNS, Strict: true})
	})
	replicateRenew(ctx, t, providerID, consumerID)

	// liqoctl's steps, with the Tenant of a Strict kubepact consumer.
	typed, err := kube.NewClient(consumerEnv.cluster.AdminConfig(), nil)
	require.NoError(t, err)
	ring := kube.NewKeyring(consumerEnv.core, keyNS)
	c, err := consumer.New(consumerID, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(consumerEnv.core),
			Keys:       kube.NewKeyStore(consumerEnv.core, keyNS),
			Identities: kube.NewIdentityStore(typed),
			Secrets:    kube.NewSecretWriter(consumerEnv.core),
		},
		IdentityKeys: ring,
	}, &consumer.Options{Strict: true, KeyNamespace: keyNS})
	require.NoError(t, err)
	n := requestNonce(ctx, t, consumerID)
	tn, err := c.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	require.NoError(t, providerEnv.client.Create(ctx, tn))
	tn = waitTenantStatus(ctx, t, consumerID)
	id := applyIdentity(ctx, t, providerID, tn)
	requireWorks(ctx, t, providerID, consumerID, id)
	name := identity.ControlPlaneName(providerID)
	oldKey, err := ring.Get(ctx, name)
	require.NoError(t, err)
	first := certOf(t, heldKubeconfig(ctx, t, providerID))
	require.True(t, keys.Equal(oldKey.Key.Public(), first.PublicKey))

	var renewed *x509.Certificate
	require.Eventually(t, func() bool {
		renewed = certOf(t, heldKubeconfig(ctx, t, providerID))
		return !renewed.Equal(first)
	}, 2*shortLifetime, 100*time.Millisecond, "a renewed kubeconfig")
	life := first.NotAfter.Sub(first.NotBefore)
	require.False(t, renewed.NotBefore.Before(first.NotBefore.Add(life*7/10).Add(-2*time.Second)), "renewed at 70%% or later")
	require.False(t, keys.Equal(oldKey.Key.Public(), renewed.PublicKey), "a fresh key")
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), id))
	requireWorks(ctx, t, providerID, consumerID, id)
	eventually(t, "the old key gone", func() bool {
		cur, err := ring.Get(ctx, name)
		_, nerr := ring.Get(ctx, renewal.NextKeyName(name))
		return err == nil && keys.Equal(cur.Key.Public(), renewed.PublicKey) && errors.Is(nerr, keys.ErrNotFound)
	})
	// The old certificate expires; the new kubeconfig keeps working.
	time.Sleep(time.Until(first.NotAfter.Add(time.Second)))
	requireWorks(ctx, t, providerID, consumerID, id)
	requireCleanup(ctx, t, consumerID, tn, id)
}

// A Renew in a consumer's tenant namespace that names another consumer, or
// asks for a ResourceSlice identity, is refused with an Event and gets no
// status.
func TestRenewRefusedOnTheProvider(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	startRenewingProvider(t, providerID)
	ensureNamespace(ctx, t, providerEnv, consumerID)
	ns := clusterid.TenantNamespace(consumerID)
	for _, tt := range []struct {
		name string
		spec authv1beta1.RenewSpec
	}{
		{renewal.Name(providerID), authv1beta1.RenewSpec{ConsumerClusterID: "cl-someone-else", IdentityType: authv1beta1.ControlPlaneIdentityType}},
		{"controlplane-cl-elsewhere", authv1beta1.RenewSpec{ConsumerClusterID: consumerID, IdentityType: authv1beta1.ControlPlaneIdentityType}},
	} {
		// As a CRD replicator writes its copies: the provider's Renews.
		rn := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: ns, Labels: map[string]string{
			renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
		}}, Spec: tt.spec}
		require.NoError(t, providerEnv.client.Create(ctx, rn))
		waitEvent(ctx, t, providerEnv, ns, tt.name, "Warning", contract.ReasonInvalidRenew)
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(rn), rn))
		require.Nil(t, rn.Status.AuthParams)
		require.NoError(t, providerEnv.client.Delete(ctx, rn))
	}
	// The consumer's own Renew in the same namespace, where this cluster
	// also consumes that peer (liqo.io/replication, no liqo.io/replicated),
	// is not the provider's: no Event, no status.
	own := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: renewal.Name(consumerID), Namespace: ns, Labels: map[string]string{
		renewal.ReplicationLabel: "true", renewal.RemoteIDLabel: consumerID,
	}}, Spec: authv1beta1.RenewSpec{ConsumerClusterID: providerID, IdentityType: authv1beta1.ControlPlaneIdentityType}}
	require.NoError(t, providerEnv.client.Create(ctx, own))
	// A Renew the provider does take, created after it, is answered (with
	// an Event) first: then the consumer's own was passed over.
	mark := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-marker", Namespace: ns, Labels: map[string]string{
		renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
	}}, Spec: authv1beta1.RenewSpec{ConsumerClusterID: consumerID, IdentityType: authv1beta1.ControlPlaneIdentityType}}
	require.NoError(t, providerEnv.client.Create(ctx, mark))
	waitEvent(ctx, t, providerEnv, ns, mark.Name, "Warning", contract.ReasonInvalidRenew)
	time.Sleep(2 * time.Second)
	require.False(t, hasEvent(ctx, t, providerEnv, ns, own.Name, contract.ReasonInvalidRenew), "no Event on the consumer's own Renew")
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(own), own))
	require.Nil(t, own.Status.AuthParams)
}

// The same through the Kubernetes CSR API, with the shortest lifetime it
// issues (ten minutes, backdated five): a provider whose clock reaches the
// certificate's re-signing point re-signs through a new CertificateSigningRequest
// (the one that issued the first certificate still exists), and a
// Liqo-shaped Renew carries the new certificate, which works.
func TestRenewalThroughTheCSRAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	clk := clocktesting.NewFakeClock(time.Now())
	start := func() (stop func()) {
		return startManager(t, providerEnv, func(mgr manager.Manager) error {
			return controllers.SetupProvider(mgr, controllers.ProviderConfig{
				ClusterID:           providerID,
				Endpoint:            provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
				CertificateLifetime: 10 * time.Minute,
				Clock:               clk,
			})
		})
	}
	stop := start()
	startConsumer(t, consumerID, keyNS)
	tn, id := handshake(ctx, t, providerID, consumerID, keyNS, false)
	first, err := csr.ParseCertificate(tn.Status.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.Equal(t, 1, countCSRs(ctx, t, consumerID))

	var mine authv1beta1.Renew
	eventually(t, "the consumer's Renew", func() bool {
		return consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), &mine) == nil
	})
	theirs := &authv1beta1.Renew{
		ObjectMeta: metav1.ObjectMeta{Name: mine.Name, Namespace: tn.Namespace, Labels: map[string]string{
			renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID, clusterid.Label: consumerID,
		}},
		Spec: mine.Spec,
	}
	createUnlessReplicated(ctx, t, theirs)
	eventually(t, "the Tenant's certificate in the Renew's status", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(theirs), theirs))
		return theirs.Status.AuthParams != nil && string(theirs.Status.AuthParams.SignedCRT) == string(tn.Status.AuthParams.SignedCRT)
	})

	// Once due: a provider started now (or its requeue) re-signs.
	stop()
	clk.SetTime(renewal.ProviderDeadline(first).Add(time.Second))
	start()
	eventually(t, "a renewed certificate in the Renew's status", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(theirs), theirs))
		return string(theirs.Status.AuthParams.SignedCRT) != string(tn.Status.AuthParams.SignedCRT)
	})
	clk.SetTime(time.Now()) // back to the API server's time: the new certificate is not due
	renewed, err := csr.ParseCertificate(theirs.Status.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.True(t, keys.Equal(first.PublicKey, renewed.PublicKey))
	require.GreaterOrEqual(t, countCSRs(ctx, t, consumerID), 2, "a new CertificateSigningRequest")

	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&mine), &mine))
	mine.Status = theirs.Status
	require.NoError(t, consumerEnv.client.Status().Update(ctx, &mine))
	eventually(t, "the renewed kubeconfig", func() bool {
		return certOf(t, heldKubeconfig(ctx, t, providerID)).Equal(renewed)
	})
	requireWorks(ctx, t, providerID, consumerID, id)
	requireCleanup(ctx, t, consumerID, tn, id)
}

// Whoever writes the status of the consumer's Renew (the provider, through
// the replicator) cannot replace the working kubeconfig with a certificate
// for another key: the Identity reconciler's checks refuse it, with an
// Event, and the kubeconfig keeps working.
func TestRenewalRefusesForeignCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, startRenewingProvider) // the replicator carries the Renew
	providerID, consumerID, tn, id := peers.providerID, peers.consumerID, peers.tenant, peers.identity
	held := secret(ctx, t, consumerEnv, id.Namespace, id.Status.KubeconfigSecretRef.Name)

	var theirs authv1beta1.Renew
	eventually(t, "the consumer's Renew answered on the provider", func() bool {
		err := providerEnv.client.Get(ctx, client.ObjectKey{Namespace: tn.Namespace, Name: id.Name}, &theirs)
		return err == nil && theirs.Status.AuthParams != nil
	})
	// The provider turns hostile: its controllers stop, and it answers with
	// a certificate for another key, which the replicator carries back.
	peers.stopProvider()
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(nil, other, csr.ControlPlaneSubject(consumerID))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, other.Public()))
	require.NoError(t, err)
	foreign, err := newExactSigner(t).Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	params := tn.Status.AuthParams.DeepCopy()
	params.SignedCRT = foreign
	theirs.Status.AuthParams = params
	require.NoError(t, providerEnv.client.Status().Update(ctx, &theirs))

	waitEvent(ctx, t, consumerEnv, id.Namespace, id.Name, "Warning", contract.ReasonInvalidIdentity)
	list, err := consumerEnv.core.EventsV1().Events(id.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var reporters []string
	for _, ev := range list.Items {
		if ev.Regarding.Name == id.Name && ev.Reason == contract.ReasonInvalidIdentity {
			reporters = append(reporters, ev.ReportingController)
		}
	}
	require.Equal(t, []string{controllers.RenewalControllerName}, reporters, "refused by the renewal reconciler")
	now := secret(ctx, t, consumerEnv, id.Namespace, id.Status.KubeconfigSecretRef.Name)
	require.Equal(t, held.Data, now.Data, "the kubeconfig Secret is unchanged")
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), id))
	require.Equal(t, tn.Status.AuthParams.SignedCRT, id.Spec.AuthParams.SignedCRT)
	requireWorks(ctx, t, providerID, consumerID, id)
	startRenewingProvider(t, providerID) // for the cleanup
	requireCleanup(ctx, t, consumerID, tn, id)
}

// createUnlessReplicated creates the provider's copy of a consumer's Renew,
// as Liqo's replicator does, unless the consumer's replicator was first.
func createUnlessReplicated(ctx context.Context, t *testing.T, theirs *authv1beta1.Renew) {
	t.Helper()
	if err := providerEnv.client.Create(ctx, theirs); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// A Renew left over from an earlier Identity of the same name (still held
// by a finalizer, or not yet collected) is not taken for this Identity's:
// the renewal reconciler deletes it, exactly as read, and makes this
// Identity's Renew once it is gone, so no earlier identity's answer reaches
// the kubeconfig.
func TestLeftoverRenewIsReplaced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startProvider(t, providerID, tenant.Compatible, nil)
	startConsumer(t, consumerID, keyNS)
	_, id := handshake(ctx, t, providerID, consumerID, keyNS, false)

	var mine authv1beta1.Renew
	eventually(t, "the consumer's Renew", func() bool {
		return consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), &mine) == nil
	})

	// An earlier Identity controls it (one that still exists, so the
	// garbage collector leaves it), and a finalizer holds it.
	earlier := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-earlier", Namespace: id.Namespace}}
	require.NoError(t, consumerEnv.client.Create(ctx, earlier))
	const hold = "example.com/hold"
	eventually(t, "the Renew made the earlier Identity's", func() bool {
		if err := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), &mine); err != nil {
			return false
		}
		mine.OwnerReferences = []metav1.OwnerReference{{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind,
			Name: earlier.Name, UID: earlier.UID, Controller: ptr.To(true)}}
		controllerutil.AddFinalizer(&mine, hold)
		return consumerEnv.client.Update(ctx, &mine) == nil
	})
	// This Identity is reconciled again (as a new Identity of that name is).
	touch := func(value string) {
		eventually(t, "the Identity touched", func() bool {
			if err := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), id); err != nil {
				return false
			}
			if id.Annotations == nil {
				id.Annotations = map[string]string{}
			}
			id.Annotations["example.com/touch"] = value
			return consumerEnv.client.Update(ctx, id) == nil
		})
	}
	touch("1")

	eventually(t, "the left-over Renew deleted", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&mine), &mine))
		return mine.DeletionTimestamp != nil
	})
	eventually(t, "the test's finalizer removed", func() bool {
		var cur authv1beta1.Renew
		if err := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&mine), &cur); err != nil {
			return apierrors.IsNotFound(err)
		}
		controllerutil.RemoveFinalizer(&cur, hold)
		return consumerEnv.client.Update(ctx, &cur) == nil
	})
	eventually(t, "the left-over Renew gone", func() bool {
		var gone authv1beta1.Renew
		err := consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(&mine), &gone)
		return apierrors.IsNotFound(err) || err == nil && gone.UID != mine.UID
	})
	// Its deletion requeues the Identity of its owner's name; here that is
	// the stand-in, so this Identity is touched again.
	touch("2")
	eventually(t, "this Identity's Renew", func() bool {
		var now authv1beta1.Renew
		if consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(id), &now) != nil || now.DeletionTimestamp != nil {
			return false
		}
		owner := metav1.GetControllerOf(&now)
		return owner != nil && owner.UID == id.UID
	})
}

package kubepact_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/intercept"
)

// ourTenantFor returns the Tenant the pair's consumer sends for nonce n.
func ourTenantFor(t *testing.T, p *pair, n nonce.Nonce) *authv1beta1.Tenant {
	t.Helper()
	tn, err := p.consumer.Tenant(context.Background(), providerID, n, nil)
	require.NoError(t, err)
	return tn
}

// requireIdentityFor checks that id carries a certificate for tn's CSR key.
func requireIdentityFor(t *testing.T, id *authv1beta1.Identity, tn *authv1beta1.Tenant) {
	t.Helper()
	cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	require.NoError(t, err)
	req, err := csr.Check(tn.Spec.CSR, csr.Policy{CommonName: consumerID, Organization: csr.ControlPlaneOrganization})
	require.NoError(t, err)
	require.True(t, keys.Equal(req.PublicKey(), cert.PublicKey), "certificate for the Tenant's key")
}

// TestAcceptResumesAfterAFaultAtEveryCall fails each call of Accept in
// turn, before it runs and after it took effect, with each kind of failure,
// then retries Accept alone with the same Tenant: it must complete, with
// one of every object, and no other Tenant may use the nonce.
func TestAcceptResumesAfterAFaultAtEveryCall(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		probe := newFaultyPair(t, strict)
		n, err := probe.provider.IssueNonce(context.Background(), consumerID)
		require.NoError(t, err)
		tn := ourTenantFor(t, probe.pair, n)
		before := len(probe.faults.Calls())
		_, err = probe.provider.Accept(context.Background(), tn)
		require.NoError(t, err)
		eachFault(t, strict, probe.faults.Calls()[before:], acceptWithFault)
	}
}

func acceptWithFault(t *testing.T, strict bool, target intercept.Call, occurrence int, fault error) {
	ctx := context.Background()
	p := newFaultyPair(t, strict)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn := ourTenantFor(t, p.pair, n)
	fired := failOnce(p.faults, target, occurrence, fault)
	_, err = p.provider.Accept(ctx, tn)
	require.True(t, fired(), "the fault must have been injected")
	require.ErrorIs(t, err, fault)
	p.faults.Set(nil)

	// A stranger's Tenant over the same nonce gets nowhere, whether or not
	// the first attempt got as far as redeeming it.
	stranger, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n,
		&tenant.BuildOptions{ProviderID: providerID, Expiry: p.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	if e, gerr := p.providerCluster.Nonces.Get(ctx, consumerID); gerr == nil && e.Redemption != nil {
		_, err = p.provider.Accept(ctx, stranger)
		require.ErrorIs(t, err, nonce.ErrRedeemed)
	}

	// The same Tenant, retried alone, resumes.
	id, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err, "Accept of the same Tenant resumes")
	requireIdentityFor(t, id, tn)
	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)
	require.Len(t, p.providerCluster.RBAC.RoleBindings.Objects(""), 1)
	require.Len(t, p.providerCluster.RBAC.ClusterRoles.Objects(""), len(rbac.PeerRoles()), "the peer roles, and no other")
	require.Equal(t, 1, p.providerCluster.Certificates.Len())

	// Once it succeeded, the nonce stays bound to it.
	_, err = p.provider.Accept(ctx, stranger)
	require.ErrorIs(t, err, nonce.ErrRedeemed)
}

// A Tenant accepted once is served again only through its own redemption:
// a Tenant written out of band with a status it was never given gets
// nothing, and what is served is rebuilt from a checked certificate.
func TestAcceptTrustsNoStoredState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Tenant written out of band under an old status", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)

		// Someone with write access to Tenants (or "apply tenant") puts
		// another key's Tenant in place; the status stays.
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		other, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
		require.NoError(t, err)
		planted := stored.DeepCopy()
		planted.Spec = other.Spec
		planted.Status = authv1beta1.TenantStatus{}
		_, err = p.providerCluster.Tenants.Apply(ctx, planted)
		require.NoError(t, err)
		afterPlant, err := p.providerCluster.Tenants.Get(ctx, planted.Namespace, planted.Name)
		require.NoError(t, err)
		require.NotNil(t, afterPlant.Status.AuthParams, "the old status is kept")

		// The nonce issued was the one kept for the consumer's verified key:
		// other, of another key, cannot use it, and the old status is not
		// handed out.
		signed := p.providerCluster.Signer.Signed()
		id, err := p.provider.Accept(ctx, other)
		require.ErrorIs(t, err, nonce.ErrRedeemed)
		require.Nil(t, id)
		require.Equal(t, signed, p.providerCluster.Signer.Signed())

		// Had the nonce been fresh, other would be judged on its own.
		require.NoError(t, p.provider.Revoke(ctx, consumerID))
		require.NoError(t, p.provider.Readmit(ctx, consumerID))
		n, err = p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		other, err = tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
		require.NoError(t, err)
		id, err = p.provider.Accept(ctx, other)
		require.NoError(t, err)
		requireIdentityFor(t, id, other)
	})

	t.Run("a stored Tenant whose nonce was redeemed by another", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		tn := ourTenantFor(t, p, n)
		_, err = p.provider.Accept(ctx, tn)
		require.NoError(t, err)

		// The same spec under a stored status: before, Accept re-served
		// any stored Tenant whose spec matched. Now a Tenant redeemed by
		// another digest is refused.
		other, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil)
		require.NoError(t, err)
		planted := tn.DeepCopy()
		planted.Spec = other.Spec
		planted.Status = authv1beta1.TenantStatus{TenantNamespace: clusterid.TenantNamespace(consumerID),
			AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("stale"), APIServer: "https://provider.example:6443"}}
		_, err = p.providerCluster.Tenants.Apply(ctx, planted)
		require.NoError(t, err)
		_, err = p.provider.Accept(ctx, other)
		require.ErrorIs(t, err, nonce.ErrRedeemed)
	})

	t.Run("cached certificate for another key", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		tn := ourTenantFor(t, p, n)
		_, err = p.provider.Accept(ctx, tn)
		require.NoError(t, err)

		// Someone who may write the cache Secret swaps in a certificate,
		// from the same CA, for a key of their own, beside the same CSR.
		mallory := testkeys.Generate(t, keys.Ed25519)
		req, err := csr.Create(nil, mallory, csr.ControlPlaneSubject(consumerID))
		require.NoError(t, err)
		checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, mallory.Public()))
		require.NoError(t, err)
		forged, err := p.providerCluster.Signer.CA.Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
		require.NoError(t, err)
		key := csr.CacheKey{ConsumerID: consumerID}
		entry, err := p.providerCluster.Certificates.Get(ctx, key)
		require.NoError(t, err)
		require.NoError(t, p.providerCluster.Certificates.Put(ctx, key, csr.CacheEntry{CSR: entry.CSR, Certificate: forged}))

		id, err := p.provider.Accept(ctx, tn)
		require.NoError(t, err)
		requireIdentityFor(t, id, tn)
	})

	t.Run("cached certificate expired", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		tn := ourTenantFor(t, p, n)
		first, err := p.provider.Accept(ctx, tn)
		require.NoError(t, err)
		p.clock.Step(provider.DefaultCertificateLifetime + time.Hour)
		again, err := p.provider.Accept(ctx, tn)
		require.NoError(t, err)
		require.NotEqual(t, first.Spec.AuthParams.SignedCRT, again.Spec.AuthParams.SignedCRT)
		cert, err := csr.ParseCertificate(again.Spec.AuthParams.SignedCRT)
		require.NoError(t, err)
		require.True(t, cert.NotAfter.After(p.clock.Now()), "an expired certificate is never served")
	})

	t.Run("policy changed to Strict since", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		liqo, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n, nil) // no transcript, as Liqo sends
		require.NoError(t, err)
		_, err = p.provider.Accept(ctx, liqo)
		require.NoError(t, err)

		strict, err := provider.New(providerID, p.providerCluster.Endpoint(), p.providerCluster.ProviderPorts(),
			&provider.Options{Clock: p.clock, Policy: tenant.Strict})
		require.NoError(t, err)
		_, err = strict.Accept(ctx, liqo)
		require.ErrorIs(t, err, tenant.ErrTranscriptMissing)
	})
}

// The stored Tenant keeps only what the protocol defines: nothing the
// other cluster put in its metadata.
func TestAcceptStoresNoPeerMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn := ourTenantFor(t, p, n)
	controller := true
	tn.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "0000-missing", Controller: &controller}}
	tn.Finalizers = []string{"peer.example/hold"}
	tn.Labels["peer.example/label"] = "x"
	tn.Annotations["peer.example/annotation"] = "y"
	tn.UID, tn.ResourceVersion, tn.Generation = "peer-uid", "42", 7

	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	require.Empty(t, stored.OwnerReferences)
	require.Equal(t, []string{tenant.Finalizer}, stored.Finalizers)
	require.Equal(t, map[string]string{clusterid.Label: consumerID}, stored.Labels)
	require.Equal(t, tenant.TranscriptAnnotations(tn), stored.Annotations)
	require.NotEqual(t, "peer-uid", string(stored.UID))
}

// With a key of small order, a Tenant "signed" by nobody verifies
// everywhere unless the key is refused. The provider refuses it before
// redeeming the nonce, under both policies, and writes nothing.
func TestAcceptRefusesKeylessForgery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	points, _ := weakkeys.SmallOrder()
	for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
		for i, pub := range points {
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/point%d/raw=%t", policy, i, raw), func(t *testing.T) {
					t.Parallel()
					p := newModePair(t, policy, false)
					_, err := p.provider.IssueNonce(ctx, "cl-victim")
					require.NoError(t, err)
					before := p.writes()
					// The attacker never sees the nonce.
					forged, err := weakkeys.ForgedTenant("cl-victim", providerID, pub, nonce.Nonce{}, p.clock.Now().Add(time.Minute))
					require.NoError(t, err)
					if raw {
						forged = weakkeys.RawForm(forged, pub)
					}
					id, err := p.provider.Accept(ctx, forged)
					require.Nil(t, id)
					require.ErrorIs(t, err, keys.ErrWeakKey)
					var fe *tenant.FieldError
					require.ErrorAs(t, err, &fe)
					require.Equal(t, "spec.publicKey", fe.Field)
					require.Equal(t, before, p.writes(), "nothing written")
					require.Zero(t, p.providerCluster.Signer.Signed())
					e, err := p.providerCluster.Nonces.Get(ctx, "cl-victim")
					require.NoError(t, err)
					require.Nil(t, e.Redemption, "refused before the nonce is redeemed: the victim can still use it")
				})
			}
		}
	}
}

// A consumer ID that names a user who already holds permissions would
// inherit them through the issued certificate: Accept refuses it before
// signing or binding anything.
func TestAcceptRefusesAPrivilegedConsumerID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	require.NoError(t, p.providerCluster.RBAC.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}))
	require.NoError(t, p.providerCluster.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-made-this-earlier"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
	}))
	bindings := len(p.providerCluster.RBAC.RoleBindings.Objects(""))

	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	var pe *rbac.PrivilegedError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, consumerID, pe.User)
	require.Equal(t, rbac.PrivilegeProbes()[0], pe.Probe)
	var se *step.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, step.CertificateIssued, se.Step)
	require.Zero(t, p.providerCluster.Signer.Signed(), "nothing signed")
	require.Len(t, p.providerCluster.RBAC.RoleBindings.Objects(""), bindings, "nothing bound")
	require.Empty(t, p.providerCluster.Tenants.Objects(""))
}

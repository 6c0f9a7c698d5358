package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

// plant puts, under name in the consumer's keyring, a key made by someone
// who may only create Secrets in the key namespace: no attestation.
func plant(t *testing.T, p *pair, name string) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, p.consumerCluster.IdentityKeys.Create(context.Background(), name, keys.Stored{Key: k}))
	return k
}

// requirePlantedKept checks that the planted key is still there, as planted:
// never used, never replaced, for an administrator to judge.
func requirePlantedKept(t *testing.T, p *pair, name string, planted *keys.PrivateKey) {
	t.Helper()
	s, err := p.consumerCluster.IdentityKeys.Get(context.Background(), name)
	require.NoError(t, err)
	require.True(t, keys.Equal(planted.Public(), s.Key.Public()))
	require.Empty(t, s.Attestation)
}

// TestPlantedControlPlaneKeyIsNeverCertified: a key planted under the name
// of the ControlPlane identity's own key, before the handshake, stops
// Authenticate with keys.ErrUnattested on the consumer, before any Tenant
// leaves: the provider stores no Tenant and signs nothing for it.
func TestPlantedControlPlaneKeyIsNeverCertified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "own key asked", true: "strict"}[strict], func(t *testing.T) {
			t.Parallel()
			p := newModePair(t, tenant.Compatible, strict)
			name := identity.ControlPlaneName(providerID)
			planted := plant(t, p, name)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.ErrorIs(t, err, keys.ErrUnattested)
			var failed *step.Error
			require.ErrorAs(t, err, &failed)
			require.Equal(t, step.TenantGenerated, failed.Step)
			require.Empty(t, p.providerCluster.Tenants.Objects(""), "no Tenant reached the provider")
			require.Zero(t, p.providerCluster.Signer.Signed(), "nothing was signed")
			require.Empty(t, p.consumerCluster.Identities.Objects(""))
			requirePlantedKept(t, p, name, planted)

			// The administrator removes it: the handshake then completes
			// with a key the consumer made.
			require.NoError(t, p.consumerCluster.IdentityKeys.Delete(ctx, name))
			done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			cert, err := done.Kubeconfig.ClientCertificate()
			require.NoError(t, err)
			require.False(t, keys.Equal(planted.Public(), cert.PublicKey))
		})
	}
}

// TestPlantedKeySwitchesNothingOn: a key merely existing under the
// ControlPlane key's name turns no own-key mode on. A Tenant not asked for
// an own key is for the cluster key, as Liqo's provider needs, and the
// consumer's slices toward that provider are for the cluster key too.
func TestPlantedKeySwitchesNothingOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	name := identity.ControlPlaneName(providerID)
	planted := plant(t, p, name)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	cluster := clusterKey(t, p)
	_, err = csr.Check(tn.Spec.CSR, csr.ControlPlanePolicy(consumerID, cluster.Public()))
	require.NoError(t, err, "the CSR is for the cluster key")

	// Accepted and applied as a Liqo consumer's: the slices follow.
	id, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	_, err = p.consumer.Apply(ctx, providerID, id, nil)
	require.NoError(t, err)
	s, err := p.consumer.Slice(ctx, providerID, "slice-a", nil)
	require.NoError(t, err)
	_, err = csr.Check(s.Spec.CSR, csr.ResourceSlicePolicy(consumerID, "slice-a", cluster.Public()))
	require.NoError(t, err, "the slice's CSR is for the cluster key")
	_, err = p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(providerID, "slice-a"))
	require.ErrorIs(t, err, keys.ErrNotFound, "no slice key made")
	requirePlantedKept(t, p, name, planted)
}

// TestPlantedNextKeyStopsRenewal: a key planted under the name of the key a
// Strict consumer's renewal moves to stops the renewal with
// keys.ErrUnattested at its deadline: no CSR for it leaves.
func TestPlantedNextKeyStopsRenewal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	require.NoError(t, err)
	next := renewal.NextKeyName(identity.ControlPlaneName(providerID))
	planted := plant(t, p, next)
	p.clock.SetTime(req.At)
	_, err = p.consumer.RenewRequest(ctx, providerID, req.Renew)
	require.ErrorIs(t, err, keys.ErrUnattested)
	requirePlantedKept(t, p, next, planted)
}

// TestPlantedSliceKeyIsNeverCertified: a key planted under a slice key's
// name stops Slice with keys.ErrUnattested: no slice is built for it.
func TestPlantedSliceKeyIsNeverCertified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	name := identity.ResourceSliceKeyName(providerID, "slice-a")
	planted := plant(t, p, name)
	_, err = p.consumer.Slice(ctx, providerID, "slice-a", nil)
	require.ErrorIs(t, err, keys.ErrUnattested)
	requirePlantedKept(t, p, name, planted)
}

// TestSliceKeysPerProvider: slices of one name toward two providers get two
// keys; forgetting one leaves the other's key and identity working.
func TestSliceKeysPerProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	const otherID = "cl-provider-b"
	oc := anotherProvider(t, p, otherID)
	_, err = kubepact.Authenticate(ctx, p.consumer, oc, nil)
	require.NoError(t, err)

	a, err := p.consumer.Slice(ctx, providerID, "slice-a", nil)
	require.NoError(t, err)
	b, err := p.consumer.Slice(ctx, otherID, "slice-a", nil)
	require.NoError(t, err)
	ka, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(providerID, "slice-a"))
	require.NoError(t, err)
	kb, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(otherID, "slice-a"))
	require.NoError(t, err)
	require.False(t, keys.Equal(ka.Key.Public(), kb.Key.Public()), "one key per provider")
	_, err = csr.Check(a.Spec.CSR, csr.ResourceSlicePolicy(consumerID, "slice-a", ka.Key.Public()))
	require.NoError(t, err)
	_, err = csr.Check(b.Spec.CSR, csr.ResourceSlicePolicy(consumerID, "slice-a", kb.Key.Public()))
	require.NoError(t, err)

	require.NoError(t, p.consumer.ForgetSlice(ctx, providerID, "slice-a"))
	_, err = p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(providerID, "slice-a"))
	require.ErrorIs(t, err, keys.ErrNotFound)
	kept, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(otherID, "slice-a"))
	require.NoError(t, err)
	require.True(t, keys.Equal(kb.Key.Public(), kept.Key.Public()), "the other provider's slice keeps its key")
}

// anotherProvider returns a second provider, id, that p's consumer reaches.
func anotherProvider(t *testing.T, p *pair, id string) *kubepact.Provider {
	t.Helper()
	pc, err := memory.NewCluster(id, &memory.ClusterOptions{Clock: p.clock, Server: "https://" + id + ".example:6443"})
	require.NoError(t, err)
	require.NoError(t, p.consumerCluster.Reach(pc))
	prov, err := provider.New(id, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: p.clock, SliceNamespaces: offloaded})
	require.NoError(t, err)
	return prov
}

// TestAdoptKeysOnUpgrade: keys kept before keys were attested, as an
// earlier version kept them, are attested once when they back a live
// Identity (the ControlPlane key in place, a slice key moved to the name
// that carries its provider), and used again; a key that backs nothing
// stays unattested and unused. A consumer that is not Strict then renews
// its adopted key to a fresh one at the renewal deadline.
func TestAdoptKeysOnUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	// The ControlPlane identity has a key of its own, so the slice does.
	localSlice, sliceDone := sliceRoundTrip(t, p, "slice-a")
	ring := p.consumerCluster.IdentityKeys
	cpName := identity.ControlPlaneName(providerID)
	cp, err := ring.Get(ctx, cpName)
	require.NoError(t, err)
	sliceName := identity.ResourceSliceKeyName(providerID, "slice-a")
	sk, err := ring.Get(ctx, sliceName)
	require.NoError(t, err)
	require.NotNil(t, sliceDone)

	// As an earlier version kept them: no attestation, the slice key
	// under the identity's name; and a key planted beside them.
	require.NoError(t, ring.Delete(ctx, cpName))
	require.NoError(t, ring.Create(ctx, cpName, keys.Stored{Key: cp.Key}))
	require.NoError(t, ring.Delete(ctx, sliceName))
	legacy := identity.ResourceSliceName("slice-a")
	require.NoError(t, ring.Create(ctx, legacy, keys.Stored{Key: sk.Key}))
	stray := identity.ResourceSliceKeyName(providerID, "slice-b")
	planted := plant(t, p, stray)

	var ids []authv1beta1.Identity
	for _, id := range p.consumerCluster.Identities.Objects(clusterid.TenantNamespace(providerID)) {
		ids = append(ids, *id)
	}
	var cpID *authv1beta1.Identity
	for i := range ids {
		if ids[i].Name == cpName {
			cpID = &ids[i]
		}
	}
	require.NotNil(t, cpID)
	held := consumer.HeldIdentities(ids)
	require.Len(t, held, 2)
	require.NoError(t, p.consumer.AdoptKeys(ctx, held))
	require.NoError(t, p.consumer.AdoptKeys(ctx, held), "idempotent")

	_, err = ring.Get(ctx, legacy)
	require.ErrorIs(t, err, keys.ErrNotFound, "the slice key left its old name")
	moved, err := ring.Get(ctx, sliceName)
	require.NoError(t, err)
	require.True(t, keys.Equal(sk.Key.Public(), moved.Key.Public()))
	requirePlantedKept(t, p, stray, planted)

	// Both identities apply again with their adopted keys.
	_, err = p.consumer.Apply(ctx, providerID, cpID, nil)
	require.NoError(t, err)
	_, err = p.consumer.ApplySliceIdentity(ctx, localSlice, nil)
	require.NoError(t, err)

	// The adopted ControlPlane key is renewed to a fresh one.
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	require.NoError(t, err)
	require.False(t, req.At.IsZero(), "an adopted key is renewed as a Strict consumer renews")
	p.clock.SetTime(req.At)
	req, err = p.consumer.RenewRequest(ctx, providerID, req.Renew)
	require.NoError(t, err)
	pub, err := keys.ParsePublicKey(req.Renew.Spec.PublicKey)
	require.NoError(t, err)
	require.False(t, keys.Equal(cp.Key.Public(), pub), "a fresh key")
	next, err := ring.Get(ctx, renewal.NextKeyName(cpName))
	require.NoError(t, err)
	require.True(t, keys.Equal(next.Key.Public(), pub))
}

// TestTenantNeverAsksACertificateForAnAdoptedKey: a handshake run again
// after an upgrade asks its certificate for a fresh key, not for the key
// only adopted.
func TestTenantNeverAsksACertificateForAnAdoptedKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	ring := p.consumerCluster.IdentityKeys
	cpName := identity.ControlPlaneName(providerID)
	cp, err := ring.Get(ctx, cpName)
	require.NoError(t, err)
	require.NoError(t, ring.Delete(ctx, cpName))
	require.NoError(t, ring.Create(ctx, cpName, keys.Stored{Key: cp.Key}))
	cpID, ok := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), cpName)
	require.True(t, ok)
	require.NoError(t, p.consumer.AdoptKeys(ctx, consumer.HeldIdentities([]authv1beta1.Identity{*cpID})))

	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, &consumer.TenantOptions{OwnKey: true})
	require.NoError(t, err)
	v, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict, Now: p.clock.Now()})
	require.NoError(t, err)
	require.False(t, keys.Equal(cp.Key.Public(), v.CSR.PublicKey()), "the CSR is for a fresh key")
}

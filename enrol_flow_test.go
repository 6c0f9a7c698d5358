package kubepact_test

import (
	"context"
	"crypto"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// authorizedConsumer is the AuthorizedConsumer a provider's administrator
// commits for r, with the cluster keys pubs.
func authorizedConsumer(t *testing.T, r *enrol.Request, pubs ...crypto.PublicKey) *peeringv1alpha1.AuthorizedConsumer {
	t.Helper()
	var pems []string
	for _, pub := range pubs {
		b, err := keys.MarshalPublicKey(pub)
		require.NoError(t, err)
		pems = append(pems, string(b))
	}
	return &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: r.ConsumerID},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: r.ConsumerID, PublicKeys: pems, Request: r.API()},
	}
}

// commit makes the consumer's enrolment request and commits it, with the
// consumer's cluster key, on the provider.
func (p *pair) commit(t *testing.T) *enrol.Request {
	t.Helper()
	return p.commitPolicy(t, nil)
}

// commitPolicy is commit, the AuthorizedConsumer under policy.
func (p *pair) commitPolicy(t *testing.T, policy *peeringv1alpha1.ConsumerPolicy) *enrol.Request {
	t.Helper()
	ctx := context.Background()
	r, err := p.consumer.EnrolmentRequest(ctx, providerID, nil)
	require.NoError(t, err)
	pub, err := p.consumer.PublicKey(ctx)
	require.NoError(t, err)
	ac := authorizedConsumer(t, r, pub)
	ac.Spec.Policy = policy
	p.providerCluster.Commitments.Commit(ac)
	return r
}

// enrolled runs the provider's side of a committed enrolment as its
// controller does: Enrol records the Tenant, Accept (the Tenant
// reconciler) accepts it, Enrol returns the Identity.
func (p *pair) enrolled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	_, err := p.provider.Enrol(ctx, consumerID)
	require.ErrorIs(t, err, provider.ErrEnrolling)
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, stored)
	require.NoError(t, err)
}

// applyGrant runs the provider's side of the committed request r (Enrol,
// Accept, Enrol) and applies its grant on the consumer, as the
// controllers do; it returns the certificate applied.
func (p *pair) applyGrant(t *testing.T, r *enrol.Request) []byte {
	t.Helper()
	ctx := context.Background()
	p.enrolled(t)
	id, err := p.provider.Enrol(ctx, consumerID)
	require.NoError(t, err)
	enrolment, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	g, err := enrol.NewGrant(nil, enrolment, r, id)
	require.NoError(t, err)
	pin, err := enrol.CAPin(p.providerCluster.Signer.CA.Certificate())
	require.NoError(t, err)
	got, err := enrol.VerifyGrant(g, enrol.Trust{ProviderID: providerID, ConsumerID: consumerID,
		EnrolmentKeys: []crypto.PublicKey{enrolment.Public()}, CASHA256: pin, Request: r})
	require.NoError(t, err)
	done, err := p.consumer.ApplyGrant(ctx, providerID, got)
	require.NoError(t, err)
	return done.Identity.Spec.AuthParams.SignedCRT
}

// TestEnrolmentFromGit is the whole exchange in memory: the consumer's
// request, committed on the provider; the Tenant recorded and accepted
// with no nonce; the grant signed with the enrolment key and verified by
// the consumer against what it committed; its kubeconfig written.
func TestEnrolmentFromGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	r := p.commit(t)

	// Made again, the request is the one committed: the keys are kept.
	again, err := p.consumer.EnrolmentRequest(ctx, providerID, nil)
	require.NoError(t, err)
	require.Equal(t, r, again)
	held := r.API()
	kept, err := p.consumer.EnrolmentRequest(ctx, providerID, &held)
	require.NoError(t, err)
	require.Equal(t, r, kept)

	p.applyGrant(t, r)
	_, err = p.providerCluster.Nonces.Get(ctx, consumerID)
	require.ErrorIs(t, err, nonce.ErrNotFound, "no nonce is issued, none redeemed")

	// A restart finds the enrolled Tenant unchanged: no request, no write.
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	_, ok := p.provider.Unchanged(ctx, stored, cachedRecords(p.providerCluster))
	require.True(t, ok)
}

// TestCommitBindsEveryFlow: once an AuthorizedConsumer commits a consumer
// ID, a handshake of another key for that ID is refused before its nonce
// is spent, whatever flow sends it; the committed key still may use the
// handshake.
func TestCommitBindsEveryFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("another key", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		stranger, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		r, err := enrol.NewRequest(nil, providerID, consumerID, stranger, mustKey(t))
		require.NoError(t, err)
		p.providerCluster.Commitments.Commit(authorizedConsumer(t, r, stranger.Public()))

		_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.ErrorIs(t, err, enrol.ErrNotCommitted)
		e, err := p.providerCluster.Nonces.Get(ctx, consumerID)
		require.NoError(t, err)
		require.Nil(t, e.Redemption, "the nonce is not spent")
		_, err = p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.ErrorIs(t, err, tenant.ErrNotFound)
	})
	t.Run("the committed key", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		p.commit(t)
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
	})
	t.Run("a commitment that does not parse", func(t *testing.T) {
		t.Parallel()
		p := newPair(t)
		r := p.commit(t)
		bad := authorizedConsumer(t, r, mustKey(t).Public())
		bad.Spec.PublicKeys = []string{"not a key"}
		p.providerCluster.Commitments.Commit(bad)
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.ErrorIs(t, err, enrol.ErrMalformed)
	})
}

// TestEnrolRefuses: what Enrol refuses, with the error it must return,
// and that a refusal records nothing.
func TestEnrolRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]struct {
		commit func(t *testing.T, p *pair)
		want   error
	}{
		"nothing committed": {commit: func(*testing.T, *pair) {}, want: provider.ErrNoCommitment},
		"signed by a key not committed": {commit: func(t *testing.T, p *pair) {
			r, err := p.consumer.EnrolmentRequest(ctx, providerID, nil)
			require.NoError(t, err)
			p.providerCluster.Commitments.Commit(authorizedConsumer(t, r, mustKey(t).Public()))
		}, want: enrol.ErrBadRequest},
		"made for another provider": {commit: func(t *testing.T, p *pair) {
			r, err := p.consumer.EnrolmentRequest(ctx, "cl-elsewhere", nil)
			require.NoError(t, err)
			pub, err := p.consumer.PublicKey(ctx)
			require.NoError(t, err)
			p.providerCluster.Commitments.Commit(authorizedConsumer(t, r, pub))
		}, want: enrol.ErrBadRequest},
		"for another consumer ID": {commit: func(t *testing.T, p *pair) {
			r, err := p.consumer.EnrolmentRequest(ctx, providerID, nil)
			require.NoError(t, err)
			pub, err := p.consumer.PublicKey(ctx)
			require.NoError(t, err)
			ac := authorizedConsumer(t, r, pub)
			ac.Name, ac.Spec.ClusterID = "cl-other", "cl-other"
			p.providerCluster.Commitments.Commit(ac)
		}, want: enrol.ErrBadRequest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			tc.commit(t, p)
			id := consumerID
			if name == "for another consumer ID" {
				id = "cl-other"
			}
			before := p.writes()
			_, err := p.provider.Enrol(ctx, id)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, before, p.writes(), "a refusal writes nothing")
		})
	}
}

func mustKey(t *testing.T) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	return k
}

// TestCommittedPolicyBoundsSlices: an AuthorizedConsumer's policy bounds
// its consumer's ResourceSlices where it is tighter than the provider's
// bounds, and leaves them alone where it is looser.
func TestCommittedPolicyBoundsSlices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, prov := boundedPair(t, resourceslice.Bounds{MaxSlices: 3})
	r, err := p.consumer.EnrolmentRequest(ctx, providerID, nil)
	require.NoError(t, err)
	pub, err := p.consumer.PublicKey(ctx)
	require.NoError(t, err)
	ac := authorizedConsumer(t, r, pub)
	one := int32(1)
	ac.Spec.Policy = &peeringv1alpha1.ConsumerPolicy{MaxResourceSlices: &one}
	p.providerCluster.Commitments.Commit(ac)

	acceptNew(t, p, prov, "slice-1")
	second := replicate(t, p, createSlice(t, p, "slice-2"))
	b := requireBound(t, p, prov, second, resourceslice.ErrSliceLimit)
	require.Equal(t, 1, b.Limit, "the policy's bound, tighter than the provider's 3")

	// Looser than the provider's, the policy changes nothing: its 3 hold.
	ten := int32(10)
	ac.Spec.Policy.MaxResourceSlices = &ten
	p.providerCluster.Commitments.Commit(ac)
	prov = restartedProvider(t, p, resourceslice.Bounds{MaxSlices: 3})
	acceptNew(t, p, prov, "slice-2")
	acceptNew(t, p, prov, "slice-3")
	fourth := replicate(t, p, createSlice(t, p, "slice-4"))
	b = requireBound(t, p, prov, fourth, resourceslice.ErrSliceLimit)
	require.Equal(t, 3, b.Limit)
}

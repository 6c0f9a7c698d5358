package enrol_test

import (
	"crypto"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/cryptobyte"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

const (
	providerID = "provider-1"
	consumerID = "consumer-1"
)

// consumerSide is a consumer's keys and its request to providerID.
type consumerSide struct {
	cluster, identity *keys.PrivateKey
	request           *enrol.Request
}

func generate(t testing.TB) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	return k
}

func newConsumer(t testing.TB) consumerSide {
	t.Helper()
	c := consumerSide{cluster: generate(t), identity: generate(t)}
	var err error
	c.request, err = enrol.NewRequest(nil, providerID, consumerID, c.cluster, c.identity)
	require.NoError(t, err)
	return c
}

func publicPEM(t testing.TB, k crypto.Signer) string {
	t.Helper()
	b, err := keys.MarshalPublicKey(k.Public())
	require.NoError(t, err)
	return string(b)
}

// authorizedConsumer is the AuthorizedConsumer a provider's administrator
// commits for r, listing committed.
func authorizedConsumer(t testing.TB, r *enrol.Request, committed ...crypto.Signer) *peeringv1alpha1.AuthorizedConsumer {
	t.Helper()
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: r.ConsumerID},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: r.ConsumerID, Request: r.API()},
	}
	for _, k := range committed {
		ac.Spec.PublicKeys = append(ac.Spec.PublicKeys, publicPEM(t, k))
	}
	return ac
}

func commitment(t testing.TB, r *enrol.Request, committed ...crypto.Signer) *enrol.Commitment {
	t.Helper()
	c, err := enrol.FromAuthorizedConsumer(authorizedConsumer(t, r, committed...))
	require.NoError(t, err)
	return c
}

func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	assert.Equal(t, providerID, c.request.ProviderID)
	assert.Equal(t, consumerID, c.request.ConsumerID)

	v, err := commitment(t, c.request, c.cluster).Verify(providerID)
	require.NoError(t, err)
	assert.Equal(t, consumerID, v.ClusterID)
	assert.True(t, keys.Equal(c.cluster.Public(), v.PublicKey), "the signer is the cluster key")
	assert.True(t, keys.Equal(c.identity.Public(), v.CSR.PublicKey()), "the CSR is for the identity key")
}

// TestRequestSignedByEitherCommittedKey: while a rotation overlaps, a
// request signed by either committed key verifies, and Verify names the
// one that signed.
func TestRequestSignedByEitherCommittedKey(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	other := generate(t)
	v, err := commitment(t, c.request, other, c.cluster).Verify(providerID)
	require.NoError(t, err)
	assert.True(t, keys.Equal(c.cluster.Public(), v.PublicKey))
}

func TestRequestIsDeterministic(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	again, err := enrol.NewRequest(nil, providerID, consumerID, c.cluster, c.identity)
	require.NoError(t, err)
	assert.Equal(t, c.request, again, "the same Ed25519 keys make the same request")

	other, err := enrol.NewRequest(nil, "provider-2", consumerID, c.cluster, c.identity)
	require.NoError(t, err)
	assert.NotEqual(t, c.request.Signature, other.Signature, "another provider, another signature")
}

func TestRequestRefused(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	stranger := generate(t)

	t.Run("signed by an uncommitted key", func(t *testing.T) {
		t.Parallel()
		_, err := commitment(t, c.request, stranger).Verify(providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("made for another provider", func(t *testing.T) {
		t.Parallel()
		r, err := enrol.NewRequest(nil, "provider-2", consumerID, c.cluster, c.identity)
		require.NoError(t, err)
		// Committed on providerID: the transcript names provider-2.
		_, err = commitment(t, r, c.cluster).Verify(providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("made by another consumer", func(t *testing.T) {
		t.Parallel()
		r, err := enrol.NewRequest(nil, providerID, "consumer-2", c.cluster, c.identity)
		require.NoError(t, err)
		ac := authorizedConsumer(t, c.request, c.cluster)
		ac.Spec.Request = r.API() // consumer-2's request under consumer-1's name
		cm, err := enrol.FromAuthorizedConsumer(ac)
		require.NoError(t, err)
		_, err = cm.Verify(providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("signature tampered", func(t *testing.T) {
		t.Parallel()
		ac := authorizedConsumer(t, c.request, c.cluster)
		ac.Spec.Request.Signature[0] ^= 1
		cm, err := enrol.FromAuthorizedConsumer(ac)
		require.NoError(t, err)
		_, err = cm.Verify(providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("CSR swapped", func(t *testing.T) {
		t.Parallel()
		other := newConsumer(t)
		ac := authorizedConsumer(t, c.request, c.cluster)
		ac.Spec.Request.CSR = string(other.request.CSR)
		cm, err := enrol.FromAuthorizedConsumer(ac)
		require.NoError(t, err)
		_, err = cm.Verify(providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
}

func TestRequestForTheClusterKey(t *testing.T) {
	t.Parallel()
	cluster := generate(t)
	_, err := enrol.NewRequest(nil, providerID, consumerID, cluster, cluster)
	require.ErrorIs(t, err, enrol.ErrClusterKeyCSR)

	// A request made by hand, whose CSR is for the signing key, is refused
	// by the provider: NewRequest's check is not the only one.
	r := forgeRequest(t, cluster, cluster)
	_, err = commitment(t, r, cluster).Verify(providerID)
	assert.ErrorIs(t, err, enrol.ErrClusterKeyCSR)
}

// TestRequestForTheOtherCommittedKey: while a rotation overlaps, neither
// committed cluster key may become a TLS key, whichever signed.
func TestRequestForTheOtherCommittedKey(t *testing.T) {
	t.Parallel()
	old, next := generate(t), generate(t)
	r, err := enrol.NewRequest(nil, providerID, consumerID, old, next)
	require.NoError(t, err, "the consumer side cannot know the other committed key")
	_, err = commitment(t, r, old, next).Verify(providerID)
	assert.ErrorIs(t, err, enrol.ErrClusterKeyCSR)
}

// forgeRequest is a request whose CSR is for identity, signed by
// cluster, made without NewRequest's checks.
func forgeRequest(t *testing.T, cluster, identity *keys.PrivateKey) *enrol.Request {
	t.Helper()
	withCSR, err := enrol.NewRequest(nil, providerID, consumerID, generate(t), identity)
	require.NoError(t, err)
	r := &enrol.Request{ProviderID: providerID, ConsumerID: consumerID, CSR: withCSR.CSR}
	r.Signature = signTranscript(t, cluster, r)
	return r
}

// requestTranscript is the request encoding as the package documents it,
// written out here so that a change of the signed bytes fails a test.
func requestTranscript(r *enrol.Request) []byte {
	sum := sha256.Sum256(r.CSR)
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(enrol.RequestContext)) })
	b.AddUint8(enrol.Version)
	for _, s := range []string{r.ProviderID, r.ConsumerID} {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
	}
	b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sum[:]) })
	return b.BytesOrPanic()
}

func signTranscript(t *testing.T, k *keys.PrivateKey, r *enrol.Request) []byte {
	t.Helper()
	sig, err := keys.SignMessage(nil, k, requestTranscript(r))
	require.NoError(t, err)
	return sig
}

// TestRequestTranscript pins the bytes the cluster key signs.
func TestRequestTranscript(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	assert.NoError(t, keys.VerifyMessage(c.cluster.Public(), requestTranscript(c.request), c.request.Signature))
}

func TestFromAuthorizedConsumerMalformed(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	tooMany := []string{publicPEM(t, generate(t)), publicPEM(t, generate(t)), publicPEM(t, generate(t))}
	for _, tc := range []struct {
		name   string
		mutate func(*peeringv1alpha1.AuthorizedConsumer)
	}{
		{"invalid cluster ID", func(ac *peeringv1alpha1.AuthorizedConsumer) {
			ac.Spec.ClusterID, ac.Name = "Not_An_ID", "Not_An_ID"
		}},
		{"name is not the cluster ID", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Name = "consumer-2" }},
		{"no key", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.PublicKeys = nil }},
		{"three keys", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.PublicKeys = tooMany }},
		{"a key that is not PEM", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.PublicKeys = []string{"ssh-ed25519 AAAA"} }},
		{"no CSR", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.Request.CSR = "" }},
		{"CSR too long", func(ac *peeringv1alpha1.AuthorizedConsumer) {
			ac.Spec.Request.CSR = string(make([]byte, 16<<10+1))
		}},
		{"no signature", func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.Request.Signature = nil }},
		{"signature too long", func(ac *peeringv1alpha1.AuthorizedConsumer) {
			ac.Spec.Request.Signature = make([]byte, 64<<10)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ac := authorizedConsumer(t, c.request, c.cluster)
			tc.mutate(ac)
			_, err := enrol.FromAuthorizedConsumer(ac)
			assert.ErrorIs(t, err, enrol.ErrMalformed)
		})
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	a, b := generate(t), generate(t)
	got, err := enrol.ParseKeys([]string{publicPEM(t, a), publicPEM(t, b)})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.True(t, keys.Equal(a.Public(), got[0]))
	assert.True(t, keys.Equal(b.Public(), got[1]))

	_, err = enrol.ParseKeys(nil)
	assert.ErrorIs(t, err, enrol.ErrMalformed)
}

func TestCommitmentCheck(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	next := generate(t)
	cm := commitment(t, c.request, c.cluster, next)
	assert.NoError(t, cm.Check(c.cluster.Public()))
	assert.NoError(t, cm.Check(next.Public()))
	assert.ErrorIs(t, cm.Check(generate(t).Public()), enrol.ErrNotCommitted)
	assert.ErrorIs(t, cm.Check(c.identity.Public()), enrol.ErrNotCommitted, "the identity key is not a cluster key")
}

func TestTenantRoundTrip(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	cm := commitment(t, c.request, c.cluster)
	v, err := cm.Verify(providerID)
	require.NoError(t, err)
	tn, err := cm.Tenant(v)
	require.NoError(t, err)
	assert.Equal(t, consumerID, tn.Name)
	assert.Equal(t, "liqo-tenant-"+consumerID, tn.Namespace)
	assert.Equal(t, authv1beta1.KeysExchange, tn.Spec.AuthzPolicy)
	assert.True(t, cm.Enrolled(tn))

	again, err := cm.VerifyTenant(tn, c.cluster.Public(), providerID)
	require.NoError(t, err)
	assert.True(t, keys.Equal(c.cluster.Public(), again.PublicKey))
}

func TestVerifyTenantRefused(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	next := generate(t)
	cm := commitment(t, c.request, c.cluster, next)
	v, err := cm.Verify(providerID)
	require.NoError(t, err)
	tn, err := cm.Tenant(v)
	require.NoError(t, err)

	t.Run("the Tenant's key did not sign", func(t *testing.T) {
		t.Parallel()
		// next is committed, but c.cluster signed the request.
		_, err := cm.VerifyTenant(tn, next.Public(), providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("another CSR", func(t *testing.T) {
		t.Parallel()
		other := tn.DeepCopy()
		other.Spec.CSR = newConsumer(t).request.CSR
		assert.False(t, cm.Enrolled(other))
		_, err := cm.VerifyTenant(other, c.cluster.Public(), providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
	t.Run("another signature", func(t *testing.T) {
		t.Parallel()
		other := tn.DeepCopy()
		other.Spec.Signature[0] ^= 1
		_, err := cm.VerifyTenant(other, c.cluster.Public(), providerID)
		assert.ErrorIs(t, err, enrol.ErrBadRequest)
	})
}

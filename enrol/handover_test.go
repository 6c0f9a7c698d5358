package enrol_test

import (
	"crypto"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/cryptobyte"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// handOver is a consumer rotating its cluster key from old to next, and
// its request to providerID with the hand-over.
type handOver struct {
	old, next, identity, held *keys.PrivateKey
	request                   *enrol.Request
}

func newHandOver(t *testing.T) handOver {
	t.Helper()
	h := handOver{old: generate(t), next: generate(t), identity: generate(t), held: generate(t)}
	var err error
	h.request, err = enrol.NewHandOverRequest(nil, providerID, consumerID, h.old, h.next, h.identity, h.held.Public())
	require.NoError(t, err)
	return h
}

// handOverTranscript is the transcript as the package documents it,
// written out here so that a change of encoding fails the test.
func handOverTranscript(t *testing.T, provider, consumer string, from, to, held crypto.PublicKey) []byte {
	t.Helper()
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(enrol.HandOverContext)) })
	b.AddUint8(enrol.Version)
	for _, s := range []string{provider, consumer} {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
	}
	for _, pub := range []crypto.PublicKey{from, to, held} {
		var der []byte
		if pub != nil {
			var err error
			der, err = x509.MarshalPKIXPublicKey(pub)
			require.NoError(t, err)
		}
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(der) })
	}
	return b.BytesOrPanic()
}

func TestHandOverVerifies(t *testing.T) {
	t.Parallel()
	h := newHandOver(t)
	msg := handOverTranscript(t, providerID, consumerID, h.old.Public(), h.next.Public(), h.held.Public())
	require.NoError(t, keys.VerifyMessage(h.old.Public(), msg, h.request.HandOver.FromSignature), "the previous key signs the documented transcript")
	require.NoError(t, keys.VerifyMessage(h.next.Public(), msg, h.request.HandOver.ToSignature), "so does the new one")

	// Both keys committed, as while the rotation overlaps: the new key
	// takes over the previous one and the identity key it held.
	v, err := commitment(t, h.request, h.old, h.next).Verify(providerID)
	require.NoError(t, err)
	assert.True(t, keys.Equal(h.next.Public(), v.PublicKey), "the new key signed the request")
	require.Len(t, v.HandedOver, 2)
	assert.True(t, keys.Equal(h.old.Public(), v.HandedOver[0]), "and took over from the previous one")
	assert.True(t, keys.Equal(h.held.Public(), v.HandedOver[1]), "and the identity key it held")

	// The new key alone, as once the rotation is over: the request still
	// verifies, the hand-over no longer counts (the previous key is no
	// longer the consumer's).
	v, err = commitment(t, h.request, h.next).Verify(providerID)
	require.NoError(t, err)
	assert.Empty(t, v.HandedOver)

	// A previous key that held no identity hands over only itself.
	bare, err := enrol.NewHandOverRequest(nil, providerID, consumerID, h.old, h.next, h.identity, nil)
	require.NoError(t, err)
	v, err = commitment(t, bare, h.old, h.next).Verify(providerID)
	require.NoError(t, err)
	require.Len(t, v.HandedOver, 1)

	// Through the API and back: the same request, the same verdict.
	api := h.request.API()
	back, err := enrol.RequestFromAPI(providerID, consumerID, &api)
	require.NoError(t, err)
	assert.Equal(t, h.request.API(), back.API())

	// Deterministic with Ed25519, as a plain request is: the CLI and the
	// controller make the same one.
	again, err := enrol.NewHandOverRequest(nil, providerID, consumerID, h.old, h.next, h.identity, h.held.Public())
	require.NoError(t, err)
	assert.Equal(t, h.request.API(), again.API())

	// Without a hand-over there is no predecessor.
	plain := newConsumer(t)
	v, err = commitment(t, plain.request, plain.cluster).Verify(providerID)
	require.NoError(t, err)
	assert.Empty(t, v.HandedOver)
}

func TestHandOverRefused(t *testing.T) {
	t.Parallel()
	stranger := generate(t)
	for name, tc := range map[string]struct {
		mutate func(h *handOver)
		// commit lists the committed keys, the new one when nil.
		commit func(h handOver) []crypto.Signer
		want   error
	}{
		"previous key's signature by another key": {
			mutate: func(h *handOver) {
				msg := handOverTranscript(t, providerID, consumerID, h.old.Public(), h.next.Public(), h.held.Public())
				sig, err := keys.SignMessage(nil, stranger, msg)
				require.NoError(t, err)
				h.request.HandOver.FromSignature = sig
			},
			want: enrol.ErrBadHandOver,
		},
		"new key's signature missing its key": {
			mutate: func(h *handOver) { h.request.HandOver.ToSignature = h.request.HandOver.FromSignature },
			want:   enrol.ErrBadHandOver,
		},
		"a stranger claims to be the previous key": {
			// The signatures are the real ones, for the real previous key.
			mutate: func(h *handOver) { h.request.HandOver.From = stranger.Public() },
			want:   enrol.ErrBadHandOver,
		},
		"another identity key claimed as held": {
			// A stranger's identity, so that its certificate counts as
			// the new key's: the signatures do not cover it.
			mutate: func(h *handOver) { h.request.HandOver.Held = stranger.Public() },
			want:   enrol.ErrBadHandOver,
		},
		"hand-over made for another provider": {
			mutate: func(h *handOver) {
				other, err := enrol.NewHandOverRequest(nil, "provider-2", consumerID, h.old, h.next, h.identity, h.held.Public())
				require.NoError(t, err)
				h.request.HandOver = other.HandOver
			},
			want: enrol.ErrBadHandOver,
		},
		"previous key hands over to itself": {
			mutate: func(h *handOver) {
				r, err := enrol.NewRequest(nil, providerID, consumerID, h.old, h.identity)
				require.NoError(t, err)
				msg := handOverTranscript(t, providerID, consumerID, h.old.Public(), h.old.Public(), nil)
				sig, err := keys.SignMessage(nil, h.old, msg)
				require.NoError(t, err)
				r.HandOver = &enrol.HandOver{From: h.old.Public(), FromSignature: sig, ToSignature: sig}
				h.request = r
			},
			commit: func(h handOver) []crypto.Signer { return []crypto.Signer{h.old} },
			want:   enrol.ErrBadHandOver,
		},
		"the new key is not committed": {
			commit: func(h handOver) []crypto.Signer { return []crypto.Signer{h.old} },
			want:   enrol.ErrBadRequest,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHandOver(t)
			if tc.mutate != nil {
				tc.mutate(&h)
			}
			committed := []crypto.Signer{h.old, h.next}
			if tc.commit != nil {
				committed = tc.commit(h)
			}
			c := &enrol.Commitment{ConsumerID: consumerID, CSR: h.request.CSR, Signature: h.request.Signature, HandOver: h.request.HandOver}
			for _, k := range committed {
				c.Keys = append(c.Keys, k.Public())
			}
			v, err := c.Verify(providerID)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, v)
		})
	}
}

func TestHandOverForTheIdentityKey(t *testing.T) {
	t.Parallel()
	old, next := generate(t), generate(t)
	_, err := enrol.NewHandOverRequest(nil, providerID, consumerID, old, next, old, nil)
	require.ErrorIs(t, err, enrol.ErrClusterKeyCSR, "the previous cluster key never becomes a TLS key")
	_, err = enrol.NewHandOverRequest(nil, providerID, consumerID, old, old, generate(t), nil)
	require.ErrorIs(t, err, enrol.ErrBadHandOver)
}

func TestHandOverMalformed(t *testing.T) {
	t.Parallel()
	h := newHandOver(t)
	for name, mutate := range map[string]func(api *peeringv1alpha1.EnrolmentRequest){
		"previous key not a key": func(api *peeringv1alpha1.EnrolmentRequest) { api.HandOver.From = "not a key" },
		"no new key's signature": func(api *peeringv1alpha1.EnrolmentRequest) { api.HandOver.ToSignature = nil },
		"an oversized signature": func(api *peeringv1alpha1.EnrolmentRequest) { api.HandOver.FromSignature = make([]byte, 4096) },
		"held not a key":         func(api *peeringv1alpha1.EnrolmentRequest) { api.HandOver.Held = "not a key" },
	} {
		t.Run(name, func(t *testing.T) {
			api := h.request.API()
			mutate(&api)
			_, err := enrol.RequestFromAPI(providerID, consumerID, &api)
			require.ErrorIs(t, err, enrol.ErrMalformed)
			ac := authorizedConsumer(t, h.request, h.next)
			mutate(&ac.Spec.Request)
			_, err = enrol.FromAuthorizedConsumer(ac)
			require.ErrorIs(t, err, enrol.ErrMalformed)
		})
	}
}

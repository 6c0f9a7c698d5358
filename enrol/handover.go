package enrol

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/tenant"
)

// HandOverContext prefixes what both cluster keys of a hand-over sign.
const HandOverContext = "kubepact cluster key hand-over"

// ErrBadHandOver reports a request whose cluster key hand-over does not
// verify: a signature of either key that fails (over another provider,
// consumer, key or identity key than it names), or a previous key that is
// the request's own. Such a request gets nothing. A hand-over that does
// not parse is ErrMalformed.
var ErrBadHandOver = errors.New("cluster key hand-over does not verify")

// HandOver is a consumer's statement that its cluster key From hands over
// to the key that signed the request it rides with, towards one provider,
// with the identity key Held that From's certificate is for (nil when it
// holds none): both cluster keys sign the same domain-separated
// transcript (the context, the version, both IDs and the three keys'
// SubjectPublicKeyInfo, an empty one for no Held). A provider that
// commits both cluster keys counts a certificate From or Held holds for
// the consumer as held by the new key too (lifecycle.CheckHolder), so the
// new key takes over the peering without waiting for that certificate to
// expire. It grants nothing by itself: the new key must be committed, and
// the previous one too for the hand-over to count.
type HandOver struct {
	From crypto.PublicKey
	Held crypto.PublicKey
	// FromSignature is the previous key's signature, ToSignature the new
	// key's.
	FromSignature []byte
	ToSignature   []byte
}

// handOverTranscript returns what both keys of a hand-over from from to
// to sign, for providerID and consumerID, from's identity key being held.
func handOverTranscript(providerID, consumerID string, from, to, held crypto.PublicKey) ([]byte, error) {
	var b cryptobyte.Builder
	addString(&b, HandOverContext)
	b.AddUint8(Version)
	addString(&b, providerID)
	addString(&b, consumerID)
	for _, pub := range []crypto.PublicKey{from, to, held} {
		var der []byte
		if pub != nil {
			var err error
			if der, err = x509.MarshalPKIXPublicKey(pub); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadHandOver, err)
			}
		}
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(der) })
	}
	return b.Bytes()
}

// NewHandOverRequest returns consumer consumerID's request to provider
// providerID, as NewRequest makes it, signed with the new cluster key to,
// and carrying the hand-over to it from the previous cluster key from,
// whose identity's certificate is for held (nil when it holds none),
// signed by both. With Ed25519 keys the same keys make the same request.
func NewHandOverRequest(rand io.Reader, providerID, consumerID string, from, to, identityKey crypto.Signer, held crypto.PublicKey) (*Request, error) {
	if keys.Equal(from.Public(), to.Public()) {
		return nil, fmt.Errorf("%w: the previous key is the new one", ErrBadHandOver)
	}
	if keys.Equal(from.Public(), identityKey.Public()) {
		return nil, ErrClusterKeyCSR
	}
	r, err := NewRequest(rand, providerID, consumerID, to, identityKey)
	if err != nil {
		return nil, err
	}
	msg, err := handOverTranscript(providerID, consumerID, from.Public(), to.Public(), held)
	if err != nil {
		return nil, err
	}
	h := &HandOver{From: from.Public(), Held: held}
	if h.FromSignature, err = keys.SignMessage(rand, from, msg); err != nil {
		return nil, err
	}
	if h.ToSignature, err = keys.SignMessage(rand, to, msg); err != nil {
		return nil, err
	}
	r.HandOver = h
	return r, nil
}

// verify checks h as the hand-over to the key to, for providerID and
// consumerID, with ErrBadHandOver.
func (h *HandOver) verify(providerID, consumerID string, to crypto.PublicKey) error {
	if keys.Equal(h.From, to) {
		return fmt.Errorf("%w: the previous key is the request's own", ErrBadHandOver)
	}
	msg, err := handOverTranscript(providerID, consumerID, h.From, to, h.Held)
	if err != nil {
		return err
	}
	if keys.VerifyMessage(h.From, msg, h.FromSignature) != nil {
		return fmt.Errorf("%w: the previous key %s did not sign it", ErrBadHandOver, keys.Fingerprint(h.From))
	}
	if keys.VerifyMessage(to, msg, h.ToSignature) != nil {
		return fmt.Errorf("%w: the new key %s did not sign it", ErrBadHandOver, keys.Fingerprint(to))
	}
	return nil
}

// api returns h as the API carries it, nil for nil. A key that does not
// marshal (of no type package keys supports, so never one a hand-over
// verified with) is carried empty, which no provider parses.
func (h *HandOver) api() *peeringv1alpha1.ClusterKeyHandOver {
	if h == nil {
		return nil
	}
	pemOf := func(pub crypto.PublicKey) string {
		if pub == nil {
			return ""
		}
		b, err := keys.MarshalPublicKey(pub)
		if err != nil {
			return ""
		}
		return string(b)
	}
	return &peeringv1alpha1.ClusterKeyHandOver{From: pemOf(h.From), Held: pemOf(h.Held),
		FromSignature: bytes.Clone(h.FromSignature), ToSignature: bytes.Clone(h.ToSignature)}
}

// handOverFromAPI parses a hand-over as the API carries it, nil for nil,
// checking the form of every field.
func handOverFromAPI(h *peeringv1alpha1.ClusterKeyHandOver) (*HandOver, error) {
	if h == nil {
		return nil, nil
	}
	from, err := keys.ParsePublicKey([]byte(h.From))
	if err != nil {
		return nil, fmt.Errorf("%w: handOver.from: %w", ErrMalformed, err)
	}
	var held crypto.PublicKey
	if h.Held != "" {
		if held, err = keys.ParsePublicKey([]byte(h.Held)); err != nil {
			return nil, fmt.Errorf("%w: handOver.held: %w", ErrMalformed, err)
		}
	}
	for _, sig := range [][]byte{h.FromSignature, h.ToSignature} {
		if len(sig) == 0 || len(sig) > tenant.MaxSignatureSize {
			return nil, fmt.Errorf("%w: handOver: a signature of %d bytes", ErrMalformed, len(sig))
		}
	}
	return &HandOver{From: from, Held: held, FromSignature: bytes.Clone(h.FromSignature), ToSignature: bytes.Clone(h.ToSignature)}, nil
}

// RequestFromAPI parses a request to providerID from consumerID as the
// API carries it (a TrustedProvider's status, an AuthorizedConsumer's
// spec), checking the form of every field; Verify checks the rest.
func RequestFromAPI(providerID, consumerID string, r *peeringv1alpha1.EnrolmentRequest) (*Request, error) {
	h, err := handOverFromAPI(r.HandOver)
	if err != nil {
		return nil, err
	}
	return &Request{ProviderID: providerID, ConsumerID: consumerID, CSR: []byte(r.CSR), Signature: bytes.Clone(r.Signature), HandOver: h}, nil
}

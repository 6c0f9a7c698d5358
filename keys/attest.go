package keys

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"
)

// ErrUnattested reports a key, found in a Keyring under the expected name,
// that carries no valid attestation of this cluster for that name and use:
// someone other than this cluster's kubepact put it there, or it was made
// for another use. Such a key is never used.
var ErrUnattested = errors.New("key not attested by this cluster")

// AttestationContext separates attestations from every other signature the
// cluster key makes. A nonce that a provider asks the cluster key to sign
// is 88 characters of base64, and a transcript starts with its own
// context, so neither can ever be taken for an attestation.
const AttestationContext = "kubepact keyring attestation v1"

// Purpose says what a key kept in a Keyring is for.
type Purpose string

const (
	// PurposeControlPlane is the TLS key of a ControlPlane identity, and
	// the key it is being renewed to.
	PurposeControlPlane Purpose = "controlplane"
	// PurposeResourceSlice is the TLS key of a ResourceSlice identity.
	PurposeResourceSlice Purpose = "resourceslice"
)

// Use is what one key of a Keyring is for: a purpose, toward one remote
// cluster (the provider that certifies it).
type Use struct {
	Purpose Purpose
	Remote  string
}

// Stored is what a Keyring keeps under a name: a private key and the
// cluster key's attestation of it (Attester). The attestation is not
// secret; the key is.
type Stored struct {
	Key         *PrivateKey
	Attestation []byte
}

// String names the key's algorithm and fingerprint, never the key.
func (s Stored) String() string {
	if s.Key == nil {
		return "keys.Stored(<nil>)"
	}
	return fmt.Sprintf("keys.Stored(%v, attested=%t)", s.Key, len(s.Attestation) > 0)
}

// GoString is String.
func (s Stored) GoString() string { return s.String() }

// Format makes every fmt verb print String.
func (s Stored) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// An Attester proves, with the cluster key, that this cluster made a key of
// its Keyring, for which name and use, and checks that proof on every
// read. A name is not proof: whoever may create Secrets in the key
// namespace can put a key under any name there, and managedFields, labels
// and owner references can all be set by the same writer. What such a
// writer cannot make is a signature of the cluster key over the namespace,
// the name, the purpose, the remote cluster and the public key.
//
// An attestation also says whether the key was made by this cluster or
// only adopted: found, unattested, backing a live identity, when a version
// that attests keys first ran (Adopt). An adopted key is used until its
// identity's certificate is renewed, which then moves to a fresh key.
//
// An Attester is safe for concurrent use.
type Attester struct {
	cluster   *PrivateKey
	namespace string
	rand      io.Reader
	// previous is the cluster key the cluster key replaced
	// (RotatingStore), nil when none: its attestations still count, and
	// are made again with the cluster key when read (Get).
	previous crypto.PublicKey
}

// WithPrevious returns a copy of a that also accepts the attestations of
// previous, the cluster key the cluster key replaced, and attests again
// with the cluster key each key it reads that only previous attested.
// A nil previous changes nothing.
func (a *Attester) WithPrevious(previous crypto.PublicKey) *Attester {
	b := *a
	b.previous = previous
	return &b
}

// NewAttester returns the Attester of the keys kept in namespace, signing
// with cluster, the cluster key; rand supplies what the cluster key's
// algorithm needs of randomness (crypto/rand.Reader when nil).
func NewAttester(cluster *PrivateKey, namespace string, rand io.Reader) (*Attester, error) {
	if cluster == nil || cluster.signer == nil {
		return nil, fmt.Errorf("%w: no cluster key", ErrMalformed)
	}
	return &Attester{cluster: cluster, namespace: namespace, rand: rand}, nil
}

// message is what an attestation signs: the context, whether the key was
// adopted, and the namespace, name, purpose, remote cluster and PKIX public
// key, each length-prefixed.
func (a *Attester) message(name string, u Use, pub crypto.PublicKey, adopted bool) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	var b cryptobyte.Builder
	b.AddBytes([]byte(AttestationContext))
	b.AddUint8(0)
	if adopted {
		b.AddUint8(1)
	} else {
		b.AddUint8(0)
	}
	for _, field := range [][]byte{[]byte(a.namespace), []byte(name), []byte(u.Purpose), []byte(u.Remote), der} {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(field) })
	}
	return b.Bytes()
}

// Attest returns k as stored under name for u, with the attestation of a
// key this cluster made.
func (a *Attester) Attest(name string, u Use, k *PrivateKey) (Stored, error) {
	return a.attest(name, u, k, false)
}

// Adopted returns k as stored under name for u, with the attestation of a
// key this cluster adopted rather than made (Adopt).
func (a *Attester) Adopted(name string, u Use, k *PrivateKey) (Stored, error) {
	return a.attest(name, u, k, true)
}

func (a *Attester) attest(name string, u Use, k *PrivateKey, adopted bool) (Stored, error) {
	if k == nil || k.signer == nil {
		return Stored{}, fmt.Errorf("%w: no key", ErrMalformed)
	}
	msg, err := a.message(name, u, k.Public(), adopted)
	if err != nil {
		return Stored{}, err
	}
	sig, err := SignMessage(a.rand, a.cluster, msg)
	if err != nil {
		return Stored{}, fmt.Errorf("attesting key %s: %w", name, err)
	}
	return Stored{Key: k, Attestation: sig}, nil
}

// Check returns the key of s when its attestation is the cluster key's (or
// the previous cluster key's, WithPrevious) for name and u, and whether it
// was adopted rather than made. Otherwise the error wraps ErrUnattested.
func (a *Attester) Check(name string, u Use, s Stored) (k *PrivateKey, adopted bool, err error) {
	k, adopted, _, err = a.check(name, u, s)
	return k, adopted, err
}

// check is Check, and reports whether only the previous cluster key
// attested the key.
func (a *Attester) check(name string, u Use, s Stored) (k *PrivateKey, adopted, byPrevious bool, err error) {
	if s.Key == nil || s.Key.signer == nil {
		return nil, false, false, fmt.Errorf("%w: key %s: no key", ErrMalformed, name)
	}
	if len(s.Attestation) == 0 {
		return nil, false, false, fmt.Errorf("%w: key %s (%s) carries no attestation", ErrUnattested, name, Fingerprint(s.Key.Public()))
	}
	attesters := []crypto.PublicKey{a.cluster.Public()}
	if a.previous != nil {
		attesters = append(attesters, a.previous)
	}
	for i, attester := range attesters {
		for _, adopted := range []bool{false, true} {
			msg, err := a.message(name, u, s.Key.Public(), adopted)
			if err != nil {
				return nil, false, false, err
			}
			if VerifyMessage(attester, msg, s.Attestation) == nil {
				return s.Key, adopted, i > 0, nil
			}
		}
	}
	return nil, false, false, fmt.Errorf("%w: key %s (%s) is not attested for %s keys of %q", ErrUnattested, name, Fingerprint(s.Key.Public()), u.Purpose, u.Remote)
}

// Get returns the key r keeps under name when this cluster attested it for
// u, and whether it was adopted. Errors wrap ErrNotFound when r keeps no
// such key, ErrUnattested when the key there is not attested for u. A key
// only the previous cluster key attested (WithPrevious) is attested again
// with the cluster key (Keyring.Attest) before Get returns it.
func (a *Attester) Get(ctx context.Context, r Keyring, name string, u Use) (k *PrivateKey, adopted bool, err error) {
	s, err := r.Get(ctx, name)
	if err != nil {
		return nil, false, err
	}
	k, adopted, byPrevious, err := a.check(name, u, s)
	if err == nil && byPrevious {
		// Attested again with the cluster key, so that the previous key
		// is needed by fewer keys each time. Should the write fail, the
		// key is still attested, and the next read tries again.
		if again, aerr := a.attest(name, u, k, adopted); aerr == nil {
			_ = r.Attest(ctx, name, again)
		}
	}
	return k, adopted, err
}

// Ensure returns the key r keeps under name for u, generating, attesting
// and storing one of algorithm alg (randomness from rnd) when there is
// none. The key is stored before Ensure returns it, so a caller that
// crashes after using it finds the same key on its next run. A key found
// there that this cluster did not attest for u is never used: the error
// wraps ErrUnattested, and nothing is written.
func (a *Attester) Ensure(ctx context.Context, r Keyring, name string, u Use, rnd io.Reader, alg Algorithm) (*PrivateKey, error) {
	k, _, err := a.Get(ctx, r, name, u)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("reading key %s: %w", name, err)
	}
	if k, err = Generate(rnd, alg); err != nil {
		return nil, err
	}
	s, err := a.Attest(name, u, k)
	if err != nil {
		return nil, err
	}
	switch err := r.Create(ctx, name, s); {
	case err == nil:
		return k, nil
	case errors.Is(err, ErrExists):
		// Another writer was first: its key counts only if it is ours.
		k, _, err := a.Get(ctx, r, name, u)
		return k, err
	default:
		return nil, fmt.Errorf("storing key %s: %w", name, err)
	}
}

// Adopt attests, as adopted, the key r keeps under name for u when it
// carries no attestation yet and its public key is pub, the key a live
// identity's certificate is for: a key kept by a version that did not
// attest keys. It returns whether it attested the key. A key already
// attested, or that is not pub's, is left as it is. Only an upgrade calls
// it, once per live identity: an adopted key is re-keyed at its identity's
// next renewal.
func (a *Attester) Adopt(ctx context.Context, r Keyring, name string, u Use, pub crypto.PublicKey) (bool, error) {
	s, err := r.Get(ctx, name)
	if err != nil {
		return false, err
	}
	if len(s.Attestation) > 0 || s.Key == nil || !Equal(s.Key.Public(), pub) {
		return false, nil
	}
	attested, err := a.Adopted(name, u, s.Key)
	if err != nil {
		return false, err
	}
	if err := r.Attest(ctx, name, attested); err != nil {
		return false, err
	}
	return true, nil
}

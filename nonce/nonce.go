// Package nonce issues, stores, signs and redeems the provider's challenge.
//
// A nonce is 64 random bytes in standard base64: an 88-character text. The
// provider keeps one per consumer in a Store; the consumer signs the text (not
// the decoded bytes, as Liqo does) with its cluster key; the provider Redeems
// the nonce, which removes it, before it checks the signature.
//
// # Security
//
// A nonce is single-use: Redeem binds it, before any signature is checked,
// to the one Tenant that redeems it (by its digest) and to the key that
// Tenant claims. The same Tenant may redeem it again: a provider that failed
// halfway (signing, binding, writing the status) resumes where it stopped
// instead of failing for ever. Another Tenant claiming the same key may
// redeem it too: the holder of that key re-authenticates, as a Liqo consumer
// does, which keeps the nonce it signed and refuses a different one; it
// could ask for a fresh nonce anyway. A Tenant claiming any other key gets
// ErrRedeemed. A nonce expires after its TTL counted from Entry.IssuedAt.
// The TTL is fixed when the nonce is issued: Ensure records Options.TTL
// (DefaultTTL unless configured) in Entry.TTL, and every later Ensure and
// Redeem judges the nonce by that TTL, whatever its own Options say, so a
// nonce issued for a minute is not revived by a provider configured for an
// hour. Only an entry that records no TTL (a nonce Secret written by Liqo
// or liqoctl) is judged by the caller's Options.TTL. Redeem reports
// ErrExpired for a nonce that had expired when it was first redeemed. Ensure issues a new nonce in place
// of a redeemed one unless Options.KeepRedeemed keeps it (a provider keeps
// the nonce of a consumer it verified, and, after an unpeering, the nonce
// of the key it had accepted: see Redemption.Unpeered). Nonce values print
// redacted; Text returns the text.
//
// # Errors
//
// Parse wraps ErrMalformed, and so does FromSecret for a Secret whose nonce
// or kubepact annotations (issue time, TTL, redemption) do not parse. Store implementations and Redeem wrap ErrNotFound
// when no nonce is stored for a cluster. Redeem wraps ErrRedeemed, and
// ErrNotFound too, for a nonce redeemed by a Tenant of another key, and
// ErrExpired.
// Verify wraps keys.ErrBadSignature.
//
// # Concurrency
//
// Store implementations are safe for concurrent use: MarkRedeemed binds a
// nonce to exactly one redeemer, and Consume hands a nonce to at most one
// caller.
package nonce

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kubepact/kubepact/keys"
)

const (
	// Size is the number of random bytes in a nonce.
	Size = 64
	// TextSize is the length of a nonce's base64 text.
	TextSize = (Size + 2) / 3 * 4
	// DefaultTTL is how long a nonce stays valid unless configured otherwise.
	DefaultTTL = 10 * time.Minute
)

var (
	// ErrMalformed reports a text that is not a nonce.
	ErrMalformed = errors.New("malformed nonce")
	// ErrNotFound reports that no nonce is stored for a cluster: none was
	// issued, or it was already redeemed.
	ErrNotFound = errors.New("nonce not found")
	// ErrExpired reports a nonce older than its TTL.
	ErrExpired = errors.New("nonce expired")
	// ErrRedeemed reports a nonce already redeemed by a Tenant claiming
	// another key.
	ErrRedeemed = errors.New("nonce redeemed by another Tenant")
)

// Nonce is a provider's challenge. The zero value is not a valid nonce.
type Nonce struct{ text string }

// Generate returns a new nonce made of Size bytes from r (crypto/rand.Reader
// when nil).
func Generate(r io.Reader) (Nonce, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [Size]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Nonce{}, fmt.Errorf("generating nonce: %w", err)
	}
	return Nonce{text: base64.StdEncoding.EncodeToString(b[:])}, nil
}

// Parse checks that text is a nonce: TextSize characters of standard base64
// encoding Size bytes.
func Parse(text string) (Nonce, error) {
	if len(text) != TextSize {
		return Nonce{}, fmt.Errorf("%w: %d characters, want %d", ErrMalformed, len(text), TextSize)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(text)
	if err != nil || len(b) != Size {
		return Nonce{}, fmt.Errorf("%w: not %d bytes of standard base64", ErrMalformed, Size)
	}
	return Nonce{text: text}, nil
}

// Text returns the nonce's base64 text, the form that travels and is signed.
func (n Nonce) Text() string { return n.text }

// IsZero reports whether n is the zero Nonce.
func (n Nonce) IsZero() bool { return n.text == "" }

// Equal reports in constant time whether n and o are the same nonce.
func (n Nonce) Equal(o Nonce) bool {
	return subtle.ConstantTimeCompare([]byte(n.text), []byte(o.text)) == 1
}

// String prints a redacted form.
func (n Nonce) String() string {
	if n.IsZero() {
		return "nonce(<zero>)"
	}
	return "nonce(" + n.text[:4] + "…)"
}

// GoString prints a redacted form.
func (n Nonce) GoString() string { return n.String() }

// Sign signs n's text with s, as a Liqo consumer does. r supplies randomness
// where the key type needs it.
func Sign(r io.Reader, s crypto.Signer, n Nonce) ([]byte, error) {
	if n.IsZero() {
		return nil, fmt.Errorf("%w: zero nonce", ErrMalformed)
	}
	sig, err := keys.SignMessage(r, s, []byte(n.text))
	if err != nil {
		return nil, fmt.Errorf("signing nonce: %w", err)
	}
	return sig, nil
}

// Verify checks that sig is pub's signature over n's text.
func Verify(pub crypto.PublicKey, n Nonce, sig []byte) error {
	if n.IsZero() {
		return fmt.Errorf("%w: zero nonce", ErrMalformed)
	}
	if err := keys.VerifyMessage(pub, []byte(n.text), sig); err != nil {
		return fmt.Errorf("nonce signature: %w", err)
	}
	return nil
}

// Entry is a stored nonce, the time it was issued, how long it stays valid
// and, once redeemed, by what.
type Entry struct {
	Nonce    Nonce
	IssuedAt time.Time
	// TTL is how long the nonce stays valid from IssuedAt, fixed when it
	// was issued. Zero means not recorded (a nonce issued by Liqo): the
	// TTL of whoever judges it applies.
	TTL time.Duration
	// Redemption is nil until the nonce is redeemed.
	Redemption *Redemption
}

// Redemption records who redeemed a nonce, and when.
type Redemption struct {
	// By is the digest of what redeemed the nonce: a Tenant's
	// tenant.Digest. At most MaxRedeemerSize bytes.
	By []byte
	// Key is the fingerprint (keys.Fingerprint) of the key the redeeming
	// Tenant claims; empty for a redemption recorded without one. At most
	// MaxRedeemerSize bytes.
	Key string
	// At is when it was redeemed.
	At time.Time
	// Unpeered is set when the provider accepted the Tenant of Key and that
	// Tenant was later deleted by an unpeering (Provider.Forget): it is the
	// fingerprint (keys.Fingerprint) of the key of the certificate the
	// provider had cached for the consumer then, Key when it had none. The
	// nonce stays Key's (Options.KeepRedeemed), as Liqo keeps it, and the
	// provider knows that Key holds that certificate after the Tenant that
	// said so is gone. Empty otherwise. At most MaxRedeemerSize bytes.
	Unpeered string
}

// Redeemer is what redeems a nonce: a Tenant, by its digest
// (tenant.Digest), and the key it claims, by its fingerprint
// (keys.Fingerprint).
type Redeemer struct {
	Tenant []byte
	Key    string
}

// MaxRedeemerSize bounds Redemption.By and Redemption.Key.
const MaxRedeemerSize = 64

// Expired reports whether e is past its TTL at time now: e.TTL when it
// records one, else fallback. An entry claiming to be issued more than its
// TTL in the future is expired too: no clock is that far off, and trusting
// it would make the nonce live forever.
func (e Entry) Expired(now time.Time, fallback time.Duration) bool {
	ttl := e.TTLOr(fallback)
	return !now.Before(e.IssuedAt.Add(ttl)) || e.IssuedAt.After(now.Add(ttl))
}

// TTLOr returns e.TTL when e records one (it is positive), else fallback.
func (e Entry) TTLOr(fallback time.Duration) time.Duration {
	if e.TTL > 0 {
		return e.TTL
	}
	return fallback
}

// Store keeps the current nonce of each remote cluster, on the provider.
//
// Put stores e for clusterID, replacing any earlier nonce, redeemed or not.
// Get returns the stored entry, or an error wrapping ErrNotFound.
// MarkRedeemed sets the stored entry's Redemption to r unless it has one
// already, and returns the entry as stored afterwards: when several callers
// mark the same nonce at once, exactly one redemption is stored and every
// caller gets it back. Consume removes and returns the stored entry; when
// several callers consume the same nonce at once, one gets it and the others
// get ErrNotFound. MarkRedeemed and Consume of a cluster with no nonce fail
// with an error wrapping ErrNotFound. Implementations are safe for
// concurrent use.
type Store interface {
	Put(ctx context.Context, clusterID string, e Entry) error
	Get(ctx context.Context, clusterID string) (Entry, error)
	MarkRedeemed(ctx context.Context, clusterID string, r Redemption) (Entry, error)
	Consume(ctx context.Context, clusterID string) (Entry, error)
}

// Peeker is a Store that can also return an entry as it last saw it,
// without asking where it stores them: a controller's cache, or what it
// last wrote. Such an entry may be stale, so it only ever serves to guess:
// a provider verifies a Tenant against it to start work early that the
// Tenant's redemption, which reads the stored entry, must then confirm.
// Peek returns false when it has no entry of clusterID at hand. A provider
// peeks only through the Peeker it is given as such
// (provider.Core.Peek), never by asking its Store whether it is one.
type Peeker interface {
	Store
	Peek(ctx context.Context, clusterID string) (Entry, bool)
}

// Options tunes Ensure and Redeem. The zero value, like a nil *Options, uses
// crypto/rand.Reader and DefaultTTL, and Ensure replaces every redeemed
// nonce.
type Options struct {
	// Rand is the source of new nonces.
	Rand io.Reader
	// TTL is how long a nonce that Ensure issues stays valid; Ensure
	// records it in the Entry. It judges only stored entries that record
	// no TTL of their own.
	TTL time.Duration
	// KeepRedeemed, when set, tells Ensure whether to keep a redeemed nonce
	// (return it again) rather than replace it. A provider keeps the nonce
	// of a consumer whose key it verified, so that the consumer can
	// re-authenticate with the nonce it holds. An error fails Ensure.
	KeepRedeemed func(context.Context, Redemption) (bool, error)
}

func (o *Options) ttl() time.Duration {
	if o == nil || o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}

func (o *Options) rand() io.Reader {
	if o == nil {
		return nil
	}
	return o.Rand
}

// Ensure returns the unexpired, unredeemed nonce stored for clusterID, or a
// redeemed one that opts.KeepRedeemed keeps, or issues and stores a new one
// at time now, valid for opts.TTL. Calling it again before the nonce expires
// or is redeemed returns the same nonce. A stored nonce expires by the TTL
// it was issued with (see Entry.Expired), not by opts.TTL.
func Ensure(ctx context.Context, s Store, clusterID string, now time.Time, opts *Options) (Nonce, error) {
	e, err := s.Get(ctx, clusterID)
	switch {
	case err == nil && e.Redemption == nil && !e.Expired(now, opts.ttl()):
		return e.Nonce, nil
	case err == nil && e.Redemption != nil && opts != nil && opts.KeepRedeemed != nil:
		keep, err := opts.KeepRedeemed(ctx, *e.Redemption)
		if err != nil {
			return Nonce{}, fmt.Errorf("nonce of %s: %w", clusterID, err)
		}
		if keep {
			return e.Nonce, nil
		}
	case err != nil && !errors.Is(err, ErrNotFound):
		return Nonce{}, fmt.Errorf("reading nonce of %s: %w", clusterID, err)
	}
	n, err := Generate(opts.rand())
	if err != nil {
		return Nonce{}, err
	}
	if err := s.Put(ctx, clusterID, Entry{Nonce: n, IssuedAt: now, TTL: opts.ttl()}); err != nil {
		return Nonce{}, fmt.Errorf("storing nonce of %s: %w", clusterID, err)
	}
	return n, nil
}

// Redeem redeems the nonce stored for clusterID at time now on behalf of
// who, and returns the entry with its redemption. An unredeemed nonce is
// bound to who for good, whether or not what was signed with it turns out
// to verify. A nonce already bound to who's Tenant is returned again, so the
// same Tenant resumes a handshake that failed halfway; one bound to another
// Tenant that claimed who's key is returned too, so the key's holder
// re-authenticates (the caller still verifies the signature under that
// key). A nonce bound to any other key fails with ErrRedeemed, one that had
// expired when it was first redeemed with ErrExpired: expired by the TTL
// recorded when it was issued, opts.TTL only for an entry that records
// none.
func Redeem(ctx context.Context, s Store, clusterID string, who Redeemer, now time.Time, opts *Options) (Entry, error) {
	if len(who.Tenant) == 0 || len(who.Tenant) > MaxRedeemerSize || len(who.Key) > MaxRedeemerSize {
		return Entry{}, fmt.Errorf("redeeming nonce of %s: %w: redeemer digest of %d bytes, key fingerprint of %d", clusterID, ErrMalformed, len(who.Tenant), len(who.Key))
	}
	e, err := s.MarkRedeemed(ctx, clusterID, Redemption{By: bytes.Clone(who.Tenant), Key: who.Key, At: now})
	if err != nil {
		return Entry{}, fmt.Errorf("redeeming nonce of %s: %w", clusterID, err)
	}
	r := e.Redemption
	sameTenant := r != nil && subtle.ConstantTimeCompare(r.By, who.Tenant) == 1
	sameKey := r != nil && who.Key != "" && r.Key == who.Key
	switch {
	case r == nil:
		return Entry{}, fmt.Errorf("redeeming nonce of %s: the store recorded no redemption", clusterID)
	case !sameTenant && !sameKey:
		return Entry{}, fmt.Errorf("redeeming nonce of %s: %w (%w)", clusterID, ErrRedeemed, ErrNotFound)
	case e.Expired(r.At, opts.ttl()):
		return Entry{}, fmt.Errorf("redeeming nonce of %s issued at %s for %s: %w", clusterID, e.IssuedAt.UTC().Format(time.RFC3339), e.TTLOr(opts.ttl()), ErrExpired)
	}
	return e, nil
}

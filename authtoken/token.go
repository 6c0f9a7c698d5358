// Package authtoken holds the shared token of Liqo's token authentication
// (Liqo v0.2–v0.10): the provider's Secret "auth-token" and, on the consumer,
// the Secret "remote-token-<providerID>" that keeps a provider's token and
// the status of the authentication with it.
//
// # Security
//
// A Token has unexported fields and comes only from Generate or Parse. It
// prints redacted with every fmt verb; Reveal returns its text, for the
// one place that must send or print it. Equal compares in constant time.
//
// # Errors
//
// Parse and the Secret readers wrap ErrMalformed. Store implementations wrap
// ErrNotFound and ErrExists as their contract says.
//
// # Concurrency
//
// Token is an immutable value. Ensure and Rotate are safe for concurrent use
// when the Store is.
package authtoken

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Size is the number of random bytes in a token; its text is twice as long.
const Size = 64

// TextSize is the length of a token's text: Size bytes in lowercase hex.
const TextSize = 2 * Size

var (
	// ErrMalformed reports a token text that is not TextSize lowercase hex
	// characters, or a Secret that does not hold one.
	ErrMalformed = errors.New("malformed authentication token")
	// ErrNotFound reports a Store or Secrets holding nothing by that name.
	ErrNotFound = errors.New("authentication token not found")
	// ErrExists reports a Store.Create refused because a token is stored.
	ErrExists = errors.New("authentication token already exists")
)

// Token is a shared authentication token. The zero value is no token: it
// equals no token, not even another zero Token.
type Token struct {
	text string
}

// Generate returns a new token of Size bytes read from r; nil means
// crypto/rand.Reader.
func Generate(r io.Reader) (Token, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return Token{}, fmt.Errorf("generating authentication token: %w", err)
	}
	return Token{text: hex.EncodeToString(b)}, nil
}

// Parse returns the token whose text is s: exactly TextSize lowercase hex
// characters. The error never quotes s.
func Parse(s string) (Token, error) {
	if len(s) != TextSize {
		return Token{}, fmt.Errorf("%w: %d characters, want %d", ErrMalformed, len(s), TextSize)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return Token{}, fmt.Errorf("%w: character %d is not a lowercase hex digit", ErrMalformed, i)
		}
	}
	return Token{text: s}, nil
}

// IsZero reports whether t is the zero Token.
func (t Token) IsZero() bool { return t.text == "" }

// Equal reports, in constant time, whether t and u are the same token. A
// zero Token equals nothing.
func (t Token) Equal(u Token) bool {
	if t.IsZero() || u.IsZero() {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(t.text), []byte(u.text)) == 1
}

// Reveal returns the token's text. It is the secret itself: send it, store
// it, print it where the user asked for it, never log it.
func (t Token) Reveal() string { return t.text }

// String never prints the token.
func (t Token) String() string {
	if t.IsZero() {
		return "authtoken.Token(<none>)"
	}
	return "authtoken.Token(<redacted>)"
}

// GoString is String.
func (t Token) GoString() string { return t.String() }

// Format makes every fmt verb print String.
func (t Token) Format(f fmt.State, _ rune) { io.WriteString(f, t.String()) }

// Store keeps the provider's token.
//
// Get returns the stored token, an error wrapping ErrNotFound when there is
// none, and one wrapping ErrMalformed when what is stored is not a token.
// Create stores t unless something is stored, and wraps ErrExists then.
// Replace stores t whatever is stored. Implementations are safe for
// concurrent use.
type Store interface {
	Get(ctx context.Context) (Token, error)
	Create(ctx context.Context, t Token) error
	Replace(ctx context.Context, t Token) error
}

// Ensure returns the stored token, generating one from r (nil means
// crypto/rand.Reader) and storing it
// when there is none or what is stored is not a token. A valid stored token
// is never overwritten: of concurrent callers on an empty Store, one
// creates the token and all return it.
func Ensure(ctx context.Context, s Store, r io.Reader) (Token, error) {
	t, err := s.Get(ctx)
	switch {
	case err == nil:
		return t, nil
	case errors.Is(err, ErrMalformed):
		return Rotate(ctx, s, r)
	case !errors.Is(err, ErrNotFound):
		return Token{}, err
	}
	t, err = Generate(r)
	if err != nil {
		return Token{}, err
	}
	switch err := s.Create(ctx, t); {
	case errors.Is(err, ErrExists):
		return s.Get(ctx)
	case err != nil:
		return Token{}, err
	}
	return t, nil
}

// Rotate stores a new token generated from r (nil means crypto/rand.Reader) in place of the stored one and
// returns it. The old token stops working at once for a server that reads
// the Store on each request, as authserver.Server does.
func Rotate(ctx context.Context, s Store, r io.Reader) (Token, error) {
	t, err := Generate(r)
	if err != nil {
		return Token{}, err
	}
	if err := s.Replace(ctx, t); err != nil {
		return Token{}, err
	}
	return t, nil
}

package saidentity

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/tenant"
)

// ErrRevoked reports a token the provider refuses: the identity was
// revoked (its ServiceAccount deleted) or the token expired. Errors
// wrapping it wrap identity.ErrRejected too. Refreshing cannot recover
// from it: the provider must Issue again.
var ErrRevoked = errors.New("the provider refuses the serviceaccount token")

// The window of a token's lifetime in which a Refresher refreshes it.
const (
	RefreshFrom = 0.7
	RefreshTo   = 0.9
)

// DefaultRetryInterval is how long a Refresher waits after a failed refresh
// that may succeed later, such as the provider being unreachable.
const DefaultRetryInterval = 30 * time.Second

// ConsumerPorts are the consumer's I/O for a Refresher. All are required.
type ConsumerPorts struct {
	// Tokens requests new tokens with the current one.
	Tokens SelfTokenRequester
	// Reviewer proves a new token works before it is stored.
	Reviewer identity.Reviewer
	// Secrets holds the kubeconfig Secret.
	Secrets SecretStore
}

// RefresherOptions tunes a Refresher. The zero value, like a nil pointer,
// uses the real clock, crypto/rand and DefaultRetryInterval.
type RefresherOptions struct {
	// Clock tells the time and waits; nil means the real clock.
	Clock clock.Clock
	// Rand supplies the jitter of refresh deadlines; nil means crypto/rand.
	Rand io.Reader
	// RetryInterval is the wait after a failed refresh that may succeed
	// later; zero means DefaultRetryInterval.
	RetryInterval time.Duration
	// OnRefresh, when set, is called by Run with each token stored.
	OnRefresh func(*Token)
	// OnError, when set, is called by Run with each failed refresh it
	// retries.
	OnError func(error)
}

// Refresher keeps a consumer's ServiceAccount identity on one provider
// alive: it replaces the token in the kubeconfig Secret before it expires.
type Refresher struct {
	ports      ConsumerPorts
	providerID string
	opts       RefresherOptions
	mu         sync.Mutex
}

// NewRefresher returns the Refresher of the consumer's identity on
// provider providerID, whose kubeconfig is in Secret SecretName(providerID)
// of the tenant namespace for providerID.
func NewRefresher(p ConsumerPorts, providerID string, opts *RefresherOptions) (*Refresher, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, fmt.Errorf("saidentity: %w", err)
	}
	if p.Tokens == nil || p.Reviewer == nil || p.Secrets == nil {
		return nil, fmt.Errorf("%w: every consumer port is required", ErrInvalidOptions)
	}
	r := &Refresher{ports: p, providerID: providerID}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Clock == nil {
		r.opts.Clock = clock.RealClock{}
	}
	if r.opts.Rand == nil {
		r.opts.Rand = rand.Reader
	}
	if r.opts.RetryInterval <= 0 {
		r.opts.RetryInterval = DefaultRetryInterval
	}
	return r, nil
}

// Load returns the stored kubeconfig and its token. It wraps ErrNotFound
// when there is no Secret, kubeconfig.ErrMalformed or ErrMalformedToken
// when it holds no ServiceAccount token kubeconfig.
func (r *Refresher) Load(ctx context.Context) (*kubeconfig.Config, *Token, error) {
	ns, name := tenant.Namespace(r.providerID).Name, SecretName(r.providerID)
	s, err := r.ports.Secrets.Get(ctx, ns, name)
	if err != nil {
		return nil, nil, fmt.Errorf("saidentity: reading the kubeconfig: %w", err)
	}
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	if err != nil {
		return nil, nil, fmt.Errorf("saidentity: Secret %s/%s: %w", ns, name, err)
	}
	tok, err := ParseToken(cfg.BearerToken(), time.Time{})
	if err != nil {
		return nil, nil, fmt.Errorf("saidentity: Secret %s/%s: %w", ns, name, err)
	}
	return cfg, tok, nil
}

// Deadline returns when to refresh tok: a random point between RefreshFrom
// and RefreshTo of its lifetime after it was issued, drawn from the
// Refresher's Rand.
func (r *Refresher) Deadline(tok *Token) (time.Time, error) {
	return r.deadline(tok.IssuedAt(), tok.Lifetime())
}

// deadline returns a random point between RefreshFrom and RefreshTo of
// lifetime after start.
func (r *Refresher) deadline(start time.Time, lifetime time.Duration) (time.Time, error) {
	var b [8]byte
	if _, err := io.ReadFull(r.opts.Rand, b[:]); err != nil {
		return time.Time{}, fmt.Errorf("saidentity: drawing the refresh deadline: %w", err)
	}
	u := float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53) // [0, 1)
	frac := RefreshFrom + (RefreshTo-RefreshFrom)*u
	return start.Add(time.Duration(frac * float64(lifetime))), nil
}

// Refresh replaces the stored token now: it requests a new token, with the
// current one, for the same lifetime (within MinExpiration..MaxExpiration),
// checks it is for the same ServiceAccount, proves it with a
// SelfSubjectReview, and only then writes the Secret. It returns the new
// token. On any error the stored Secret is unchanged.
func (r *Refresher) Refresh(ctx context.Context) (*Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, cur, err := r.Load(ctx)
	if err != nil {
		return nil, err
	}
	lifetime := min(max(cur.Lifetime(), MinExpiration), MaxExpiration)
	ns, name, uid := cur.ServiceAccount()
	next, err := r.ports.Tokens.Token(ctx, cfg, ns, name, TokenRequest{Expiration: lifetime})
	if errors.Is(err, identity.ErrRejected) {
		return nil, fmt.Errorf("saidentity: %w (%w): requesting a token with %v", ErrRevoked, err, cur)
	}
	if err != nil {
		return nil, fmt.Errorf("saidentity: requesting a token with %v: %w", cur, err)
	}
	if nns, nname, nuid := next.ServiceAccount(); nns != ns || nname != name || nuid != uid {
		return nil, fmt.Errorf("%w: %v, want %s/%s with UID %s", ErrWrongServiceAccount, next, ns, name, uid)
	}
	nextCfg, err := cfg.WithBearerToken(next.value)
	if err != nil {
		return nil, fmt.Errorf("saidentity: %w", err)
	}
	user, _, err := r.ports.Reviewer.Review(ctx, nextCfg)
	if errors.Is(err, identity.ErrRejected) {
		return nil, fmt.Errorf("saidentity: %w (%w): reviewing %v", ErrRevoked, err, next)
	}
	if err != nil {
		return nil, fmt.Errorf("saidentity: reviewing %v: %w", next, err)
	}
	if want := "system:serviceaccount:" + ns + ":" + name; user != want {
		return nil, fmt.Errorf("%w: the provider takes %v for %q, want %q", identity.ErrWrongUser, next, user, want)
	}
	s, err := SecretFor(r.providerID, nextCfg)
	if err != nil {
		return nil, err
	}
	if err := r.ports.Secrets.Write(ctx, s); err != nil {
		return nil, fmt.Errorf("saidentity: storing %v: %w", next, err)
	}
	return next, nil
}

// terminal reports an error a later Refresh cannot cure.
func terminal(err error) bool {
	return errors.Is(err, ErrRevoked) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrMalformedToken) ||
		errors.Is(err, kubeconfig.ErrMalformed) || errors.Is(err, ErrWrongServiceAccount) || errors.Is(err, identity.ErrWrongUser)
}

// Run refreshes the stored token at each deadline until ctx ends, and
// returns ctx's error then. A failed refresh that may succeed later is
// retried every RetryInterval (OnError sees it); one that cannot
// (ErrRevoked, ErrNotFound, a malformed Secret, a token for another
// ServiceAccount or user) ends Run with that error.
func (r *Refresher) Run(ctx context.Context) error {
	_, tok, err := r.Load(ctx)
	if err != nil {
		return err
	}
	deadline, err := r.Deadline(tok)
	if err != nil {
		return err
	}
	for {
		if err := r.sleepUntil(ctx, deadline); err != nil {
			return err
		}
		next, err := r.Refresh(ctx)
		switch {
		case err == nil:
			if r.opts.OnRefresh != nil {
				r.opts.OnRefresh(next)
			}
			// Counted from when the token arrived by the Refresher's clock,
			// not from its iat claim: the provider's clock may differ.
			if deadline, err = r.deadline(r.opts.Clock.Now(), next.Lifetime()); err != nil {
				return err
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case terminal(err):
			return err
		default:
			if r.opts.OnError != nil {
				r.opts.OnError(err)
			}
			deadline = r.opts.Clock.Now().Add(r.opts.RetryInterval)
		}
	}
}

func (r *Refresher) sleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(r.opts.Clock.Now())
	if d <= 0 {
		return ctx.Err()
	}
	timer := r.opts.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C():
		return nil
	}
}

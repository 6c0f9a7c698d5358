package consumer

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// Options tunes a Consumer. The zero value, like a nil pointer, uses
// the real clock, crypto/rand.Reader, Ed25519 for new keys, transcripts valid
// for tenant.DefaultTranscriptLifetime, the cluster key as TLS key, and no
// step observer.
type Options struct {
	Clock clock.PassiveClock
	Rand  io.Reader
	// KeyAlgorithm is the algorithm of new keys; an existing key is always
	// kept.
	KeyAlgorithm keys.Algorithm
	// TranscriptLifetime is how long the transcript of a Tenant is valid.
	TranscriptLifetime time.Duration
	// Strict gives each identity a fresh TLS key, stored in
	// Ports.IdentityKeys before its CSR is built, so the cluster key
	// only signs handshakes and never lands in a kubeconfig. Only kubepact
	// providers accept such Tenants: a Liqo provider requires the CSR to be
	// for the cluster key.
	Strict bool
	// KeyNamespace is the namespace of the cluster key and IdentityKeys:
	// the attestation of each key of IdentityKeys names it
	// (keys.Attester). Empty means keys.DefaultNamespace.
	KeyNamespace string
	// OnStep, when set, is called after each completed step.
	OnStep func(step.Done)
}

// Consumer runs the consumer's side of the handshake: it builds Tenants and
// applies the Identities providers return. It is safe for concurrent use.
type Consumer struct {
	id    string
	ports Ports
	opts  Options

	mu  sync.Mutex
	key *keys.PrivateKey // the cluster key, once read
	// previous is the key the cluster key replaced (keys.RotatingStore),
	// read with it; nil when none.
	previous crypto.PublicKey

	renewMu   sync.Mutex
	deadlines map[string]deadline // by provider: the renewal deadline drawn for the certificate held
}

// New returns the Consumer of cluster clusterID.
func New(clusterID string, ports Ports, opts *Options) (*Consumer, error) {
	if err := clusterid.Validate(clusterID); err != nil {
		return nil, err
	}
	c := &Consumer{id: clusterID, ports: ports}
	if opts != nil {
		c.opts = *opts
	}
	if err := ports.check(c.opts.Strict); err != nil {
		return nil, err
	}
	if c.opts.TranscriptLifetime <= 0 {
		c.opts.TranscriptLifetime = tenant.DefaultTranscriptLifetime
	}
	if c.opts.Clock == nil {
		c.opts.Clock = clock.RealClock{}
	}
	if c.opts.Rand == nil {
		c.opts.Rand = rand.Reader
	}
	if c.opts.KeyNamespace == "" {
		c.opts.KeyNamespace = keys.DefaultNamespace
	}
	return c, nil
}

// ClusterID returns the consumer's cluster ID.
func (c *Consumer) ClusterID() string { return c.id }

// OwnKeys reports whether the consumer can give an identity a TLS key of
// its own (TenantOptions.OwnKey): whether it has Ports.IdentityKeys.
func (c *Consumer) OwnKeys() bool { return c.ports.IdentityKeys != nil }

// step reports a completed step to the observer and, at V(1), to the
// logger in ctx.
func (c *Consumer) step(ctx context.Context, s step.Done) {
	s.Cluster = c.id
	logr.FromContextOrDiscard(ctx).V(1).Info(string(s.Name), "cluster", s.Cluster, "role", "consumer")
	if c.opts.OnStep != nil {
		c.opts.OnStep(s)
	}
}

// clusterKey returns the cluster key, reading it once; with create, it
// generates and stores one when there is none.
func (c *Consumer) clusterKey(ctx context.Context, create bool) (*keys.PrivateKey, error) {
	k, _, err := c.clusterKeys(ctx, create)
	return k, err
}

// clusterKeys returns the cluster key, as clusterKey does, and the key it
// replaced (keys.RotatingStore), nil when none, both read at once.
func (c *Consumer) clusterKeys(ctx context.Context, create bool) (*keys.PrivateKey, crypto.PublicKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != nil {
		return c.key, c.previous, nil
	}
	var (
		k        *keys.PrivateKey
		previous crypto.PublicKey
		err      error
	)
	if rs, ok := c.ports.Keys.(keys.RotatingStore); ok {
		// The key, with the key it replaced, in one read.
		k, previous, err = rs.GetWithPrevious(ctx)
	} else {
		k, err = c.ports.Keys.Get(ctx)
	}
	if create && errors.Is(err, keys.ErrNotFound) {
		k, err = keys.Ensure(ctx, c.ports.Keys, c.opts.Rand, c.opts.KeyAlgorithm)
	}
	if err != nil {
		return nil, nil, err
	}
	c.key, c.previous = k, previous
	return k, previous, nil
}

// tlsKey returns the key of the ControlPlane identity id for providerID: the
// identity's own key, or the next key of a renewal under way
// (renewal.NextKeyName), when id's certificate is for it; otherwise, for a
// Strict consumer, the identity's own key, and for any other the cluster
// key. Only keys this consumer attested count (heldKey).
func (c *Consumer) tlsKey(ctx context.Context, providerID string, id *authv1beta1.Identity) (*keys.PrivateKey, error) {
	if c.ports.IdentityKeys == nil {
		return c.clusterKey(ctx, false)
	}
	name, use := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	own, ownErr := c.heldKey(ctx, name, use)
	if ownErr != nil && !errors.Is(ownErr, keys.ErrUnattested) {
		return nil, ownErr
	}
	if cert, perr := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT); perr == nil {
		if own != nil && keys.Equal(cert.PublicKey, own.Public()) {
			return own, nil
		}
		next, nerr := c.heldKey(ctx, renewal.NextKeyName(name), use)
		switch {
		case nerr == nil && next != nil && keys.Equal(cert.PublicKey, next.Public()):
			return next, nil
		case nerr != nil && !errors.Is(nerr, keys.ErrUnattested):
			return nil, nerr
		}
	}
	switch {
	case own != nil && c.opts.Strict:
		return own, nil
	case c.opts.Strict && ownErr != nil:
		return nil, ownErr
	case c.opts.Strict:
		return nil, fmt.Errorf("%w: key %s", keys.ErrNotFound, name)
	}
	return c.clusterKey(ctx, false)
}

// String names the consumer. fmt never calls the formatting methods of
// unexported fields, so Consumer formats itself to keep its key out.
func (c *Consumer) String() string {
	if c == nil {
		return "kubepact.Consumer(<nil>)"
	}
	return fmt.Sprintf("kubepact.Consumer(%s, strict=%t)", c.id, c.opts.Strict)
}

// GoString is String.
func (c *Consumer) GoString() string { return c.String() }

// Format makes every fmt verb print String.
func (c *Consumer) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

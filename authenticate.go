package kubepact

import (
	"cmp"
	"context"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/step"
)

// AuthenticateOptions tunes Authenticate. The zero value, like a nil pointer,
// sends no proxy URL and refuses to change the endpoint of an identity the
// consumer already holds.
type AuthenticateOptions struct {
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
	// ReplaceEndpoint allows the new Identity to change the API server URL
	// or CA of the kubeconfig the consumer already holds for the provider
	// (ApplyOptions.ReplaceEndpoint). Authenticate reaches the provider
	// through the caller's own client, yet the endpoint it hands out comes
	// from the provider's configuration; a change of it (a moved API server,
	// a rotated CA, or a mistaken endpoint) is left to the caller to accept.
	ReplaceEndpoint bool
}

// Authenticate runs the whole handshake between a consumer and a provider
// that are both reachable: the provider issues a nonce, the consumer answers
// with a Tenant, the provider accepts it and the consumer applies the
// Identity, expecting it from p's cluster ID. The provider being
// kubepact's, the identity always gets a TLS key of its own
// (TenantOptions.OwnKey), so the consumer needs ConsumerPorts.IdentityKeys
// (ErrInvalidConfig otherwise): the cluster key only signs the handshake
// and never lands in the kubeconfig. Running it again after success
// changes nothing and returns the same identity. An Identity that changes
// the API server or CA already held is refused with ErrEndpointChanged
// unless opts.ReplaceEndpoint is set; the provider has then already
// accepted the Tenant, and running Authenticate again with the option set
// completes the handshake. With a ConsumerPorts.Reviewer, which a consumer
// that reaches the provider should have, the consumer asks the provider
// who the new kubeconfig authenticates as before it writes anything
// (identity.Confirm): credentials the provider refuses wrap
// identity.ErrRejected, and ones it takes for another user
// identity.ErrWrongUser.
//
// Requests that do not depend on each other go at once: the consumer's
// tenant namespace and cluster key, and the reads the provider's
// acceptance starts with (the stored Tenant, the revocation record, the
// certificate cache, the peer roles), while the provider issues the nonce;
// the signed-nonce Secret and the read of the Identity held while the
// provider accepts the Tenant (step.NonceSigned is reported once the nonce
// is signed; a failure to record it is returned once Accept is done).
func Authenticate(ctx context.Context, c *Consumer, p *Provider, opts *AuthenticateOptions) (*Authenticated, error) {
	// p is kubepact's: the identity gets a key of its own, and the cluster
	// key stays home. The consumer decides this, never the provider.
	topts := &TenantOptions{OwnKey: true}
	if c.ports.IdentityKeys == nil {
		return nil, fmt.Errorf("%w: Authenticate gives the identity a key of its own, which needs ConsumerPorts.IdentityKeys", ErrInvalidConfig)
	}
	var aopts *ApplyOptions
	if opts != nil {
		topts.ProxyURL = opts.ProxyURL
		aopts = &ApplyOptions{ReplaceEndpoint: opts.ReplaceEndpoint}
	}
	cs := c.Session(ctx, p.ClusterID())
	defer cs.Close()
	ps := p.Session(ctx, c.ClusterID())
	defer ps.Close()
	n, err := ps.IssueNonce(ctx)
	if err = cmp.Or(err, cs.Ready()); err != nil {
		return nil, err
	}
	t, err := cs.Tenant(ctx, n, topts)
	if err != nil {
		return nil, err
	}
	id, err := ps.Accept(ctx, t)
	if err != nil {
		return nil, err
	}
	return cs.Apply(ctx, id, aopts)
}

// A ProviderSession is one handshake on the provider's side, for one
// consumer, as Authenticate runs it in-process: the reads Accept starts
// with (the stored Tenant, the revocation record, the certificate cache,
// the peer roles) go while the nonce is issued, and the Tenant is
// verified against the nonce the session issued before it is redeemed.
// Close it when done: no read outlives it. A session is for one
// goroutine.
type ProviderSession struct {
	p          *Provider
	consumerID string
	reads      *acceptReads
	issued     *nonce.Nonce
}

// Session starts a handshake with consumerID: the reads of its Accept
// start at once.
func (p *Provider) Session(ctx context.Context, consumerID string) *ProviderSession {
	s := &ProviderSession{p: p, consumerID: consumerID}
	if clusterid.Validate(consumerID) == nil {
		s.reads = p.startReads(ctx, consumerID, false)
	}
	return s
}

// IssueNonce is Provider.IssueNonce for the session's consumer; Accept
// verifies against the nonce it returns.
func (s *ProviderSession) IssueNonce(ctx context.Context) (nonce.Nonce, error) {
	n, err := s.p.IssueNonce(ctx, s.consumerID)
	if err != nil {
		return n, err
	}
	if n.IsZero() {
		return n, stepError(step.NonceRetrieved, fmt.Errorf("%w: zero nonce", nonce.ErrMalformed))
	}
	s.issued = &n
	return n, nil
}

// Accept is Provider.Accept, with the session's reads and nonce. As
// Authenticate runs in-process, with no controller to remove it, the
// Tenant is recorded without tenant.Finalizer (see
// ProviderOptions.NoFinalizer).
func (s *ProviderSession) Accept(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Identity, error) {
	if s.issued == nil {
		return nil, stepError(step.NonceRetrieved, fmt.Errorf("%w: the session issued no nonce", ErrInvalidConfig))
	}
	return s.p.accept(ctx, t, s.reads, s.issued)
}

// Close waits for the session's reads.
func (s *ProviderSession) Close() {
	if s.reads != nil {
		s.reads.wait()
	}
}

// A ConsumerSession is one handshake on the consumer's side, with one
// provider, as Authenticate runs it in-process: the tenant namespace and
// the cluster key are ensured while the provider issues its nonce, and the
// signed-nonce Secret is written, and the Identity held read, while the
// provider accepts the Tenant. Close it when done: no request outlives
// it. A session is for one goroutine.
type ConsumerSession struct {
	c                 *Consumer
	providerID        string
	namespaced, keyed func() error
	recorded          func() error
	held              func() (*authv1beta1.Identity, error)
}

// Session starts a handshake with providerID: its tenant namespace and
// the cluster key are ensured at once.
func (c *Consumer) Session(ctx context.Context, providerID string) *ConsumerSession {
	return &ConsumerSession{c: c, providerID: providerID, namespaced: c.ensureNamespace(ctx, providerID), keyed: c.loadKey(ctx)}
}

// Ready waits until the tenant namespace and the cluster key are there.
func (s *ConsumerSession) Ready() error {
	return cmp.Or(s.namespaced(), s.keyed())
}

// Tenant builds the Tenant that answers n (Consumer.Tenant), then starts
// writing the signed-nonce Secret (step.NonceSigned is reported once the
// nonce is signed; a failure to write it is returned by Apply) and
// reading the Identity held.
func (s *ConsumerSession) Tenant(ctx context.Context, n nonce.Nonce, opts *TenantOptions) (*authv1beta1.Tenant, error) {
	if err := s.Ready(); err != nil {
		return nil, err
	}
	t, err := s.c.buildTenant(ctx, s.providerID, n, opts)
	if err != nil {
		return nil, err
	}
	s.recorded = startErr(func() error { return s.c.recordSignedNonce(ctx, s.providerID, n, t) })
	s.held = s.c.readHeld(ctx, s.providerID)
	s.c.step(ctx, step.Done{Name: step.NonceSigned})
	s.c.step(ctx, step.Done{Name: step.TenantGenerated})
	return t, nil
}

// Apply applies id, the provider's answer to the session's Tenant
// (Consumer.Apply), once the signed-nonce Secret is written.
func (s *ConsumerSession) Apply(ctx context.Context, id *authv1beta1.Identity, opts *ApplyOptions) (*Authenticated, error) {
	if s.recorded == nil {
		return nil, stepError(step.IdentityApplied, fmt.Errorf("%w: the session built no Tenant", ErrInvalidConfig))
	}
	if err := s.recorded(); err != nil {
		return nil, err
	}
	return s.c.apply(ctx, s.providerID, id, opts, s.held)
}

// Close waits for the session's requests.
func (s *ConsumerSession) Close() {
	_ = s.namespaced()
	_ = s.keyed()
	if s.recorded != nil {
		_ = s.recorded()
		_, _ = s.held()
	}
}

// Unauthenticate removes the consumer's Identity and kubeconfig Secret for
// the provider, then unpeers the consumer on the provider (Provider.Forget):
// its Tenant and binding go, the nonce and the cached certificate stay, so
// Authenticate with the same cluster key passes again at once, with the
// same nonce, as with Liqo. To revoke instead (a key that may have leaked),
// call Consumer.Forget and Provider.Revoke, or annotate the Tenant with
// lifecycle.RevokeAnnotation before. It refuses with ErrInUse while
// ResourceSlice identities exist on the consumer, and changes nothing then.
func Unauthenticate(ctx context.Context, c *Consumer, p *Provider) error {
	if err := c.Forget(ctx, p.ClusterID()); err != nil {
		return err
	}
	return p.Forget(ctx, c.ClusterID())
}

package kubepact

import (
	"cmp"
	"context"
	"fmt"

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
	providerID := p.ClusterID()
	// Each side's requests go at once where they do not depend on each
	// other: the consumer's tenant namespace and cluster key, and the reads
	// the provider's acceptance starts with, while the provider issues its
	// nonce; the signed nonce recorded, and the Identity already held read,
	// while the provider accepts the Tenant.
	namespaced := c.ensureNamespace(ctx, providerID)
	keyed := c.loadKey(ctx)
	var reads *acceptReads
	if clusterid.Validate(c.ClusterID()) == nil {
		reads = p.startReads(ctx, c.ClusterID(), false)
		defer reads.wait()
	}
	n, err := p.IssueNonce(ctx, c.ClusterID())
	nsErr, keyErr := namespaced(), keyed()
	if err = cmp.Or(err, nsErr, keyErr); err != nil {
		return nil, err
	}
	if n.IsZero() {
		return nil, stepError(step.NonceRetrieved, fmt.Errorf("%w: zero nonce", nonce.ErrMalformed))
	}
	t, err := c.buildTenant(ctx, providerID, n, topts)
	if err != nil {
		return nil, err
	}
	recorded := startErr(func() error { return c.recordSignedNonce(ctx, providerID, n, t) })
	held := c.readHeld(ctx, providerID)
	defer func() { _, _ = held() }() // no read outlives Authenticate
	c.step(ctx, step.Done{Name: step.NonceSigned})
	c.step(ctx, step.Done{Name: step.TenantGenerated})
	id, err := p.accept(ctx, t, reads, &n)
	if recErr := recorded(); err == nil {
		err = recErr
	}
	if err != nil {
		return nil, err
	}
	return c.apply(ctx, providerID, id, aopts, held)
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

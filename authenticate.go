package kubepact

import (
	"cmp"
	"context"
	"fmt"

	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
)

// AuthenticateOptions tunes Authenticate. The zero value, like a nil pointer,
// sends no proxy URL and refuses to change the endpoint of an identity the
// consumer already holds.
type AuthenticateOptions struct {
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
	// ReplaceEndpoint allows the new Identity to change the API server URL
	// or CA of the kubeconfig the consumer already holds for the provider
	// (consumer.ApplyOptions.ReplaceEndpoint). Authenticate reaches the provider
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
// (consumer.TenantOptions.OwnKey), so the consumer needs consumer.Ports.IdentityKeys
// (peer.ErrInvalidConfig otherwise): the cluster key only signs the handshake
// and never lands in the kubeconfig. Running it again after success
// changes nothing and returns the same identity. An Identity that changes
// the API server or CA already held is refused with consumer.ErrEndpointChanged
// unless opts.ReplaceEndpoint is set; the provider has then already
// accepted the Tenant, and running Authenticate again with the option set
// completes the handshake. With a consumer.Ports.Reviewer, which a consumer
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
func Authenticate(ctx context.Context, c *consumer.Consumer, p *provider.Provider, opts *AuthenticateOptions) (*consumer.Authenticated, error) {
	// p is kubepact's: the identity gets a key of its own, and the cluster
	// key stays home. The consumer decides this, never the provider.
	topts := &consumer.TenantOptions{OwnKey: true}
	if !c.OwnKeys() {
		return nil, fmt.Errorf("%w: Authenticate gives the identity a key of its own, which needs consumer.Ports.IdentityKeys", peer.ErrInvalidConfig)
	}
	var aopts *consumer.ApplyOptions
	if opts != nil {
		topts.ProxyURL = opts.ProxyURL
		aopts = &consumer.ApplyOptions{ReplaceEndpoint: opts.ReplaceEndpoint}
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

// Unauthenticate removes the consumer's Identity and kubeconfig Secret for
// the provider, then unpeers the consumer on the provider (Provider.Forget):
// its Tenant and binding go, the nonce and the cached certificate stay, so
// Authenticate with the same cluster key passes again at once, with the
// same nonce, as with Liqo. To revoke instead (a key that may have leaked),
// call Consumer.Forget and Provider.Revoke, or annotate the Tenant with
// lifecycle.RevokeAnnotation before. It refuses with consumer.ErrInUse while
// ResourceSlice identities exist on the consumer, and changes nothing then.
func Unauthenticate(ctx context.Context, c *consumer.Consumer, p *provider.Provider) error {
	if err := c.Forget(ctx, p.ClusterID()); err != nil {
		return err
	}
	return p.Forget(ctx, c.ClusterID())
}

// Provider is provider.Provider, the provider's side of the handshake.
type Provider = provider.Provider

// Consumer is consumer.Consumer, the consumer's side of the handshake.
type Consumer = consumer.Consumer

// Authenticated is consumer.Authenticated, what Authenticate returns.
type Authenticated = consumer.Authenticated

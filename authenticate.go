package kubepact

import "context"

// AuthenticateOptions tunes Authenticate. The zero value, like a nil pointer,
// sends no proxy URL.
type AuthenticateOptions struct {
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
}

// Authenticate runs the whole handshake between a consumer and a provider
// that are both reachable: the provider issues a nonce, the consumer answers
// with a Tenant, the provider accepts it and the consumer applies the
// Identity. Running it again after success changes nothing and returns the
// same identity.
func Authenticate(ctx context.Context, c *Consumer, p *Provider, opts *AuthenticateOptions) (*Authenticated, error) {
	n, err := p.IssueNonce(ctx, c.ClusterID())
	if err != nil {
		return nil, err
	}
	var topts *TenantOptions
	if opts != nil {
		topts = &TenantOptions{ProxyURL: opts.ProxyURL}
	}
	t, err := c.Tenant(ctx, p.ClusterID(), n, topts)
	if err != nil {
		return nil, err
	}
	id, err := p.Accept(ctx, t)
	if err != nil {
		return nil, err
	}
	return c.Apply(ctx, id)
}

// Unauthenticate removes the consumer's Identity and kubeconfig Secret for
// the provider, then the provider's Tenant, binding and cached certificate
// for the consumer. It refuses with ErrInUse while ResourceSlice identities
// exist on the consumer, and changes nothing then.
func Unauthenticate(ctx context.Context, c *Consumer, p *Provider) error {
	if err := c.Forget(ctx, p.ClusterID()); err != nil {
		return err
	}
	return p.Forget(ctx, c.ClusterID())
}

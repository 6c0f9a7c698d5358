package kubeconfig

import (
	"fmt"
	"io"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenParams describes a single-context kubeconfig that authenticates with
// a bearer token, such as a ServiceAccount token from the TokenRequest API.
type TokenParams struct {
	// Name names the cluster, the user and the context.
	Name string
	// Server is the API server URL.
	Server string
	// CA is the PEM CA bundle of the API server; optional, as in Params.
	CA []byte
	// Token is the bearer token. It is secret.
	Token string
	// Namespace is the context's default namespace; optional.
	Namespace string
	// ProxyURL is the proxy to reach Server through; optional, as in Params.
	ProxyURL string
}

// String prints the name, server, proxy and namespace, never the token.
func (p TokenParams) String() string {
	return Params{Name: p.Name, Server: p.Server, Namespace: p.Namespace, ProxyURL: p.ProxyURL}.String()
}

// GoString is String.
func (p TokenParams) GoString() string { return p.String() }

// Format makes every fmt verb print String.
func (p TokenParams) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

// BuildToken returns the bearer-token kubeconfig described by p. An empty
// p.CA leaves out certificate-authority-data.
func BuildToken(p TokenParams) (*Config, error) {
	if p.Name == "" || p.Server == "" || p.Token == "" {
		return nil, fmt.Errorf("%w: name, server and token are required", ErrInvalid)
	}
	user := clientcmdapi.NewAuthInfo()
	user.Token = p.Token
	return assemble(p.Name, p.Server, p.CA, p.ProxyURL, p.Namespace, user)
}

// BearerToken returns the bearer token of the current context's user, or ""
// when it has none. The token is secret: keep it out of logs and errors.
func (c *Config) BearerToken() string {
	if user := c.api.AuthInfos[c.ctx.AuthInfo]; user != nil {
		return user.Token
	}
	return ""
}

// WithBearerToken returns a copy of c whose current user authenticates with
// token instead; c is unchanged. It fails, wrapping ErrInvalid, when token
// is empty or c has no user for its current context.
func (c *Config) WithBearerToken(token string) (*Config, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: empty token", ErrInvalid)
	}
	api := c.api.DeepCopy()
	kctx := api.Contexts[api.CurrentContext]
	if kctx == nil || api.AuthInfos[kctx.AuthInfo] == nil {
		return nil, fmt.Errorf("%w: no user for the current context", ErrInvalid)
	}
	user := api.AuthInfos[kctx.AuthInfo]
	user.Token = token
	return &Config{api: api, ctx: kctx}, nil
}

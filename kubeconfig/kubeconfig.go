// Package kubeconfig turns an Identity into a kubeconfig and the Secret that
// holds it on the consumer.
//
// The kubeconfig is built as data with client-go's clientcmd API (one
// cluster, one user with client certificate and key, one current context
// whose default namespace is the remote tenant namespace, and the cluster's
// proxy-url when the Identity names one), then serialised with clientcmd.
//
// # Security
//
// A kubeconfig carries the consumer's private key. Config keeps it behind
// unexported fields and prints only its server, proxy, user and namespace,
// with any password in the server or proxy URL replaced as net/url's
// Redacted does; Params prints the same way. The output of Marshal and API,
// and the Secret, are secret.
//
// # Errors
//
// Build and FromIdentity wrap ErrInvalid; Parse wraps ErrMalformed. No
// error quotes a proxy URL with its password: the package checks proxy URLs
// itself rather than let clientcmd's validation, which quotes them whole,
// report them.
package kubeconfig

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

const (
	// SecretKey is the Secret data key holding the kubeconfig.
	SecretKey = "kubeconfig"
	// IdentityTypeLabel is the label carrying the Identity's type.
	IdentityTypeLabel = "liqo.io/identity-type"
	// RemoteTenantNamespaceAnnotation names the consumer's tenant namespace
	// on the provider.
	RemoteTenantNamespaceAnnotation = "liqo.io/remote-tenant-namespace"
	// MaxSize bounds the size of a kubeconfig accepted by Parse.
	MaxSize = 256 << 10
)

var (
	// ErrInvalid reports parameters that do not make a usable kubeconfig.
	ErrInvalid = errors.New("invalid kubeconfig parameters")
	// ErrMalformed reports bytes that are not a valid kubeconfig.
	ErrMalformed = errors.New("malformed kubeconfig")
)

// Params describes a single-context kubeconfig.
type Params struct {
	// Name names the cluster, the user and the context.
	Name string
	// Server is the API server URL.
	Server string
	// CA is the PEM CA bundle of the API server; optional. Without it the
	// kubeconfig has no certificate-authority-data and clients trust the
	// server's certificate through their system roots (a provider whose API
	// server has a publicly trusted certificate).
	CA []byte
	// Certificate is the PEM client certificate.
	Certificate []byte
	// Key is the client certificate's private key.
	Key *keys.PrivateKey
	// Namespace is the context's default namespace; optional.
	Namespace string
	// ProxyURL is the proxy to reach Server through, an http, https or
	// socks5 URL with a host; optional.
	ProxyURL string
}

// String prints the name, server, proxy and namespace, never the
// credentials, nor a password in the server or proxy URL.
func (p Params) String() string {
	s := fmt.Sprintf("kubeconfig.Params(name=%s server=%s namespace=%s", p.Name, printableURL(p.Server), p.Namespace)
	if p.ProxyURL != "" {
		s += " proxy=" + printableURL(p.ProxyURL)
	}
	return s + ")"
}

// GoString is String.
func (p Params) GoString() string { return p.String() }

// Format makes every fmt verb print String.
func (p Params) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

// Config is a kubeconfig with one cluster, one user and one current context.
// It is built by Build, FromIdentity or Parse, and prints redacted.
type Config struct {
	api *clientcmdapi.Config
	ctx *clientcmdapi.Context
}

// Build returns the kubeconfig described by p. An empty p.CA leaves out
// certificate-authority-data.
func Build(p Params) (*Config, error) {
	if p.Name == "" || p.Server == "" || len(p.Certificate) == 0 || p.Key == nil {
		return nil, fmt.Errorf("%w: name, server, certificate and key are required", ErrInvalid)
	}
	keyPEM, err := keys.MarshalPrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = bytes.Clone(p.Certificate)
	user.ClientKeyData = keyPEM
	return assemble(p.Name, p.Server, p.CA, p.ProxyURL, p.Namespace, user)
}

// assemble returns the kubeconfig of one cluster, user and context, all
// named name, current, with user authenticating to server; an empty ca
// leaves out certificate-authority-data. Its errors wrap ErrInvalid and
// name fields and paths, never the user's credentials.
func assemble(name, server string, ca []byte, proxyURL, namespace string, user *clientcmdapi.AuthInfo) (*Config, error) {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = server
	if len(ca) > 0 {
		cluster.CertificateAuthorityData = bytes.Clone(ca)
	}
	cluster.ProxyURL = proxyURL
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo, kctx.Namespace = name, name, namespace
	cfg.Clusters[name] = cluster
	cfg.AuthInfos[name] = user
	cfg.Contexts[name] = kctx
	cfg.CurrentContext = name
	if err := checkProxyURLs(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Config{api: cfg, ctx: kctx}, nil
}

// FromIdentity returns the kubeconfig for id, authenticating with key.
func FromIdentity(id *authv1beta1.Identity, key *keys.PrivateKey) (*Config, error) {
	p := Params{
		Name:        id.Name,
		Server:      id.Spec.AuthParams.APIServer,
		CA:          id.Spec.AuthParams.CA,
		Certificate: id.Spec.AuthParams.SignedCRT,
		Key:         key,
	}
	if id.Spec.Namespace != nil {
		p.Namespace = *id.Spec.Namespace
	}
	if id.Spec.AuthParams.ProxyURL != nil {
		p.ProxyURL = *id.Spec.AuthParams.ProxyURL
	}
	return Build(p)
}

// Marshal serialises c with clientcmd. The result is secret.
func (c *Config) Marshal() ([]byte, error) { return clientcmd.Write(*c.api) }

// API returns a copy of c as client-go's type. It holds the private key and,
// unlike Config, prints it: keep it out of logs and errors.
func (c *Config) API() *clientcmdapi.Config { return c.api.DeepCopy() }

// RESTConfig returns a client-go REST configuration for c's current context.
func (c *Config) RESTConfig() (*rest.Config, error) {
	return clientcmd.NewDefaultClientConfig(*c.api, nil).ClientConfig()
}

// Server returns the API server URL of the current context.
func (c *Config) Server() string { return c.cluster().Server }

// ProxyURL returns the proxy of the current context's cluster, if any.
func (c *Config) ProxyURL() string { return c.cluster().ProxyURL }

// Namespace returns the default namespace of the current context.
func (c *Config) Namespace() string { return c.ctx.Namespace }

// ClientCertificate returns the client certificate of the current context.
func (c *Config) ClientCertificate() (*x509.Certificate, error) {
	user := c.api.AuthInfos[c.ctx.AuthInfo]
	if user == nil || len(user.ClientCertificateData) == 0 {
		return nil, fmt.Errorf("%w: no client certificate data", ErrMalformed)
	}
	return csr.ParseCertificate(user.ClientCertificateData)
}

// User returns the user name the client certificate authenticates as (its
// common name), or "" when there is none.
func (c *Config) User() string {
	cert, err := c.ClientCertificate()
	if err != nil {
		return ""
	}
	return cert.Subject.CommonName
}

func (c *Config) cluster() *clientcmdapi.Cluster {
	if cl := c.api.Clusters[c.ctx.Cluster]; cl != nil {
		return cl
	}
	return &clientcmdapi.Cluster{}
}

// String prints the server, proxy (when there is one), user and namespace,
// never credentials, nor a password in the server or proxy URL.
func (c *Config) String() string {
	if c == nil || c.api == nil {
		return "kubeconfig(<nil>)"
	}
	proxy := ""
	if p := c.ProxyURL(); p != "" {
		proxy = " proxy=" + printableURL(p)
	}
	return fmt.Sprintf("kubeconfig(server=%s%s user=%s namespace=%s)", printableURL(c.Server()), proxy, c.User(), c.Namespace())
}

// GoString is String.
func (c *Config) GoString() string { return c.String() }

// Format makes every fmt verb print String.
func (c *Config) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// Parse reads a kubeconfig with clientcmd and checks it is valid, names a
// current context, and is self-contained: credentials and CAs inline, no
// file paths (which validation would open) and no exec or auth-provider
// plugins (which a client would run). Every proxy-url must be an http,
// https or socks5 URL with a host. A kubeconfig kubepact writes is always
// self-contained.
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformed, len(data), MaxSize)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// clientcmd's decoding errors quote offsets, not content.
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := selfContained(cfg); err != nil {
		return nil, err
	}
	if err := checkProxyURLs(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return nil, fmt.Errorf("%w: no current context", ErrMalformed)
	}
	return &Config{api: cfg, ctx: kctx}, nil
}

// selfContained refuses kubeconfigs that point outside themselves.
func selfContained(cfg *clientcmdapi.Config) error {
	for name, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			return fmt.Errorf("%w: cluster %q names a CA file", ErrMalformed, name)
		}
	}
	for name, u := range cfg.AuthInfos {
		switch {
		case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
			return fmt.Errorf("%w: user %q names a credential file", ErrMalformed, name)
		case u.Exec != nil || u.AuthProvider != nil:
			return fmt.Errorf("%w: user %q runs a credential plugin", ErrMalformed, name)
		}
	}
	return nil
}

// checkProxyURLs checks the proxy URL of every cluster in cfg as clientcmd
// does (http, https or socks5) and also asks for a host, so that
// printableURL prints it without its password. Its errors quote no URL:
// one that does not parse could hold a password anywhere.
func checkProxyURLs(cfg *clientcmdapi.Config) error {
	for name, c := range cfg.Clusters {
		if c.ProxyURL == "" {
			continue
		}
		u, err := url.Parse(c.ProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") || u.Opaque != "" || u.Host == "" {
			return fmt.Errorf("cluster %q: proxy-url is not an http, https or socks5 URL with a host", name)
		}
	}
	return nil
}

// printableURL returns s with any password replaced, as url.URL's Redacted
// does, or a placeholder when s is not a URL with a host, where a password
// could sit anywhere (url.Parse reads "user:pass@host" as a scheme and an
// opaque part).
func printableURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "<not a URL with a host>"
	}
	return u.Redacted()
}

// SecretName is the name of the Secret holding the kubeconfig of the
// Identity named identityName.
func SecretName(identityName string) string { return "kubeconfig-" + identityName }

// Secret returns the Secret that holds kubeconfig data for id, in id's
// namespace and owned by id when id has a UID.
func Secret(id *authv1beta1.Identity, data []byte) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(id.Name),
			Namespace: id.Namespace,
			Labels: map[string]string{
				clusterid.Label:   id.Spec.ClusterID,
				IdentityTypeLabel: string(id.Spec.Type),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{SecretKey: data},
	}
	if id.Spec.Type == authv1beta1.ControlPlaneIdentityType && id.Spec.Namespace != nil {
		s.Annotations = map[string]string{RemoteTenantNamespaceAnnotation: *id.Spec.Namespace}
	}
	if id.UID != "" {
		controller := true
		s.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: authv1beta1.SchemeGroupVersion.String(),
			Kind:       authv1beta1.IdentityKind,
			Name:       id.Name,
			UID:        id.UID,
			Controller: &controller,
		}}
	}
	return s
}

// SecretWriter writes the consumer's kubeconfig Secrets.
//
// Write creates s or replaces the data, labels, annotations and owner
// references of the Secret of the same name. Delete removes the Secret and
// succeeds when there is none. Implementations are safe for concurrent use.
type SecretWriter interface {
	Write(ctx context.Context, s *corev1.Secret) error
	Delete(ctx context.Context, namespace, name string) error
}

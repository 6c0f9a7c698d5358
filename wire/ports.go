package wire

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
)

// Errors of EndpointFromConfig, besides kube.ErrNoServer. None quotes the
// config's credentials.
var (
	// ErrNotHTTPS reports an API server URL that is not a plain https URL
	// (another scheme, or user info, a query or a fragment in it).
	ErrNotHTTPS = errors.New("API server URL is not a plain https URL")
	// ErrNoCA reports a rest.Config without a PEM certificate of the CA that
	// signs the API server's serving certificate.
	ErrNoCA = errors.New("rest config has no CA certificate for the API server")
)

// ProviderPortsOptions tunes NewProviderPorts. The zero value, like a nil
// pointer, signs certificates through the API server's CSR API (kube.CSRSigner
// with kube.Approver) and keeps cfg's rate limits (QPS and Burst, else
// client-go's defaults of 5 and 10).
type ProviderPortsOptions struct {
	// Signer, when set, signs consumers' certificates instead of the CSR
	// API: a *csr.LocalCA whose CA the API server's --client-ca-file names,
	// for a cluster whose API server signs no CSRs for
	// kubernetes.io/kube-apiserver-client.
	Signer csr.Signer
	// QPS and Burst, when positive, replace cfg's QPS and Burst (and any
	// RateLimiter of cfg) in the clients of the ports; zero keeps cfg's own,
	// and client-go's defaults (5 and 10) where cfg leaves them zero. See
	// NewProviderPorts for what a handshake needs.
	QPS   float32
	Burst int
}

// NewProviderPorts returns the ports of a provider.Provider over the API
// server of cfg: kube.Namespaces, kube.NonceStore, kube.TenantStore, kube.CSRSigner with
// kube.Approver (or opts.Signer), kube.CertificateCache, RBAC (also as ClusterRBAC),
// kube.SliceStore and the lifecycle ports; it leaves SlicePolicy and
// StorageClasses, which are policy, nil. It builds one
// clientset, one controller-runtime client (kube.NewClient), one HTTP client and one client-side rate
// limiter, shared by all the ports; cfg itself is not changed. It fails only
// when cfg cannot make a client.
//
// Rate limits: one handshake makes about 22 requests to the provider's API
// server when its certificate is signed through the CSR API (among them a
// watch that waits for the signature; 19 with a local signer), 7 to 9 to
// the consumer's, and one SelfSubjectReview to the provider with the new
// kubeconfig, outside these clients. Every request takes a token of the
// shared limiter, so at client-go's defaults (5 QPS, burst 10) a lone
// handshake waits about 2 seconds for tokens on the provider and handshakes
// in a row run one per 4 seconds. A provider that serves many consumers
// needs about 22 QPS per handshake a second and a burst of 22 per
// concurrent handshake: kubectl's 50 QPS and burst 300, which the kubepact
// CLI uses, fit two handshakes a second and a dozen at once.
func NewProviderPorts(cfg *rest.Config, opts *ProviderPortsOptions) (provider.Ports, error) {
	var o ProviderPortsOptions
	if opts != nil {
		o = *opts
	}
	client, typed, err := newClients(cfg, o.QPS, o.Burst)
	if err != nil {
		return provider.Ports{}, fmt.Errorf("provider ports: %w", err)
	}
	return providerPorts(client, typed, o.Signer), nil
}

// ConsumerPortsOptions tunes NewConsumerPorts. The zero value, like a nil
// pointer, keeps keys in keys.DefaultNamespace, confirms Identities online
// with a kube.IdentityReviewer that trusts the system roots for API servers
// without a CA, and keeps cfg's rate limits.
type ConsumerPortsOptions struct {
	// KeyNamespace holds the cluster key and the identities' own keys (of
	// a Strict consumer); empty means keys.DefaultNamespace ("liqo"), the
	// Liqo namespace, as in the kubepact CLI.
	KeyNamespace string
	// Offline leaves consumer.Ports.Reviewer nil, so Apply checks only what
	// the Identity itself allows (identity.Verify): for a consumer that
	// cannot reach its providers' API servers.
	Offline bool
	// Reviewer tunes the kube.IdentityReviewer (extra roots for a provider API
	// server whose kubeconfig has no CA, a timeout); nil uses its defaults.
	Reviewer *kube.IdentityReviewerOptions
	// QPS and Burst, when positive, replace cfg's QPS and Burst (and any
	// RateLimiter of cfg); zero keeps cfg's own. A handshake makes 8 to 12
	// requests to the consumer's API server (12 for a Strict consumer), so
	// client-go's defaults (5 QPS, burst 10) suffice for one at a time.
	QPS   float32
	Burst int
}

// NewConsumerPorts returns every port of a consumer.Consumer over the API
// server of cfg: kube.Namespaces, kube.KeyStore and kube.Keyring in opts.KeyNamespace,
// kube.IdentityStore, kube.SecretWriter, kube.SliceStore, and a kube.IdentityReviewer as Reviewer (unless
// opts.Offline), so that Authenticate and Apply ask the provider who the new
// kubeconfig authenticates as before writing it. The kube.Keyring makes the ports
// fit a Strict consumer as well as a Compatible one. The ports share one
// clientset, one controller-runtime client and one rate limiter; cfg itself is not
// changed. It fails when cfg cannot make a client or opts.Reviewer is
// refused by kube.NewIdentityReviewer.
func NewConsumerPorts(cfg *rest.Config, opts *ConsumerPortsOptions) (consumer.Ports, error) {
	var o ConsumerPortsOptions
	if opts != nil {
		o = *opts
	}
	client, typed, err := newClients(cfg, o.QPS, o.Burst)
	if err != nil {
		return consumer.Ports{}, fmt.Errorf("consumer ports: %w", err)
	}
	ports, err := consumerPorts(client, typed, o.KeyNamespace, o.Offline, o.Reviewer)
	if err != nil {
		return consumer.Ports{}, fmt.Errorf("consumer ports: %w", err)
	}
	return ports, nil
}

// newClients returns a clientset and a typed controller-runtime client for
// a copy of cfg,
// sharing one HTTP client and one token-bucket rate limiter: qps and burst
// when positive, else cfg's, else client-go's defaults. A RateLimiter set
// in cfg is kept unless qps or burst replace it; a negative QPS in cfg
// turns rate limiting off, as in client-go.
func newClients(cfg *rest.Config, qps float32, burst int) (kubernetes.Interface, client.Client, error) {
	if cfg == nil {
		return nil, nil, fmt.Errorf("%w: nil rest config", kube.ErrNoServer)
	}
	cfg = rest.CopyConfig(cfg)
	if qps > 0 || burst > 0 {
		cfg.RateLimiter = nil
		if qps > 0 {
			cfg.QPS = qps
		}
		if burst > 0 {
			cfg.Burst = burst
		}
	}
	if cfg.QPS == 0 {
		cfg.QPS = rest.DefaultQPS
	}
	if cfg.Burst <= 0 {
		cfg.Burst = rest.DefaultBurst
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	h, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kube.NewClientset(cfg, h)
	if err != nil {
		return nil, nil, err
	}
	typed, err := kube.NewClient(cfg, h)
	if err != nil {
		return nil, nil, err
	}
	return cs, typed, nil
}

// EndpointFromConfig returns how consumers reach the API server of cfg, for
// provider.New: the server URL (cfg.Host, https assumed when it has
// no scheme, as client-go does) and the PEM CA of its serving certificate
// (cfg.CAData, else the file cfg.CAFile names). Consumers get exactly this
// URL, so cfg must name the API server as they reach it;
// TLSClientConfig.ServerName is not carried. It returns kube.ErrNoServer,
// ErrNotHTTPS or ErrNoCA, or the *fs.PathError of an unreadable CA file;
// no error quotes credentials.
func EndpointFromConfig(cfg *rest.Config) (provider.Endpoint, error) {
	if cfg == nil || cfg.Host == "" {
		return provider.Endpoint{}, fmt.Errorf("endpoint: %w", kube.ErrNoServer)
	}
	// A Host without a scheme is https when TLS is configured, as it must
	// be here. The parse error is dropped: it would quote the Host, and
	// with it any password in it.
	u, _, err := rest.DefaultServerURL(cfg.Host, "", schema.GroupVersion{}, true)
	if err != nil || u.Host == "" {
		return provider.Endpoint{}, fmt.Errorf("endpoint: %w: its host is neither a URL nor host:port", kube.ErrNoServer)
	}
	if u.Scheme != "https" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return provider.Endpoint{}, fmt.Errorf("endpoint: %w: scheme %q, host %s", ErrNotHTTPS, u.Scheme, u.Host)
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return provider.Endpoint{}, fmt.Errorf("endpoint: reading the CA of %s: %w", u.Host, err)
		}
	}
	if len(ca) == 0 {
		return provider.Endpoint{}, fmt.Errorf("endpoint: %w: consumers need it to trust %s; "+
			"use a config with certificate-authority-data or certificate-authority", ErrNoCA, u.Host)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return provider.Endpoint{}, fmt.Errorf("endpoint: %w: the CA of %s holds no PEM certificate", ErrNoCA, u.Host)
	}
	return provider.Endpoint{Server: u.String(), CA: append([]byte(nil), ca...)}, nil
}

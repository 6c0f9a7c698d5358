package authserver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/tenant"
)

// IdentitySecretPrefix begins the name of the consumer's Secret keeping the
// identity a provider returned: "remote-identity-<providerID>", in the
// tenant namespace of the provider.
const IdentitySecretPrefix = "remote-identity-"

// Data keys of the remote identity Secret.
const (
	identityCertificateKey = "certificate"
	identityServerKey      = "apiServerUrl"
	identityCAKey          = "apiServerCA"
	identityNamespaceKey   = "namespace"
)

// maxResponseBytes bounds what Authenticate reads of an answer.
const maxResponseBytes = 1 << 20

// IdentitySecretName is the name of the Secret keeping providerID's identity.
func IdentitySecretName(providerID string) string { return IdentitySecretPrefix + providerID }

// ConsumerPorts are the consumer's I/O beyond its consumer.Consumer. All
// are required.
type ConsumerPorts struct {
	// Namespaces ensures the tenant namespace of the provider.
	Namespaces tenant.Namespaces
	// Secrets keeps the remote token and remote identity Secrets.
	Secrets authtoken.Secrets
}

// Remote is the provider a consumer authenticates with.
type Remote struct {
	// ProviderID is the provider's cluster ID; /ids must say the same.
	ProviderID string
	// URL is the https base URL of the provider's authentication server.
	URL string
	// CA is the PEM CA the server's certificate must chain to. It is the
	// only root trusted: the system roots are not.
	CA []byte
	// Token is the provider's token; zero for a provider that accepts an
	// empty one.
	Token authtoken.Token
}

// AuthenticateOptions tunes Authenticate. The zero value, like a nil
// pointer, names no cluster, keeps the remote token Secret in
// authtoken.DefaultNamespace, makes Ed25519 keys from crypto/rand.Reader,
// uses the real clock, gives each HTTP request 30 seconds, and refuses to
// change the endpoint of a kubeconfig already held.
type AuthenticateOptions struct {
	// ClusterName is the consumer's name sent with the request.
	ClusterName string
	// Namespace holds the remote token Secret (the Liqo namespace).
	Namespace    string
	KeyAlgorithm keys.Algorithm
	Rand         io.Reader
	Clock        clock.PassiveClock
	// RequestTimeout bounds each HTTP request.
	RequestTimeout time.Duration
	// ReplaceEndpoint is consumer.ApplyOptions.ReplaceEndpoint.
	ReplaceEndpoint bool
}

// Authenticate obtains c's ControlPlane identity on remote's provider with
// the shared token, and returns it applied: the Identity
// "controlplane-<providerID>" and its kubeconfig Secret, as the nonce
// handshake leaves them.
//
// In order, each step persisted before the next: it checks that /ids names
// remote.ProviderID; ensures the tenant namespace; records the token in
// "remote-token-<providerID>" with status Pending; stores the identity's
// key (ports.Keys) before it builds and posts the CSR (CN = c's cluster ID,
// O = liqo.io); stores the answer in "remote-identity-<providerID>" at once;
// checks the certificate (for the stored key, client auth only, not a CA:
// identity.Verify); applies it (consumer.Consumer.Apply); and records
// status Established. A wrong token or a refusal records Denied
// (EmptyDenied when no token was sent).
//
// Running it again resumes: a stored identity is applied without asking the
// provider again, and a stored key is re-used, so a provider that issued a
// certificate for it returns the same one. The stored identity is never
// deleted or overwritten by Authenticate: one that fails the checks makes
// every run fail, naming its Secret, until a person who has looked at it
// deletes it.
func Authenticate(ctx context.Context, c *consumer.Consumer, ports ConsumerPorts, remote Remote, opts *AuthenticateOptions) (*consumer.Authenticated, error) {
	o := opts.withDefaults()
	if c == nil || ports.Namespaces == nil || ports.Secrets == nil {
		return nil, fmt.Errorf("%w: Authenticate needs a consumer, Namespaces and Secrets", peer.ErrInvalidConfig)
	}
	providerID := remote.ProviderID
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	hc, base, err := newHTTPClient(remote, o.RequestTimeout)
	if err != nil {
		return nil, err
	}
	a := &authentication{c: c, ports: ports, remote: remote, o: o, hc: hc, base: base}
	if err := a.checkProvider(ctx); err != nil {
		return nil, err
	}
	if err := a.ensureNamespaces(ctx); err != nil {
		return nil, err
	}
	resp, err := a.heldIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		if resp, err = a.requestIdentity(ctx); err != nil {
			return nil, err
		}
	}
	key, err := c.IdentityKey(ctx, providerID)
	if err != nil {
		return nil, err
	}
	id, err := a.checkIdentity(resp, key.Public())
	if err != nil {
		return nil, errors.Join(err, a.setStatus(ctx, authtoken.StatusDenied))
	}
	done, err := c.Apply(ctx, providerID, id, &consumer.ApplyOptions{ReplaceEndpoint: o.ReplaceEndpoint})
	if err != nil {
		return nil, err
	}
	if err := a.setStatus(ctx, authtoken.StatusEstablished); err != nil {
		return nil, err
	}
	return done, nil
}

// withDefaults returns a copy of o, or of the zero value when o is nil,
// with every unset field set to its documented default.
func (o *AuthenticateOptions) withDefaults() AuthenticateOptions {
	var d AuthenticateOptions
	if o != nil {
		d = *o
	}
	if d.Namespace == "" {
		d.Namespace = authtoken.DefaultNamespace
	}
	if d.Rand == nil {
		d.Rand = rand.Reader
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = 30 * time.Second
	}
	return d
}

// authentication is one run of Authenticate, with its checked inputs and
// its HTTP client for the provider's server.
type authentication struct {
	c      *consumer.Consumer
	ports  ConsumerPorts
	remote Remote
	o      AuthenticateOptions
	hc     *http.Client
	base   *url.URL
}

// checkProvider checks that the server's /ids names remote.ProviderID
// (ErrWrongProvider).
func (a *authentication) checkProvider(ctx context.Context) error {
	ids, err := getIDs(ctx, a.hc, a.base)
	if err != nil {
		return err
	}
	if ids.ClusterID != a.remote.ProviderID {
		return fmt.Errorf("%w: %s names cluster %q, want %q", ErrWrongProvider, a.base.Redacted(), ids.ClusterID, a.remote.ProviderID)
	}
	return nil
}

// ensureNamespaces ensures the tenant namespace of the provider and the
// namespace of the remote token Secret.
func (a *authentication) ensureNamespaces(ctx context.Context) error {
	if err := a.ports.Namespaces.Ensure(ctx, tenant.Namespace(a.remote.ProviderID)); err != nil {
		return err
	}
	return a.ports.Namespaces.Ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.o.Namespace}})
}

// setStatus records s in the remote token Secret.
func (a *authentication) setStatus(ctx context.Context, s authtoken.Status) error {
	return a.ports.Secrets.Apply(ctx, authtoken.RemoteSecret(a.o.Namespace, authtoken.Remote{ProviderID: a.remote.ProviderID, Token: a.remote.Token, Status: s}))
}

// heldIdentity returns the identity stored in the remote identity Secret,
// nil when there is none, and identity.ErrMalformed when the Secret holds
// no certificate or API server.
func (a *authentication) heldIdentity(ctx context.Context) (*CertificateResponse, error) {
	held, err := a.ports.Secrets.Get(ctx, clusterid.TenantNamespace(a.remote.ProviderID), IdentitySecretName(a.remote.ProviderID))
	switch {
	case err == nil:
		return parseIdentitySecret(held)
	case errors.Is(err, authtoken.ErrNotFound):
		return nil, nil
	default:
		return nil, err
	}
}

// requestIdentity records status Pending, posts a CSR for the identity's
// stored key and stores the answer in the remote identity Secret. A wrong
// token or a refusal records Denied (EmptyDenied when no token was sent).
func (a *authentication) requestIdentity(ctx context.Context) (*CertificateResponse, error) {
	providerID := a.remote.ProviderID
	if err := a.setStatus(ctx, authtoken.StatusPending); err != nil {
		return nil, err
	}
	// Stored before the CSR is built: a retry after a crash re-uses it,
	// and a provider that signed it answers with the same certificate.
	key, err := a.c.IdentityKey(ctx, providerID)
	if err != nil {
		return nil, err
	}
	pemCSR, err := csr.Create(a.o.Rand, key, csr.ControlPlaneSubject(a.c.ClusterID()))
	if err != nil {
		return nil, err
	}
	resp, err := postCSR(ctx, a.hc, a.base, &CertificateRequest{
		Cluster:                   ClusterIdentity{ClusterID: a.c.ClusterID(), ClusterName: a.o.ClusterName},
		DestinationClusterToken:   a.remote.Token.Reveal(),
		CertificateSigningRequest: pemCSR,
	})
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRefused) {
		return nil, errors.Join(err, a.setStatus(ctx, deniedStatus(a.remote.Token)))
	}
	if err != nil {
		return nil, err
	}
	// It cannot be fetched again by another key: keep it before
	// anything else can fail.
	if err := a.ports.Secrets.Apply(ctx, identitySecret(providerID, resp)); err != nil {
		return nil, err
	}
	return resp, nil
}

// deniedStatus is the status of a refused request sent with tok:
// EmptyDenied when tok is zero, else Denied.
func deniedStatus(tok authtoken.Token) authtoken.Status {
	if tok.IsZero() {
		return authtoken.StatusEmptyDenied
	}
	return authtoken.StatusDenied
}

// checkIdentity builds the Identity of resp and checks it for pub with
// identity.Verify. Its errors name the remote identity Secret.
func (a *authentication) checkIdentity(resp *CertificateResponse, pub crypto.PublicKey) (*authv1beta1.Identity, error) {
	providerID := a.remote.ProviderID
	id, err := identity.Build(providerID, authv1beta1.AuthParams{CA: resp.APIServerCA, SignedCRT: resp.Certificate, APIServer: resp.APIServerURL},
		&identity.BuildOptions{TenantNamespace: resp.Namespace})
	if err == nil {
		_, err = identity.Verify(id, a.c.ClusterID(), pub, a.o.Clock.Now(), nil)
	}
	if err != nil {
		return nil, fmt.Errorf("the identity stored in Secret %s/%s: %w", clusterid.TenantNamespace(providerID), IdentitySecretName(providerID), err)
	}
	return id, nil
}

// ReadStatus returns the status of c's authentication with providerID, as
// recorded in the remote token Secret in namespace: StatusNone when there
// is no such Secret.
func ReadStatus(ctx context.Context, s authtoken.Secrets, namespace, providerID string) (authtoken.Status, error) {
	sec, err := s.Get(ctx, namespace, authtoken.RemoteSecretName(providerID))
	if errors.Is(err, authtoken.ErrNotFound) {
		return authtoken.StatusNone, nil
	}
	if err != nil {
		return "", err
	}
	r, err := authtoken.ParseRemoteSecret(sec)
	if err != nil {
		return "", err
	}
	return r.Status, nil
}

func identitySecret(providerID string, r *CertificateResponse) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      IdentitySecretName(providerID),
			Namespace: clusterid.TenantNamespace(providerID),
			Labels:    map[string]string{clusterid.Label: providerID},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			identityCertificateKey: r.Certificate,
			identityServerKey:      []byte(r.APIServerURL),
			identityCAKey:          r.APIServerCA,
			identityNamespaceKey:   []byte(r.Namespace),
		},
	}
}

func parseIdentitySecret(s *corev1.Secret) (*CertificateResponse, error) {
	r := &CertificateResponse{
		Certificate:  s.Data[identityCertificateKey],
		APIServerURL: string(s.Data[identityServerKey]),
		APIServerCA:  s.Data[identityCAKey],
		Namespace:    string(s.Data[identityNamespaceKey]),
	}
	if len(r.Certificate) == 0 || r.APIServerURL == "" {
		return nil, fmt.Errorf("%w: Secret %s/%s holds no certificate or API server", identity.ErrMalformed, s.Namespace, s.Name)
	}
	return r, nil
}

// newHTTPClient returns a client trusting only remote.CA, and the server's
// base URL.
func newHTTPClient(remote Remote, timeout time.Duration) (*http.Client, *url.URL, error) {
	base, err := url.Parse(remote.URL)
	if err != nil || base.Scheme != "https" || base.Host == "" || base.User != nil {
		return nil, nil, fmt.Errorf("%w: the authentication server URL must be https://host[:port] without user information", peer.ErrInvalidConfig)
	}
	pool := x509.NewCertPool()
	if len(remote.CA) == 0 || !pool.AppendCertsFromPEM(remote.CA) {
		return nil, nil, fmt.Errorf("%w: the authentication server's CA must be a PEM certificate", peer.ErrInvalidConfig)
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 2,
		Proxy:               http.ProxyFromEnvironment,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a redirect would carry the token elsewhere
	}}, base, nil
}

func endpoint(base *url.URL, path string) string {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

func getIDs(ctx context.Context, hc *http.Client, base *url.URL) (*IDs, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint(base, IDsPath), nil)
	if err != nil {
		return nil, err
	}
	ids := &IDs{}
	if err := do(hc, req, http.StatusOK, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

func postCSR(ctx context.Context, hc *http.Client, base *url.URL, body *CertificateRequest) (*CertificateResponse, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(base, CertificatePath), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp := &CertificateResponse{}
	if err := do(hc, req, http.StatusAccepted, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// do sends req and decodes an answer of status want into out; any other
// status becomes the API's error, with the server's message.
func do(hc *http.Client, req *http.Request, want int, out any) error {
	res, err := hc.Do(req)
	if err != nil {
		// url.Error names the URL and the cause, never the body.
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("%w: reading the answer: %w", ErrServer, err)
	}
	if len(body) > maxResponseBytes {
		return fmt.Errorf("%w: answer over %d bytes", ErrProtocol, maxResponseBytes)
	}
	if res.StatusCode == want {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%w: status %d with a body that is not the API's", ErrProtocol, res.StatusCode)
		}
		return nil
	}
	var msg errorResponse
	_ = json.Unmarshal(body, &msg)
	var sentinel error
	switch code := res.StatusCode; {
	case code == http.StatusBadRequest, code == http.StatusUnsupportedMediaType:
		sentinel = ErrBadRequest
	case code == http.StatusUnauthorized:
		sentinel = ErrUnauthorized
	case code == http.StatusForbidden:
		sentinel = ErrRefused
	case code == http.StatusRequestEntityTooLarge:
		sentinel = ErrTooLarge
	case code == http.StatusTooManyRequests:
		sentinel = ErrRateLimited
	case code >= 500:
		sentinel = ErrServer
	default:
		sentinel = ErrProtocol
	}
	if msg.Message == "" {
		return fmt.Errorf("%w: %s %s: status %d", sentinel, req.Method, req.URL.Path, res.StatusCode)
	}
	return fmt.Errorf("%w: %s %s: status %d: %.200q", sentinel, req.Method, req.URL.Path, res.StatusCode, msg.Message)
}

package authserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/wire/memory"
)

// logBuffer collects a logger's lines, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 2})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fixture is a provider in memory serving over TLS on loopback.
type fixture struct {
	provider *memory.Cluster
	tokens   *fake.TokenStore
	token    authtoken.Token
	server   *authserver.Server
	url      string
	ca       []byte
	tlsCfg   *tls.Config
	logs     *logBuffer
}

const providerID = "provider-x"

func newFixture(t *testing.T, opts *authserver.Options) *fixture {
	t.Helper()
	p, err := memory.NewCluster(providerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{provider: p, tokens: &fake.TokenStore{}, logs: &logBuffer{}}
	if f.token, err = authtoken.Ensure(context.Background(), f.tokens, rand.Reader); err != nil {
		t.Fatal(err)
	}
	o := authserver.Options{}
	if opts != nil {
		o = *opts
	}
	o.Logger = f.logs.logger()
	if f.server, err = authserver.New(providerID, p.Endpoint(), p.ProviderPorts(), f.tokens, &o); err != nil {
		t.Fatal(err)
	}
	sec, err := authserver.ServingSecret("liqo", "auth-tls", []string{"127.0.0.1", "localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.ca = sec.Data[authserver.CAKey]
	if f.tlsCfg, err = authserver.TLSConfig(sec); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.url = "https://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.server.Serve(ctx, ln, f.tlsCfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

// remote is how a consumer holding tok reaches f.
func (f *fixture) remote(tok authtoken.Token) authserver.Remote {
	return authserver.Remote{ProviderID: providerID, URL: f.url, CA: f.ca, Token: tok}
}

// httpClient trusts f's CA.
func (f *fixture) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// post sends body to the certificate endpoint and returns the status and
// the answer's body.
func (f *fixture) post(t *testing.T, body []byte) (int, string) {
	t.Helper()
	res, err := f.httpClient().Post(f.url+authserver.CertificatePath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// assertNothingIssued fails when the provider signed, cached or bound
// anything, or made a tenant namespace.
func (f *fixture) assertNothingIssued(t *testing.T, consumerID string) {
	t.Helper()
	if n := f.provider.Signer.Signed(); n != 0 {
		t.Errorf("provider signed %d certificates", n)
	}
	if n := f.provider.Certificates.Len(); n != 0 {
		t.Errorf("provider cached %d certificates", n)
	}
	if _, ok := f.provider.RBAC.RoleBinding("liqo-tenant-"+consumerID, "liqo-binding-liqo-remote-controlplane"); ok {
		t.Error("provider bound the consumer")
	}
	if _, ok := f.provider.Namespaces.Get("liqo-tenant-" + consumerID); ok {
		t.Error("provider made the tenant namespace")
	}
}

// consumer is one consumer cluster in memory.
type memConsumer struct {
	cluster *memory.Cluster
	c       *kubepact.Consumer
	secrets *fake.Secrets
}

func newConsumer(t testing.TB, id string) *memConsumer {
	t.Helper()
	cl, err := memory.NewCluster(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(id, cl.ConsumerPorts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &memConsumer{cluster: cl, c: c, secrets: &fake.Secrets{}}
}

func (c *memConsumer) ports() authserver.ConsumerPorts {
	return authserver.ConsumerPorts{Namespaces: c.cluster.Namespaces, Secrets: c.secrets}
}

func (c *memConsumer) status(t *testing.T) authtoken.Status {
	t.Helper()
	s, err := authserver.ReadStatus(context.Background(), c.secrets, authtoken.DefaultNamespace, providerID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request is a certificate request for consumerID with a CSR of subject
// for a new key.
func request(t *testing.T, consumerID string, tok string, subject pkix.Name, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return requestFor(t, key, consumerID, tok, subject, tmpl)
}

func requestFor(t *testing.T, key *keys.PrivateKey, consumerID string, tok string, subject pkix.Name, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	if tmpl == nil {
		tmpl = &x509.CertificateRequest{}
	}
	tmpl.Subject = subject
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(authserver.CertificateRequest{
		Cluster:                   authserver.ClusterIdentity{ClusterID: consumerID},
		DestinationClusterToken:   tok,
		CertificateSigningRequest: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

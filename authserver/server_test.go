package authserver_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
)

func TestIDs(t *testing.T) {
	f := newFixture(t, &authserver.Options{ClusterName: "Provider X"})
	res, err := f.httpClient().Get(f.url + authserver.IDsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got map[string]string
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"clusterId": providerID, "clusterName": "Provider X"}
	if res.StatusCode != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET /ids: %d %v, want 200 %v", res.StatusCode, got, want)
	}
}

// TestAuthenticate runs the whole flow in memory: the consumer ends with
// the Identity and kubeconfig Secret of the nonce handshake, its status
// Established, and the identity and its key stored.
func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	c := newConsumer(t, "consumer-a")
	done, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.status(t); got != authtoken.StatusEstablished {
		t.Fatalf("status %s, want Established", got)
	}
	if done.Kubeconfig.User() != "consumer-a" || done.Kubeconfig.Namespace() != "liqo-tenant-consumer-a" {
		t.Fatalf("kubeconfig for user %q namespace %q", done.Kubeconfig.User(), done.Kubeconfig.Namespace())
	}
	if _, ok := c.cluster.Secrets.Get("liqo-tenant-"+providerID, kubeconfig.SecretName(identity.ControlPlaneName(providerID))); !ok {
		t.Fatal("no kubeconfig Secret")
	}
	if _, err := c.secrets.Get(ctx, "liqo-tenant-"+providerID, authserver.IdentitySecretName(providerID)); err != nil {
		t.Fatalf("no remote identity Secret: %v", err)
	}
	sec, err := c.secrets.Get(ctx, authtoken.DefaultNamespace, authtoken.RemoteSecretName(providerID))
	if err != nil {
		t.Fatal(err)
	}
	if sec.Labels[authtoken.ClusterIDLabel] != providerID || sec.Labels[authtoken.AuthTokenLabel] != "" {
		t.Fatalf("remote token Secret labels %v", sec.Labels)
	}
	if _, ok := sec.Labels[authtoken.AuthTokenLabel]; !ok {
		t.Fatal("remote token Secret lacks the auth-token label")
	}
	if _, ok := f.provider.RBAC.RoleBinding("liqo-tenant-consumer-a", "liqo-binding-liqo-remote-controlplane"); !ok {
		t.Fatal("provider did not bind the consumer")
	}
	if strings.Contains(f.logs.String(), f.token.Reveal()) {
		t.Fatal("the token reached the server's log")
	}
}

// TestRejectedTokens: a wrong, empty, oversized or malformed token is
// refused with a typed error, nothing is issued, and the token is echoed
// neither in the answer nor in the log.
func TestRejectedTokens(t *testing.T) {
	other, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		token  string
		status int
	}{
		{"Wrong", other.Reveal(), http.StatusUnauthorized},
		{"Empty", "", http.StatusUnauthorized},
		{"Oversized", strings.Repeat("a", 4096), http.StatusBadRequest},
		{"Uppercase", strings.ToUpper(other.Reveal()), http.StatusBadRequest},
		{"OneShort", other.Reveal()[1:], http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			status, body := f.post(t, request(t, "consumer-a", tc.token, csr.ControlPlaneSubject("consumer-a"), nil))
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			for _, secret := range []string{tc.token, f.token.Reveal()} {
				if secret != "" && (strings.Contains(body, secret) || strings.Contains(f.logs.String(), secret)) {
					t.Fatal("a token was echoed in the answer or the log")
				}
			}
			f.assertNothingIssued(t, "consumer-a")
		})
	}
}

// TestAuthenticateWrongToken: the client maps 401 to ErrUnauthorized and
// records Denied, or EmptyDenied when it had no token.
func TestAuthenticateWrongToken(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	wrong, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(wrong), nil); !errors.Is(err, authserver.ErrUnauthorized) {
		t.Fatalf("wrong token: %v, want ErrUnauthorized", err)
	}
	if got := c.status(t); got != authtoken.StatusDenied {
		t.Fatalf("status %s, want Denied", got)
	}
	if err != nil && strings.Contains(err.Error(), wrong.Reveal()) {
		t.Fatal("the error quotes the token")
	}
	e := newConsumer(t, "consumer-b")
	if _, err := authserver.Authenticate(ctx, e.c, e.ports(), f.remote(authtoken.Token{}), nil); !errors.Is(err, authserver.ErrUnauthorized) {
		t.Fatalf("no token: %v, want ErrUnauthorized", err)
	}
	if got := e.status(t); got != authtoken.StatusEmptyDenied {
		t.Fatalf("status %s, want EmptyDenied", got)
	}
	f.assertNothingIssued(t, "consumer-a")
	f.assertNothingIssued(t, "consumer-b")
}

// TestMalformedBodies: what is not a strict certificate request is refused
// before the token is even compared, and nothing is issued.
func TestMalformedBodies(t *testing.T) {
	f := newFixture(t, &authserver.Options{MaxBodyBytes: 8 << 10})
	good := string(request(t, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"NotJSON", "{", http.StatusBadRequest},
		{"Array", "[]", http.StatusBadRequest},
		{"UnknownField", strings.Replace(good, `{"cluster"`, `{"admin":true,"cluster"`, 1), http.StatusBadRequest},
		{"DuplicateField", strings.Replace(good, `{"cluster"`, `{"destinationClusterToken":"x","cluster"`, 1), http.StatusBadRequest},
		{"MiscasedField", strings.Replace(good, `"destinationClusterToken"`, `"DestinationClusterToken"`, 1), http.StatusBadRequest},
		{"CSRNotBase64", strings.Replace(good, `"certificateSigningRequest":"`, `"certificateSigningRequest":"!!`, 1), http.StatusBadRequest},
		{"Oversized", strings.Replace(good, `{"cluster"`, `{"originClusterToken":"`+strings.Repeat("a", 9<<10)+`","cluster"`, 1), http.StatusRequestEntityTooLarge},
		{"BadClusterID", strings.Replace(good, `"clusterID":"consumer-a"`, `"clusterID":"Consumer_A"`, 1), http.StatusBadRequest},
		{"ProviderOwnID", strings.Replace(good, `"clusterID":"consumer-a"`, `"clusterID":"`+providerID+`"`, 1), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.post(t, []byte(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if strings.Contains(body, f.token.Reveal()) {
				t.Fatal("the answer echoes the token")
			}
		})
	}
	f.assertNothingIssued(t, "consumer-a")
	if strings.Contains(f.logs.String(), f.token.Reveal()) {
		t.Fatal("the token reached the log")
	}
}

// TestCSRPolicy: a CSR that is not exactly the consumer's ControlPlane
// request is refused, with the right token, and nothing is signed.
func TestCSRPolicy(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.token.Reveal()
	for _, tc := range []struct {
		name    string
		subject pkix.Name
		tmpl    *x509.CertificateRequest
	}{
		{"OtherCN", csr.ControlPlaneSubject("consumer-b"), nil},
		{"AdminCN", pkix.Name{CommonName: "admin", Organization: []string{"liqo.io"}}, nil},
		{"WrongO", pkix.Name{CommonName: "consumer-a", Organization: []string{"system:masters"}}, nil},
		{"ExtraO", pkix.Name{CommonName: "consumer-a", Organization: []string{"liqo.io", "system:masters"}}, nil},
		{"NoO", pkix.Name{CommonName: "consumer-a"}, nil},
		{"DNSSAN", csr.ControlPlaneSubject("consumer-a"), &x509.CertificateRequest{DNSNames: []string{"kubernetes.default"}}},
		{"IPSAN", csr.ControlPlaneSubject("consumer-a"), &x509.CertificateRequest{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.post(t, request(t, "consumer-a", tok, tc.subject, tc.tmpl))
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", status, body)
			}
		})
	}
	f.assertNothingIssued(t, "consumer-a")
}

// TestPrivilegedConsumerID: a cluster ID that names a user with
// permissions of its own is refused before anything is signed.
func TestPrivilegedConsumerID(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	if err := f.provider.RBAC.ApplyClusterRole(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.provider.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ops"}}}); err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, "ops")
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); !errors.Is(err, authserver.ErrRefused) {
		t.Fatalf("privileged ID: %v, want ErrRefused", err)
	}
	if n := f.provider.Signer.Signed(); n != 0 {
		t.Fatalf("signed %d certificates for a privileged ID", n)
	}
}

// TestRetry: a consumer that runs again, or that lost the answer and posts
// its CSR again, gets the certificate already issued; another key for the
// same cluster ID is refused; nothing is signed twice and the identity the
// consumer stored is kept.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	c := newConsumer(t, "consumer-a")
	first, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := c.secrets.Get(ctx, "liqo-tenant-"+providerID, authserver.IdentitySecretName(providerID))
	if err != nil {
		t.Fatal(err)
	}

	again, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Secret.Data["kubeconfig"]) != string(first.Secret.Data["kubeconfig"]) {
		t.Fatal("running again changed the kubeconfig")
	}

	// The answer was lost: the same key posts a new CSR (ECDSA-like
	// randomness makes new bytes) and gets the same certificate.
	key, err := c.cluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
	if err != nil {
		t.Fatal(err)
	}
	status, body := f.post(t, requestFor(t, key.Key, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
	if status != http.StatusAccepted {
		t.Fatalf("same key again: %d %s", status, body)
	}
	var resp authserver.CertificateResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if string(resp.Certificate) != string(stored.Data["certificate"]) {
		t.Fatal("the same key got another certificate")
	}

	// Another consumer claims the same cluster ID with another key.
	thief := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, thief.c, thief.ports(), f.remote(f.token), nil); !errors.Is(err, authserver.ErrRefused) {
		t.Fatalf("another key for the same ID: %v, want ErrRefused", err)
	}
	if got := thief.status(t); got != authtoken.StatusDenied {
		t.Fatalf("thief's status %s, want Denied", got)
	}
	if n := f.provider.Signer.Signed(); n != 1 {
		t.Fatalf("signed %d certificates, want 1", n)
	}
	kept, err := c.secrets.Get(ctx, "liqo-tenant-"+providerID, authserver.IdentitySecretName(providerID))
	if err != nil || string(kept.Data["certificate"]) != string(stored.Data["certificate"]) {
		t.Fatalf("the stored identity changed: %v", err)
	}

	// Once the provider revokes the consumer, and readmits it (revoking
	// records its certificates as revoked), a new key may have it. An
	// unpeering (Forget) would keep the cached certificate, and the ID with
	// it.
	p, err := provider.New(providerID, f.provider.Endpoint(), f.provider.ProviderPorts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Revoke(ctx, "consumer-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := authserver.Authenticate(ctx, thief.c, thief.ports(), f.remote(f.token), nil); !errors.Is(err, authserver.ErrRefused) {
		t.Fatalf("revoked, not readmitted: %v, want ErrRefused", err)
	}
	if err := p.Readmit(ctx, "consumer-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := authserver.Authenticate(ctx, thief.c, thief.ports(), f.remote(f.token), nil); err != nil {
		t.Fatalf("after Revoke and Readmit: %v", err)
	}
}

// TestResumeAfterCrash: the consumer crashed after posting, before storing
// the answer; its key was stored first, so the next run gets the same
// certificate and nothing new is signed.
func TestResumeAfterCrash(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	c := newConsumer(t, "consumer-a")
	key, err := c.c.IdentityKey(ctx, providerID)
	if err != nil {
		t.Fatal(err)
	}
	status, body := f.post(t, requestFor(t, key, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
	if status != http.StatusAccepted {
		t.Fatalf("%d %s", status, body)
	}
	done, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := done.Kubeconfig.ClientCertificate()
	if err != nil || !keys.Equal(cert.PublicKey, key.Public()) {
		t.Fatalf("the kubeconfig is not for the stored key: %v", err)
	}
	if n := f.provider.Signer.Signed(); n != 1 {
		t.Fatalf("signed %d certificates, want 1", n)
	}
}

// TestRotatedToken: after a rotation the old token is refused at once.
func TestRotatedToken(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	old := f.token
	next, err := authtoken.Rotate(ctx, f.tokens, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(old), nil); !errors.Is(err, authserver.ErrUnauthorized) {
		t.Fatalf("old token: %v, want ErrUnauthorized", err)
	}
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(next), nil); err != nil {
		t.Fatalf("new token: %v", err)
	}
}

// TestRateLimit: an address that sent too many wrong tokens gets 429, even
// with the right token, until it has waited; another address is not
// affected.
func TestRateLimit(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := newFixture(t, &authserver.Options{Clock: clk, FailureBurst: 3, FailureInterval: time.Minute})
	wrong, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	post := func(addr, tok, consumerID string) int {
		body := request(t, consumerID, tok, csr.ControlPlaneSubject(consumerID), nil)
		r := httptest.NewRequest(http.MethodPost, authserver.CertificatePath, strings.NewReader(string(body)))
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		f.server.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 3 {
		if got := post("192.0.2.1:40000", wrong.Reveal(), "consumer-a"); got != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, got)
		}
	}
	if got := post("192.0.2.1:40001", wrong.Reveal(), "consumer-a"); got != http.StatusTooManyRequests {
		t.Fatalf("over the limit: %d, want 429", got)
	}
	if got := post("192.0.2.1:40002", f.token.Reveal(), "consumer-a"); got != http.StatusTooManyRequests {
		t.Fatalf("right token over the limit: %d, want 429", got)
	}
	// An IPv6 client is one /64: changing the interface ID does not help.
	for i := range 3 {
		if got := post(fmt.Sprintf("[2001:db8:1:2::%x]:40000", i+1), wrong.Reveal(), "consumer-a"); got != http.StatusUnauthorized {
			t.Fatalf("IPv6 failure %d: %d, want 401", i, got)
		}
	}
	if got := post("[2001:db8:1:2::ffff]:40000", f.token.Reveal(), "consumer-a"); got != http.StatusTooManyRequests {
		t.Fatalf("another address of the same /64: %d, want 429", got)
	}
	if got := post("192.0.2.2:40000", f.token.Reveal(), "consumer-b"); got != http.StatusAccepted {
		t.Fatalf("another address: %d, want 202", got)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	if got := post("192.0.2.1:40003", f.token.Reveal(), "consumer-a"); got != http.StatusAccepted {
		t.Fatalf("after waiting: %d, want 202", got)
	}

	// Over TLS, the client maps 429 to ErrRateLimited.
	g := newFixture(t, &authserver.Options{FailureBurst: 1, FailureInterval: time.Hour})
	c := newConsumer(t, "consumer-c")
	ctx := context.Background()
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), g.remote(wrong), nil); !errors.Is(err, authserver.ErrUnauthorized) {
		t.Fatalf("first failure: %v", err)
	}
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), g.remote(g.token), nil); !errors.Is(err, authserver.ErrRateLimited) {
		t.Fatalf("over the limit: %v, want ErrRateLimited", err)
	}
}

// TestAllowEmptyToken: with authentication off, the server says so loudly
// at start, and a consumer without a token is served.
func TestAllowEmptyToken(t *testing.T) {
	f := newFixture(t, &authserver.Options{AllowEmptyToken: true})
	if !strings.Contains(f.logs.String(), "WARNING: authentication is disabled") {
		t.Fatalf("no warning logged: %s", f.logs.String())
	}
	c := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(context.Background(), c.c, c.ports(), f.remote(authtoken.Token{}), nil); err != nil {
		t.Fatal(err)
	}
	if got := c.status(t); got != authtoken.StatusEstablished {
		t.Fatalf("status %s", got)
	}
}

// TestWrongProvider: a server that names another cluster is left before
// anything is sent or written.
func TestWrongProvider(t *testing.T) {
	f := newFixture(t, nil)
	c := newConsumer(t, "consumer-a")
	r := f.remote(f.token)
	r.ProviderID = "provider-y"
	if _, err := authserver.Authenticate(context.Background(), c.c, c.ports(), r, nil); !errors.Is(err, authserver.ErrWrongProvider) {
		t.Fatalf("%v, want ErrWrongProvider", err)
	}
	if c.secrets.Writes() != 0 || c.cluster.IdentityKeys.Len() != 0 {
		t.Fatal("the consumer wrote something")
	}
	f.assertNothingIssued(t, "consumer-a")
}

// TestUntrustedServer: a server whose certificate does not chain to the CA
// the consumer gives is not talked to, and a plain http URL is refused.
func TestUntrustedServer(t *testing.T) {
	f := newFixture(t, nil)
	g := newFixture(t, nil)
	c := newConsumer(t, "consumer-a")
	r := f.remote(f.token)
	r.CA = g.ca
	if _, err := authserver.Authenticate(context.Background(), c.c, c.ports(), r, nil); !errors.Is(err, authserver.ErrServer) {
		t.Fatalf("untrusted server: %v, want ErrServer", err)
	}
	r = f.remote(f.token)
	r.URL = strings.Replace(r.URL, "https", "http", 1)
	if _, err := authserver.Authenticate(context.Background(), c.c, c.ports(), r, nil); !errors.Is(err, peer.ErrInvalidConfig) {
		t.Fatalf("http URL: %v, want ErrInvalidConfig", err)
	}
	f.assertNothingIssued(t, "consumer-a")
}

// TestSlowClient: a client that trickles its headers or its body is cut by
// the server's timeouts.
func TestSlowClient(t *testing.T) {
	f := newFixture(t, &authserver.Options{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond})
	dial := func(t *testing.T) *tls.Conn {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.ca)
		conn, err := tls.Dial("tcp", strings.TrimPrefix(f.url, "https://"), &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// trickle writes parts one every 100ms until the server closes the
	// connection, and returns how long the connection lasted.
	trickle := func(t *testing.T, conn *tls.Conn, head string, parts []string) time.Duration {
		start := time.Now()
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, bufio.NewReader(conn))
		}()
		for _, p := range parts {
			select {
			case <-closed:
				return time.Since(start)
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := io.WriteString(conn, p); err != nil {
				break
			}
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the server kept the connection open")
		}
		return time.Since(start)
	}
	t.Run("Headers", func(t *testing.T) {
		conn := dial(t)
		parts := strings.Split(strings.Repeat("X-Slow: 1\r\n", 100), "\r\n")
		if d := trickle(t, conn, "POST "+authserver.CertificatePath+" HTTP/1.1\r\nHost: x\r\n", parts); d > 3*time.Second {
			t.Fatalf("connection lasted %v", d)
		}
	})
	t.Run("Body", func(t *testing.T) {
		conn := dial(t)
		parts := strings.Split(strings.Repeat("a", 100), "")
		if d := trickle(t, conn, "POST "+authserver.CertificatePath+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", parts); d > 3*time.Second {
			t.Fatalf("connection lasted %v", d)
		}
	})
	t.Run("NoHTTP2", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.ca)
		conn, err := tls.Dial("tcp", strings.TrimPrefix(f.url, "https://"), &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
			t.Fatal("the server speaks HTTP/2, whose streams its timeouts do not bound")
		}
	})
	f.assertNothingIssued(t, "consumer-a")
}

func TestTokenFormatting(t *testing.T) {
	tok, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s %q %x", tok, tok, tok, tok, tok, tok), fmt.Sprint(authserver.Remote{Token: tok}),
		fmt.Sprintf("%v %+v %#v", authserver.CertificateRequest{DestinationClusterToken: tok.Reveal(), OriginClusterToken: tok.Reveal()},
			&authserver.CertificateRequest{DestinationClusterToken: tok.Reveal()}, authserver.CertificateRequest{OriginClusterToken: tok.Reveal()})} {
		if strings.Contains(s, tok.Reveal()) || strings.Contains(s, tok.Reveal()[:16]) {
			t.Fatalf("formatting shows the token: %s", s)
		}
	}
}

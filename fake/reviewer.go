package fake

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

// ErrUnreachable reports a review sent to a server no in-memory API server
// answers for: what a consumer sees of a provider it cannot reach.
var ErrUnreachable = errors.New("no in-memory API server at this URL")

// Reviewer plays the API servers of in-memory providers for a consumer: an
// identity.Reviewer that answers a review made with a kubeconfig as the API
// server the kubeconfig names would (Serve). Like a Kubernetes API server
// with client certificate authentication, it accepts the kubeconfig's
// client certificate only if it chains, for client authentication, to one
// of that server's client CAs, is valid at Clock's time, and is for the
// kubeconfig's key (the proof a TLS handshake makes); it then answers with
// the certificate's CN as the user and its O values, then
// "system:authenticated", as the groups. Otherwise it refuses with an error
// wrapping identity.ErrRejected, as a 401 does.
//
// It does not check the server's side of TLS (the kubeconfig's CA), nor
// model proxies, anonymous requests, or other authenticators. The zero value
// serves no server and uses the real clock. It is safe for concurrent use.
type Reviewer struct {
	// Clock is the time certificates are checked at; nil means the real
	// clock. Set it before the first Review.
	Clock clock.PassiveClock

	mu      sync.Mutex
	servers map[string]*x509.CertPool
	reviews int
}

// Serve makes r answer for the API server at URL server, trusting client
// certificates signed by the PEM certificates in clientCAs (its
// --client-ca-file), and replaces what r knew of that server. It fails,
// serving nothing new, when clientCAs holds no PEM certificate.
func (r *Reviewer) Serve(server string, clientCAs []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(clientCAs) {
		return fmt.Errorf("fake reviewer: the client CAs of %s hold no PEM certificate", server)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.servers == nil {
		r.servers = map[string]*x509.CertPool{}
	}
	r.servers[server] = pool
	return nil
}

// Serves reports whether r answers for at least one API server.
func (r *Reviewer) Serves() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.servers) > 0
}

// Reviews returns how many reviews r answered, refusals included.
func (r *Reviewer) Reviews() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reviews
}

// Review answers as the API server at cfg's server. It wraps ErrUnreachable
// for a server r does not serve and identity.ErrRejected for credentials
// that server does not accept.
func (r *Reviewer) Review(ctx context.Context, cfg *kubeconfig.Config) (string, []string, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	r.mu.Lock()
	pool, ok := r.servers[cfg.Server()]
	if ok {
		r.reviews++
	}
	now := r.now()
	r.mu.Unlock()
	if !ok {
		return "", nil, ErrUnreachable
	}
	cert, err := cfg.ClientCertificate()
	if err != nil {
		return "", nil, fmt.Errorf("%w: 401 Unauthorized: no client certificate", identity.ErrRejected)
	}
	if err := ownsKey(cfg, cert); err != nil {
		return "", nil, err
	}
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return "", nil, fmt.Errorf("%w: 401 Unauthorized: %w", identity.ErrRejected, err)
	}
	groups := append(slices.Clone(cert.Subject.Organization), "system:authenticated")
	return cert.Subject.CommonName, groups, nil
}

// ownsKey refuses, as a failed TLS handshake, a kubeconfig whose key is not
// the certificate's.
func ownsKey(cfg *kubeconfig.Config, cert *x509.Certificate) error {
	api := cfg.API()
	kctx := api.Contexts[api.CurrentContext]
	if kctx == nil || api.AuthInfos[kctx.AuthInfo] == nil {
		return fmt.Errorf("%w: no credentials", identity.ErrRejected)
	}
	key, err := keys.ParsePrivateKey(api.AuthInfos[kctx.AuthInfo].ClientKeyData)
	if err != nil || !keys.Equal(key.Public(), cert.PublicKey) {
		return fmt.Errorf("%w: the TLS handshake fails: the client key is not the certificate's", identity.ErrRejected)
	}
	return nil
}

func (r *Reviewer) now() time.Time {
	if r.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return r.Clock.Now()
}

var _ identity.Reviewer = (*Reviewer)(nil)

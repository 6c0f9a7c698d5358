package authserver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	kjson "sigs.k8s.io/json"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes      = 64 << 10
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 90 * time.Second
	// DefaultFailureBurst failed tokens a client may send at once, then
	// one per DefaultFailureInterval.
	DefaultFailureBurst    = 5
	DefaultFailureInterval = 12 * time.Second
	// DefaultMaxClients bounds the table of clients that sent a wrong token.
	DefaultMaxClients = 10000
)

// Options tunes a Server. The zero value, like a nil pointer, uses the
// defaults above, the real clock, provider.DefaultCertificateLifetime, no
// cluster name, no logger, and requires the token.
type Options struct {
	// ClusterName is the provider's name in /ids.
	ClusterName string
	// AllowEmptyToken turns authentication off: any token, empty included,
	// is accepted, and anyone who reaches the Server gets an identity. New
	// logs a warning when it is set.
	AllowEmptyToken bool
	// CertificateLifetime is requested for the certificates; the signer may
	// shorten it.
	CertificateLifetime time.Duration
	Clock               clock.PassiveClock
	// Logger receives one line per refused request and a warning at New
	// when AllowEmptyToken is set. Tokens never reach it.
	Logger logr.Logger
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server's (HTTPServer).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// FailureBurst and FailureInterval limit failed tokens per client IP:
	// FailureBurst at once, then one per FailureInterval. A client over the
	// limit gets 429 on every POST, right token or not, until it has
	// waited.
	FailureBurst    int
	FailureInterval time.Duration
	// MaxClients bounds the clients whose failures are remembered; beyond
	// it the least recently failing client is forgotten.
	MaxClients int
	// Checks are checks of the caller's own, run after the provider's
	// built-in ones of their stage, as provider.Options.Checks are
	// in Accept. The token stands for the Tenant, so their accept.Facts
	// carry no Tenant and no verification: Key is the CSR's key. A refusal
	// is answered 403 and logged with its error.
	Checks []accept.Check
}

// Server is a provider's authentication server. It is an http.Handler; use
// HTTPServer or Serve to run it with its timeouts over TLS.
type Server struct {
	id       string
	endpoint provider.Endpoint
	ports    provider.Ports
	tokens   authtoken.Store
	opts     Options
	log      logr.Logger
	failures *limiter
	locks    keyedMutex
	// checks is the decision the server takes: accept.Builtin but the
	// signature, then Options.Checks.
	checks accept.Chain
}

// New returns the authentication server of provider clusterID, handing out
// endpoint, signing and binding through ports (Namespaces, Tenants, Signer,
// Certificates, RBAC and Lifecycle.Revocations are used) and reading the
// token from tokens on each request.
func New(clusterID string, endpoint provider.Endpoint, ports provider.Ports, tokens authtoken.Store, opts *Options) (*Server, error) {
	if err := clusterid.Validate(clusterID); err != nil {
		return nil, err
	}
	if ports.Namespaces == nil || ports.Tenants == nil || ports.Signer == nil || ports.Certificates == nil || ports.RBAC == nil ||
		ports.Lifecycle.Revocations == nil || tokens == nil {
		return nil, fmt.Errorf("%w: the authentication server needs Namespaces, Tenants, Signer, Certificates, RBAC, Lifecycle.Revocations and a token store", peer.ErrInvalidConfig)
	}
	if endpoint.Server == "" {
		return nil, fmt.Errorf("%w: the authentication server needs the API server's URL", peer.ErrInvalidConfig)
	}
	s := &Server{id: clusterID, endpoint: endpoint, ports: ports, tokens: tokens}
	if opts != nil {
		s.opts = *opts
	}
	s.checks = accept.Builtin().Without(accept.Signature).With(s.opts.Checks...)
	o := &s.opts
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.CertificateLifetime <= 0 {
		o.CertificateLifetime = provider.DefaultCertificateLifetime
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.ReadHeaderTimeout, DefaultReadHeaderTimeout}, {&o.ReadTimeout, DefaultReadTimeout},
		{&o.WriteTimeout, DefaultWriteTimeout}, {&o.IdleTimeout, DefaultIdleTimeout}, {&o.FailureInterval, DefaultFailureInterval}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if o.FailureBurst <= 0 {
		o.FailureBurst = DefaultFailureBurst
	}
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	s.log = o.Logger
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	s.failures = newLimiter(rate.Every(o.FailureInterval), o.FailureBurst, o.MaxClients)
	if o.AllowEmptyToken {
		s.log.Info("WARNING: authentication is disabled (allowEmptyToken): any client that reaches this server gets an identity on cluster "+clusterID,
			"cluster", clusterID)
	}
	return s, nil
}

// HTTPServer returns an http.Server serving s over TLS with tlsConfig, with
// the Options' timeouts, HTTP/1.1 only. tlsConfig must hold a certificate.
func (s *Server) HTTPServer(tlsConfig *tls.Config) *http.Server {
	cfg := tlsConfig.Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return &http.Server{
		Handler:           s,
		TLSConfig:         cfg,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		// HTTP/1.1 only: the timeouts above bound a connection, while an
		// HTTP/2 connection multiplexes streams they do not bound.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     log.New(logWriter{s.log}, "", 0),
	}
}

// Serve serves s over TLS on ln until ctx ends, then shuts down, letting
// requests in flight finish for up to the write timeout. It returns nil
// after a shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	hs := s.HTTPServer(tlsConfig)
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	return err
}

// ServeHTTP answers the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case IDsPath:
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		writeJSON(w, http.StatusOK, IDs{ClusterID: s.id, ClusterName: s.opts.ClusterName})
	case CertificatePath:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.certificate(w, r)
	default:
		writeError(w, http.StatusNotFound, "not found")
	}
}

// refusal is an answer other than 202, with a message safe to send and log.
type refusal struct {
	status int
	msg    string
	err    error // the cause, logged, never sent
}

func refuse(status int, msg string, err error) *refusal {
	return &refusal{status: status, msg: msg, err: err}
}

func (s *Server) certificate(w http.ResponseWriter, r *http.Request) {
	client := clientIP(r)
	now := s.opts.Clock.Now()
	if !s.failures.ok(client, now) {
		s.log.V(1).Info("refused certificate request", "client", client, "status", http.StatusTooManyRequests)
		w.Header().Set("Retry-After", fmt.Sprint(int(s.opts.FailureInterval.Seconds()+0.5)))
		writeError(w, http.StatusTooManyRequests, "too many failed attempts from this address")
		return
	}
	resp, ref := s.issue(r, client)
	if ref != nil {
		kv := []any{"client", client, "status", ref.status, "reason", ref.msg}
		if ref.err != nil {
			// The error itself, so that a structured logger keeps its type;
			// no error here quotes a token.
			kv = append(kv, "error", ref.err)
		}
		s.log.Info("refused certificate request", kv...)
		writeError(w, ref.status, ref.msg)
		return
	}
	writeJSON(w, http.StatusAccepted, resp)
}

// issue runs the request of client and returns the answer or the refusal.
func (s *Server) issue(r *http.Request, client string) (*CertificateResponse, *refusal) {
	ctx := r.Context()
	req, ref := s.decode(r)
	if ref != nil {
		return nil, ref
	}
	if ref := s.checkToken(ctx, req.DestinationClusterToken, client); ref != nil {
		return nil, ref
	}
	consumerID := req.Cluster.ClusterID
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, refuse(http.StatusBadRequest, "cluster.clusterID is not a valid cluster ID", err)
	}
	if consumerID == s.id {
		return nil, refuse(http.StatusBadRequest, "cluster.clusterID is the provider's own ID", nil)
	}
	checked, err := csr.Check(req.CertificateSigningRequest, csr.ControlPlanePolicy(consumerID, nil))
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "certificateSigningRequest breaks the policy: "+csrReason(err), err)
	}

	unlock := s.locks.lock(consumerID)
	defer unlock()
	stored, checked, ref := s.decide(ctx, consumerID, checked)
	if ref != nil {
		return nil, ref
	}
	own := stored == nil || lifecycle.FlowOf(stored) == lifecycle.FlowSharedToken
	key := csr.CacheKey{ConsumerID: consumerID}
	namespace := clusterid.TenantNamespace(consumerID)
	if err := s.ports.Namespaces.Ensure(ctx, tenant.Namespace(consumerID)); err != nil {
		return nil, refuse(http.StatusInternalServerError, "ensuring the tenant namespace failed", err)
	}
	cert, err := csr.Issue(ctx, s.ports.Signer, s.ports.Certificates, key,
		csr.Request{CSR: checked, Lifetime: s.opts.CertificateLifetime}, s.opts.Clock.Now())
	var denied *csr.DeniedError
	switch {
	case errors.As(err, &denied):
		return nil, refuse(http.StatusForbidden, "the certificate signing request was denied", err)
	case err != nil:
		return nil, refuse(http.StatusInternalServerError, "signing the certificate failed", err)
	}
	// The consumer gets the Tenant that cordon, drain, revocation and
	// unauthenticate act on, unless a handshake's Tenant for the same key
	// already records it. It is written before the binding, which it owns:
	// deleting the Tenant collects the binding.
	owner := stored
	var record *authv1beta1.Tenant
	if own {
		if record, err = sharedTokenTenant(consumerID, checked); err != nil {
			return nil, refuse(http.StatusInternalServerError, "recording the tenant failed", err)
		}
		if !sameRecord(stored, record) {
			if owner, err = s.ports.Tenants.Apply(ctx, record); err != nil {
				return nil, refuse(http.StatusInternalServerError, "recording the tenant failed", err)
			}
		}
	}
	binding := rbac.ControlPlaneRoleBinding(namespace, consumerID)
	binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(owner)}
	if err := s.ports.RBAC.ApplyRoleBinding(ctx, binding); err != nil {
		return nil, refuse(http.StatusInternalServerError, "binding permissions failed", err)
	}
	if own {
		record.Status = authv1beta1.TenantStatus{
			TenantNamespace: namespace,
			AuthParams:      &authv1beta1.AuthParams{CA: bytes.Clone(s.endpoint.CA), SignedCRT: cert, APIServer: s.endpoint.Server},
		}
		if !equality.Semantic.DeepEqual(owner.Status, record.Status) {
			if _, err := s.ports.Tenants.ApplyStatus(ctx, record); err != nil {
				return nil, refuse(http.StatusInternalServerError, "recording the tenant failed", err)
			}
		}
	}
	s.log.V(1).Info("issued identity", "client", client, "consumer", consumerID)
	return &CertificateResponse{
		Namespace:    namespace,
		Certificate:  cert,
		APIServerURL: s.endpoint.Server,
		APIServerCA:  s.endpoint.CA,
	}, nil
}

// decide takes the provider's decision (accept.Builtin but the signature,
// for which the shared token stands, then Options.Checks) on consumerID
// asking a certificate for checked, and returns its stored Tenant and the
// request to sign: checked, or the CSR cached for it when an identity was
// issued already. The lifecycle decisions come
// first, before the certificate cache is read: a drained or revoked
// consumer gets nothing, not even the certificate already issued, and is
// never bound again.
func (s *Server) decide(ctx context.Context, consumerID string, checked *csr.Checked) (*authv1beta1.Tenant, *csr.Checked, *refusal) {
	f := &accept.Facts{ConsumerID: consumerID, Key: checked.PublicKey(), Now: s.opts.Clock.Now()}
	f.Stored, f.Admission = lifecycle.Admit(ctx, s.ports.Tenants, s.ports.Lifecycle.Revocations, consumerID, f.Now)
	if s.ports.Commitments != nil {
		// A committed consumer ID is granted to its committed cluster keys
		// alone; a shared-token request carries none.
		f.Commitment, f.Commitments = s.ports.Commitments.Commitment(ctx, consumerID)
	}
	if check, err := s.checks.Run(ctx, accept.StageRedeem, f); err != nil {
		return nil, nil, refusalOf(check, err)
	}
	switch e, err := s.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID}); {
	case err == nil:
		f.Certificate = &e
	case !errors.Is(err, csr.ErrNotFound):
		return nil, nil, refuse(http.StatusInternalServerError, "reading the issued certificates failed", err)
	}
	if f.Stored != nil && lifecycle.FlowOf(f.Stored) != lifecycle.FlowSharedToken && !holds(f.Stored, checked.PublicKey()) {
		// A handshake's Tenant, not yet accepted, for another key.
		return nil, nil, refuse(http.StatusForbidden, "an identity was already issued for this cluster ID",
			&lifecycle.HeldError{ConsumerID: consumerID, Flow: lifecycle.FlowOf(f.Stored)})
	}
	if f.Certificate != nil {
		// An identity was issued for this consumer: only its key may have
		// it again, and gets the same CSR's certificate (csr.Issue returns
		// the cached one while it is fresh).
		again, err := csr.Check(f.Certificate.CSR, csr.ControlPlanePolicy(consumerID, checked.PublicKey()))
		if err != nil {
			return nil, nil, refuse(http.StatusForbidden, "an identity was already issued for this cluster ID", err)
		}
		checked = again
	}
	f.Privileges = func() error {
		return rbac.CheckUnprivileged(ctx, s.ports.RBAC, consumerID, []string{csr.ControlPlaneOrganization})
	}
	f.Roles = func() error { return rbac.RequireRoles(ctx, s.ports.RBAC, rbac.ControlPlaneClusterRoleName) }
	if check, err := s.checks.Run(ctx, accept.StageIssue, f); err != nil {
		return nil, nil, refusalOf(check, err)
	}
	return f.Stored, checked, nil
}

// refusalOf is the answer to a request check refused with err.
func refusalOf(check *accept.Check, err error) *refusal {
	var revoked *lifecycle.RevokedError
	switch {
	case check.Name == accept.Admitted && errors.Is(err, lifecycle.ErrDrained):
		return refuse(http.StatusForbidden, "the cluster ID's tenant is drained", err)
	case check.Name == accept.Admitted && errors.As(err, &revoked):
		return refuse(http.StatusForbidden, "the cluster ID's certificates were revoked", err)
	case check.Name == accept.Admitted:
		return refuse(http.StatusInternalServerError, "reading the cluster ID's records failed", err)
	case check.Name == accept.Committed && errors.Is(err, enrol.ErrNotCommitted):
		return refuse(http.StatusForbidden, "the cluster ID peers from Git, with its committed keys only", err)
	case check.Name == accept.Committed:
		return refuse(http.StatusInternalServerError, "reading the cluster ID's commitment failed", err)
	case check.Name == accept.SingleHolder:
		return refuse(http.StatusForbidden, "an identity was already issued for this cluster ID", err)
	case check.Name == accept.Unprivileged && errors.Is(err, rbac.ErrPrivilegedUser):
		return refuse(http.StatusForbidden, "the cluster ID names a privileged user", err)
	case check.Name == accept.Unprivileged:
		return refuse(http.StatusInternalServerError, "checking the cluster ID's permissions failed", err)
	case check.Name == accept.RolesInstalled:
		// The administrator's to fix: nothing is signed for a role that
		// is not there.
		return refuse(http.StatusInternalServerError, "the provider's peer roles are not installed", err)
	}
	return refuse(http.StatusForbidden, "the request was refused by the provider's policy", err)
}

// sharedTokenTenant is the Tenant the server records for consumerID, whose
// CSR c it signs: no handshake took place, so its authzPolicy is
// TolerateNoHandshake and it carries no signature; spec.publicKey and
// spec.csr are the key and CSR of the certificate issued; FlowAnnotation
// marks it as the server's. Its condition is the provider's and is left
// out.
func sharedTokenTenant(consumerID string, c *csr.Checked) (*authv1beta1.Tenant, error) {
	pub, err := keys.MarshalPublicKey(c.PublicKey())
	if err != nil {
		return nil, err
	}
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        consumerID,
			Namespace:   clusterid.TenantNamespace(consumerID),
			Labels:      map[string]string{clusterid.Label: consumerID},
			Annotations: map[string]string{lifecycle.FlowAnnotation: string(lifecycle.FlowSharedToken)},
			Finalizers:  []string{tenant.Finalizer},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:   consumerID,
			AuthzPolicy: authv1beta1.TolerateNoHandshake,
			PublicKey:   pub,
			CSR:         c.PEM(),
		},
	}, nil
}

// sameRecord reports whether the stored Tenant already carries what want
// records, status aside: writing want again would change nothing.
func sameRecord(stored, want *authv1beta1.Tenant) bool {
	if stored == nil || stored.UID == "" || stored.DeletionTimestamp != nil || lifecycle.FlowOf(stored) != lifecycle.FlowSharedToken ||
		stored.Labels[clusterid.Label] != want.Spec.ClusterID || !slices.Contains(stored.Finalizers, tenant.Finalizer) {
		return false
	}
	spec := stored.Spec
	spec.TenantCondition = ""
	return equality.Semantic.DeepEqual(spec, want.Spec)
}

// holds reports whether pub is one of the keys the stored Tenant t names:
// its spec.publicKey or its CSR's.
func holds(t *authv1beta1.Tenant, pub crypto.PublicKey) bool {
	if k, err := keys.ParsePublicKey(t.Spec.PublicKey); err == nil && keys.Equal(k, pub) {
		return true
	}
	c, err := csr.Check(t.Spec.CSR, csr.ControlPlanePolicy(t.Spec.ClusterID, pub))
	return err == nil && c != nil
}

// decode reads the body, at most MaxBodyBytes, strictly.
func (s *Server) decode(r *http.Request) (*CertificateRequest, *refusal) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, refuse(http.StatusUnsupportedMediaType, "the body must be application/json", nil)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.opts.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body exceeds %d bytes", s.opts.MaxBodyBytes), nil)
	case err != nil:
		return nil, refuse(http.StatusBadRequest, "reading the body failed", err)
	}
	req := &CertificateRequest{}
	strict, err := kjson.UnmarshalStrict(body, req)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		// The decoder's message may quote the body, and with it the token.
		return nil, refuse(http.StatusBadRequest, "the body is not a certificate request (strict JSON)", nil)
	}
	return req, nil
}

// checkToken compares the given token with the stored one, in constant
// time, and counts a failure against client.
func (s *Server) checkToken(ctx context.Context, given, client string) *refusal {
	if s.opts.AllowEmptyToken {
		return nil
	}
	want, err := s.tokens.Get(ctx)
	if err != nil {
		return refuse(http.StatusInternalServerError, "reading the token failed", err)
	}
	got, err := authtoken.Parse(given)
	if err != nil {
		s.failures.fail(client, s.opts.Clock.Now())
		if given == "" {
			return refuse(http.StatusUnauthorized, "no token", nil)
		}
		return refuse(http.StatusBadRequest, "destinationClusterToken is not a token", err)
	}
	if !got.Equal(want) {
		s.failures.fail(client, s.opts.Clock.Now())
		return refuse(http.StatusUnauthorized, "wrong token", nil)
	}
	return nil
}

// csrReason names the policy a CSR broke, without quoting it.
func csrReason(err error) string {
	for _, c := range []struct {
		err    error
		reason string
	}{
		{csr.ErrCommonName, "the common name must be the cluster ID"},
		{csr.ErrOrganization, "the organization must be exactly liqo.io"},
		{csr.ErrSAN, "no subject alternative name is allowed"},
		{csr.ErrSignature, "its signature does not verify"},
		{csr.ErrMalformed, "it is not one PEM certificate request"},
	} {
		if errors.Is(err, c.err) {
			return c.reason
		}
	}
	return "its key is not accepted"
}

// clientIP is the host of the connection's peer; for IPv6, its /64, which
// one client commonly holds whole.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorResponse{Message: msg})
}

// keyedMutex serialises callers per key; idle keys take no memory.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// logWriter turns the http.Server's own messages (TLS handshake errors,
// timeouts) into log lines of the Server's logger.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
)

// IdentityReviewerOptions tunes NewIdentityReviewer. The zero value, like a
// nil pointer, trusts the system roots for the serving certificate of an
// API server whose kubeconfig has no CA.
type IdentityReviewerOptions struct {
	// RootCAs are PEM certificates trusted, besides the system roots, for
	// the serving certificate of an API server whose kubeconfig has no
	// certificate-authority-data (an Identity with an empty CA): private or
	// corporate roots. A kubeconfig with a CA trusts that CA only, as
	// client-go does.
	RootCAs []byte
	// Timeout bounds one review, on top of the context; zero means 30
	// seconds.
	Timeout time.Duration
}

// IdentityReviewer is the identity.Reviewer of a real API server: it asks,
// with the kubeconfig under review and nothing else, for a
// SelfSubjectReview (authentication.k8s.io/v1, Kubernetes 1.28 and later,
// allowed to every authenticated user by the bootstrap role
// system:basic-user). A 401 or 403 answer, or a TLS alert by which the
// server refuses the client certificate, wraps identity.ErrRejected (and
// keeps the API error, so apierrors.IsUnauthorized works); a serving
// certificate the kubeconfig does not trust is an x509 error, never
// identity.ErrRejected. It is safe for concurrent use, and keeps no
// connection open between reviews.
type IdentityReviewer struct {
	roots   *x509.CertPool // nil: the system roots
	timeout time.Duration
}

// ErrRootCAsNotPEM reports IdentityReviewerOptions.RootCAs that hold no PEM
// certificate.
var ErrRootCAsNotPEM = errors.New("RootCAs holds no PEM certificate")

// NewIdentityReviewer returns an IdentityReviewer. It fails when
// opts.RootCAs is set but holds no PEM certificate (ErrRootCAsNotPEM), or when the system
// roots cannot be read to add it to them.
func NewIdentityReviewer(opts *IdentityReviewerOptions) (*IdentityReviewer, error) {
	r := &IdentityReviewer{timeout: 30 * time.Second}
	if opts == nil {
		return r, nil
	}
	if opts.Timeout > 0 {
		r.timeout = opts.Timeout
	}
	if len(opts.RootCAs) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("identity reviewer: reading the system roots: %w", err)
		}
		if !roots.AppendCertsFromPEM(opts.RootCAs) {
			return nil, fmt.Errorf("identity reviewer: %w", ErrRootCAsNotPEM)
		}
		r.roots = roots
	}
	return r, nil
}

// Review asks cfg's API server, with cfg's credentials, who they are.
func (r *IdentityReviewer) Review(ctx context.Context, cfg *kubeconfig.Config) (string, []string, error) {
	rc, err := cfg.RESTConfig()
	if err != nil {
		return "", nil, fmt.Errorf("kubeconfig: %w", err)
	}
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil || tlsCfg == nil {
		return "", nil, fmt.Errorf("kubeconfig: TLS configuration: %w", err)
	}
	if len(rc.CAData) == 0 && rc.CAFile == "" && r.roots != nil {
		tlsCfg.RootCAs = r.roots
	}
	proxy := rc.Proxy
	if proxy == nil {
		proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsCfg, Proxy: proxy})
	defer transport.CloseIdleConnections()
	// The wrappers send a bearer token, for kubeconfigs that have one.
	rt, err := rest.HTTPWrappersForConfig(rc, transport)
	if err != nil {
		return "", nil, fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(rc, &http.Client{Transport: rt, Timeout: r.timeout})
	if err != nil {
		return "", nil, fmt.Errorf("kubeconfig: %w", err)
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if rejected(err) {
		return "", nil, fmt.Errorf("%w: SelfSubjectReview: %w", identity.ErrRejected, err)
	}
	if err != nil {
		return "", nil, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	info := review.Status.UserInfo
	return info.Username, info.Groups, nil
}

// rejected reports an error by which the server refuses the credentials:
// a 401 or 403 answer, or a TLS alert about the client certificate.
func rejected(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return true
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		switch alert {
		case 42, 43, 44, 45, 46, 48, 116: // bad, unsupported, revoked, expired, unknown certificate; unknown CA; certificate required
			return true
		}
	}
	return false
}

var _ identity.Reviewer = (*IdentityReviewer)(nil)

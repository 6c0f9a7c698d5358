package enrolhttp

import (
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
)

// ErrNotAuthorized is the endpoint's answer while the provider has no
// grant for the request: the consumer is not committed there, or not with
// this request, or not yet. The endpoint says no more, and neither does
// the client.
var ErrNotAuthorized = errors.New("not authorized")

// GrantsPath is the path under which the endpoint serves grants, by
// consumer ID; the query parameter CSRParam names the request's CSR by its
// SHA-256.
const (
	GrantsPath = "/v1alpha1/grants/"
	CSRParam   = "csr"
)

// MaxGrantSize bounds what the client reads of an answer.
const MaxGrantSize = 64 << 10

// Client fetches grants from an enrolment endpoint.
type Client struct {
	// EnrolmentKeys are the provider's committed enrolment keys, which
	// must have issued the endpoint's certificate.
	EnrolmentKeys []crypto.PublicKey
	// Timeout bounds one fetch; zero means 10 s.
	Timeout time.Duration
	// Now is the clock the endpoint's certificate is judged by; nil means
	// time.Now.
	Now func() time.Time
	// Resolver resolves the endpoint's host name; nil means the default
	// resolver. Whatever it answers, a forbidden address is not dialled
	// (CheckAddr).
	Resolver *net.Resolver
}

// Fetch returns the grant endpoint serves for request r. It returns
// ErrNotAuthorized when the endpoint has none, an error wrapping
// ErrForbiddenURL for an endpoint it must not contact, and
// enrol.ErrEndpointCertificate for one that is not the provider's. The
// grant is as the endpoint sent it: check it with enrol.VerifyGrant.
func (c *Client) Fetch(ctx context.Context, endpoint string, r *enrol.Request) (*peeringv1alpha1.Grant, error) {
	u, err := CheckURL(endpoint)
	if err != nil {
		return nil, err
	}
	u = u.JoinPath(GrantsPath, r.ConsumerID)
	u.RawQuery = url.Values{CSRParam: {r.CSRSHA256()}}.Encode()
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client().Do(req)
	if err != nil {
		var cert *certificateError
		if errors.As(err, &cert) {
			return nil, cert.err
		}
		if errors.Is(err, ErrForbiddenURL) {
			return nil, err
		}
		return nil, fmt.Errorf("fetching the grant from the enrolment endpoint: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusForbidden:
		return nil, ErrNotAuthorized
	default:
		return nil, fmt.Errorf("fetching the grant from the enrolment endpoint: %s", resp.Status)
	}
	var g peeringv1alpha1.Grant
	dec := json.NewDecoder(io.LimitReader(resp.Body, MaxGrantSize))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%w: decoding the grant: %w", enrol.ErrMalformed, err)
	}
	return &g, nil
}

// certificateError carries the endpoint certificate's refusal through
// the TLS stack.
type certificateError struct{ err error }

func (e *certificateError) Error() string { return e.err.Error() }
func (e *certificateError) Unwrap() error { return e.err }

// client returns the HTTP client of one fetch: no proxy, no redirect,
// dials checked, the endpoint authenticated by the enrolment keys.
func (c *Client) client() *http.Client {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: dialControl, Resolver: c.Resolver}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:       nil,
			DialContext: dialer.DialContext,
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS13,
				// The certificate is checked by VerifyConnection, against
				// the committed enrolment keys: there is no CA and no host
				// name to check.
				InsecureSkipVerify: true, //nolint:gosec // verified below
				VerifyConnection: func(cs tls.ConnectionState) error {
					if len(cs.PeerCertificates) == 0 {
						return &certificateError{err: fmt.Errorf("%w: none presented", enrol.ErrEndpointCertificate)}
					}
					if err := enrol.VerifyServingCertificate(cs.PeerCertificates[0].Raw, c.EnrolmentKeys, now()); err != nil {
						return &certificateError{err: err}
					}
					return nil
				},
			},
			DisableKeepAlives:     true,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 5 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

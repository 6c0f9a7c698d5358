// Package authserver is the authentication server of Liqo's token flow
// (Liqo v0.4–v0.10) and its client.
//
// A provider runs a Server: a consumer that holds the provider's shared
// token (authtoken) posts a certificate signing request with it and gets
// back a client certificate for its ControlPlane identity, the provider's
// API server URL and CA, and its tenant namespace. The wire API is Liqo's:
//
//	GET  /ids                   → 200 {"clusterId", "clusterName"}
//	POST /identity/certificate  → 202 {"namespace", "certificate", "apiServerUrl", "apiServerCA"}
//
// with 400 for a bad request, 401 for a wrong token, 403 when the provider
// refuses, 413 for a body over the limit, 429 for a client that sent too
// many wrong tokens, and 500 for the rest.
//
// A consumer runs Authenticate, which persists its key before it posts the
// request and the returned identity at once, then turns it into the
// Identity and kubeconfig Secret of the nonce handshake (consumer.Consumer.Apply).
//
// # Security
//
// Where Liqo was weak, the Server is not:
//   - the token is compared in constant time, read from the Store on every
//     request (a rotation takes effect at once), and never echoed, logged
//     or quoted in an error;
//   - the CSR passes the same policy as the nonce flow (csr.Check with
//     csr.ControlPlanePolicy: exactly CN = the consumer ID and O = liqo.io,
//     no SAN, an accepted key), the consumer ID must hold no privilege of
//     its own (rbac.CheckUnprivileged), and the certificate is issued by the
//     provider's csr.Signer through its csr.Cache (csr.Issue);
//   - the consumer answers to the provider's lifecycle decisions: before
//     the certificate cache is read, a consumer whose Tenant is Drained
//     (lifecycle.ErrDrained) or whose revocation record is in force
//     (*lifecycle.RevokedError) is refused (403), and nothing is signed or
//     bound again, not even for the key whose certificate is cached. The
//     Server records a Tenant for each consumer it serves (annotated
//     lifecycle.FlowAnnotation=SharedToken, authzPolicy TolerateNoHandshake,
//     spec.publicKey and spec.csr those of the certificate, status filled),
//     which owns the binding, so cordon, drain and unauthenticate
//     (provider.Provider) act on token consumers too. A consumer whose
//     handshake Tenant is stored keeps it: the Server binds the Tenant's
//     own key only and writes no Tenant of its own;
//   - one consumer ID gets one key: while a key holds a live certificate
//     for the ID, whichever flow issued it, a request for another key is
//     refused (403, a *lifecycle.HeldError in the log line); a certificate
//     cached for the ID, even an expired one, is served to its own key
//     only, until the provider forgets the consumer (provider.Provider.Forget)
//     and, since that records its certificates as revoked, readmits it.
//     A request for the same key, by a consumer that retries because the
//     answer was lost, returns the certificate already issued; nothing new
//     is signed or bound. Requests for one consumer ID are serialised;
//     this holds within one Server process: run one replica;
//   - TLS only, with read-header, read, write and idle timeouts, a body
//     limit (413), JSON decoded strictly (unknown, duplicate and miscased
//     fields are 400), and a per-client-IP limit on failed tokens (429),
//     with a bounded table of clients. The client IP is the connection's
//     peer: put no proxy in front of the Server, or every client shares the
//     proxy's budget.
//   - AllowEmptyToken disables authentication: anyone who reaches the Server
//     gets an identity. It is only an explicit option, and New logs it as a
//     warning.
//
// # Errors
//
// Authenticate maps the Server's answers to ErrBadRequest (400),
// ErrUnauthorized (401), ErrRefused (403), ErrTooLarge (413),
// ErrRateLimited (429), ErrServer (500 and other 5xx) and ErrProtocol (an
// answer that is not the API's). A provider whose /ids names another
// cluster gives ErrWrongProvider. The Server logs one line per refusal,
// with the cause as an error value (key "error"): lifecycle.ErrDrained,
// *lifecycle.RevokedError, *lifecycle.HeldError, *rbac.PrivilegedError, a
// csr error; none quotes the token.
//
// # Concurrency
//
// A Server is safe for concurrent use; Authenticate calls for different
// providers may run concurrently.
package authserver

import (
	"errors"
	"fmt"
	"io"
)

// Paths of the API.
const (
	IDsPath         = "/ids"
	CertificatePath = "/identity/certificate"
)

// IDs is the answer of GET /ids.
type IDs struct {
	ClusterID   string `json:"clusterId"`
	ClusterName string `json:"clusterName"`
}

// ClusterIdentity names the consumer in a CertificateRequest.
type ClusterIdentity struct {
	ClusterID   string `json:"clusterID"`
	ClusterName string `json:"clusterName,omitempty"`
}

// CertificateRequest is the body of POST /identity/certificate.
type CertificateRequest struct {
	Cluster ClusterIdentity `json:"cluster"`
	// DestinationClusterToken is the provider's token as the consumer knows it.
	DestinationClusterToken string `json:"destinationClusterToken"`
	// OriginClusterToken is the consumer's own token, for an exchange the
	// other way; the Server does not use it.
	OriginClusterToken string `json:"originClusterToken,omitempty"`
	// CertificateSigningRequest is a PEM CSR (base64 on the wire).
	CertificateSigningRequest []byte `json:"certificateSigningRequest"`
}

// String names the consumer; it never prints the tokens.
func (r CertificateRequest) String() string {
	return fmt.Sprintf("authserver.CertificateRequest(cluster=%s, tokens redacted, %d-byte CSR)", r.Cluster.ClusterID, len(r.CertificateSigningRequest))
}

// GoString is String.
func (r CertificateRequest) GoString() string { return r.String() }

// Format makes every fmt verb print String: the request carries the token.
func (r CertificateRequest) Format(f fmt.State, _ rune) { io.WriteString(f, r.String()) }

// CertificateResponse is the 202 answer of POST /identity/certificate.
type CertificateResponse struct {
	// Namespace is the consumer's tenant namespace on the provider.
	Namespace string `json:"namespace"`
	// Certificate is the PEM client certificate (base64 on the wire).
	Certificate []byte `json:"certificate"`
	// APIServerURL is the provider's API server.
	APIServerURL string `json:"apiServerUrl"`
	// APIServerCA is the PEM CA of the API server (base64 on the wire).
	APIServerCA []byte `json:"apiServerCA,omitempty"`
}

// errorResponse is the body of every answer but 200 and 202.
type errorResponse struct {
	Message string `json:"message"`
}

var (
	// ErrBadRequest reports a request the Server could not read or that
	// breaks the API or the CSR policy (400).
	ErrBadRequest = errors.New("authentication server: bad request")
	// ErrUnauthorized reports a wrong or empty token (401).
	ErrUnauthorized = errors.New("authentication server: wrong token")
	// ErrRefused reports a request the provider refuses (403): an identity
	// already issued for another key, a privileged consumer ID, a denied
	// signing request.
	ErrRefused = errors.New("authentication server: refused")
	// ErrTooLarge reports a body over the Server's limit (413).
	ErrTooLarge = errors.New("authentication server: request too large")
	// ErrRateLimited reports a client that sent too many wrong tokens (429).
	ErrRateLimited = errors.New("authentication server: too many failed attempts")
	// ErrServer reports a failure of the provider (5xx).
	ErrServer = errors.New("authentication server: internal error")
	// ErrProtocol reports an answer that is not the API's.
	ErrProtocol = errors.New("authentication server: unexpected answer")
	// ErrWrongProvider reports a Server that names another cluster than
	// the provider the consumer meant.
	ErrWrongProvider = errors.New("authentication server belongs to another cluster")
)

package saidentity

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// ErrNotFound reports that a port holds no such object.
var ErrNotFound = errors.New("not found")

// TokenRequest is what a TokenRequest asks for.
type TokenRequest struct {
	// Expiration is the lifetime asked for; the API server may issue a
	// shorter one (its --service-account-max-token-expiration).
	Expiration time.Duration
	// Audiences are the token's audiences; empty means the API server's own.
	Audiences []string
}

// ServiceAccounts keeps the provider's ServiceAccounts and issues their
// tokens.
//
// Ensure creates sa, or returns the stored ServiceAccount of that name
// unchanged: it never takes over an existing one (the caller decides
// whether it is its own). It returns what is stored, with its UID, and
// whether this call created it. Token
// asks the TokenRequest API for a token bound to the ServiceAccount
// namespace/name and returns it parsed with the expiry the API server
// reported (ParseToken); it wraps ErrNotFound when there is no such
// ServiceAccount. Delete removes the ServiceAccount, which invalidates
// every token bound to it, and succeeds when there is none. Errors never
// quote a token. Implementations are safe for concurrent use.
type ServiceAccounts interface {
	Ensure(ctx context.Context, sa *corev1.ServiceAccount) (stored *corev1.ServiceAccount, created bool, err error)
	Token(ctx context.Context, namespace, name string, req TokenRequest) (*Token, error)
	Delete(ctx context.Context, namespace, name string) error
}

// Binder writes and removes the RBAC of ServiceAccount identities, and
// answers what a user may do (rbac.Reviewer, with its contract).
//
// Grant writes the four objects of g, with server-side apply under field
// manager "kubepact": each gets g's labels, rules, subjects and roleRef.
// It refuses, with an error wrapping ErrForeign (a *ForeignError), before
// writing anything, when one of them exists without the IdentityLabel
// value g's objects carry. Remove deletes the four objects named in g and
// succeeds for those that do not exist. Implementations are safe for
// concurrent use.
type Binder interface {
	rbac.Reviewer
	Grant(ctx context.Context, g Grants) error
	Remove(ctx context.Context, g Grants) error
}

// Lifecycle answers whether a consumer may be given an identity, by the
// lifecycle decisions the provider took about it (package lifecycle).
//
// Admit returns nil error when consumerID may be admitted; an error
// wrapping lifecycle.ErrDrained when its Tenant is Drained; a
// *lifecycle.RevokedError while its revocation record is in force; any
// other error when the records cannot be read (Issue then fails rather
// than pass). lifecycle.Gate is one. Implementations are safe for
// concurrent use.
type Lifecycle interface {
	Admit(ctx context.Context, consumerID string) (*authv1beta1.Tenant, error)
}

// ProviderPorts are the provider's I/O for Issue and Revoke. All but
// Admission and Lifecycle are required.
type ProviderPorts struct {
	Namespaces      tenant.Namespaces
	ServiceAccounts ServiceAccounts
	RBAC            Binder
	// Admission, when set, installs TokenPolicy before a token is issued,
	// so that the API server itself bounds the lifetime of the tokens a
	// consumer requests when it refreshes. Without it, only the consumer's
	// Refresher keeps within MaxExpiration, and the API server's
	// --service-account-max-token-expiration is the only bound on tokens
	// a consumer asks for by hand.
	Admission Admission
	// Lifecycle, when set, is asked before anything is written, so that a
	// consumer the provider drained, or whose certificates it revoked, is
	// refused a ServiceAccount identity too (lifecycle.Gate over the
	// provider's Tenants and revocation records). Without it, Issue sees no
	// lifecycle record: set it on a provider that also runs the nonce
	// handshake or the token server.
	Lifecycle Lifecycle
	// Commitments, when set, refuse a consumer ID that an
	// AuthorizedConsumer commits: it peers with its committed cluster keys
	// only, and a ServiceAccount identity shows none
	// (enrol.ErrNotCommitted).
	Commitments enrol.Commitments
}

// SelfTokenRequester asks a provider's API server for a new token with the
// credentials of a kubeconfig, for the ServiceAccount they belong to.
//
// Token sends one TokenRequest for ServiceAccount namespace/name to cfg's
// server with cfg's credentials and returns the token parsed with the
// expiry the server reported. It wraps identity.ErrRejected when the
// server refuses the credentials or the request (401 or 403) or the
// ServiceAccount no longer exists (it was revoked), and returns
// other failures as they are. Errors never quote a token.
// Implementations are safe for concurrent use.
type SelfTokenRequester interface {
	Token(ctx context.Context, cfg *kubeconfig.Config, namespace, name string, req TokenRequest) (*Token, error)
}

// SecretStore keeps the consumer's kubeconfig Secrets: a
// kubeconfig.SecretWriter that can read them back.
//
// Get returns the Secret namespace/name, or an error wrapping ErrNotFound.
type SecretStore interface {
	kubeconfig.SecretWriter
	Get(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

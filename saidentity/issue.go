package saidentity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// ErrWrongServiceAccount reports a token the API server issued for another
// ServiceAccount than the identity's: one deleted and created again under
// the same name while Issue ran, for example.
var ErrWrongServiceAccount = errors.New("token is for another serviceaccount")

// IssueOptions tunes Issue. The zero value, like a nil pointer, asks for
// DefaultExpiration and the API server's own audiences.
type IssueOptions struct {
	// Expiration is the token's lifetime: zero for DefaultExpiration, else
	// between MinExpiration and MaxExpiration. The API server may issue a
	// shorter one; the Identity reports what it issued.
	Expiration time.Duration
	// Audiences are the token's audiences; empty for the API server's own,
	// which is what a kubeconfig for that API server needs.
	Audiences []string
	// ProviderID names the kubeconfig's context; optional.
	ProviderID string
}

// Identity is an issued ServiceAccount identity. It prints redacted.
type Identity struct {
	// ConsumerID is the consumer the identity is for.
	ConsumerID string
	// Token is the token issued.
	Token *Token
	// Kubeconfig authenticates with Token at the provider's endpoint.
	Kubeconfig *kubeconfig.Config
}

// String prints the consumer, the token's expiry and the kubeconfig,
// redacted.
func (id Identity) String() string {
	return fmt.Sprintf("saidentity.Identity(consumer=%s %v %v)", id.ConsumerID, id.Token, id.Kubeconfig)
}

// GoString is String.
func (id Identity) GoString() string { return id.String() }

// Format makes every fmt verb print String.
func (id Identity) Format(f fmt.State, _ rune) { io.WriteString(f, id.String()) }

func (o *IssueOptions) expiration() (time.Duration, error) {
	exp := DefaultExpiration
	if o != nil && o.Expiration != 0 {
		exp = o.Expiration
	}
	if exp < MinExpiration || exp > MaxExpiration {
		return 0, fmt.Errorf("%w: expiration %s is outside %s..%s", ErrInvalidOptions, exp, MinExpiration, MaxExpiration)
	}
	return exp, nil
}

func (p ProviderPorts) check() error {
	if p.Namespaces == nil || p.ServiceAccounts == nil || p.RBAC == nil {
		return fmt.Errorf("%w: every provider port is required", ErrInvalidOptions)
	}
	return nil
}

// CheckUnprivileged asks r whether consumerID's ServiceAccount user, with
// its groups, may make any of rbac.PrivilegeProbes or NamespaceProbes, and
// returns a *rbac.PrivilegedError for the first it may, r's error when r
// cannot tell, and nil otherwise.
func CheckUnprivileged(ctx context.Context, r rbac.Reviewer, consumerID string) error {
	user, groups := UserName(consumerID), Groups(consumerID)
	if err := rbac.CheckUnprivileged(ctx, r, user, groups); err != nil {
		return err
	}
	for _, p := range NamespaceProbes(consumerID) {
		ok, err := r.Allowed(ctx, user, slices.Clone(groups), p)
		if err != nil {
			return fmt.Errorf("saidentity: checking what %q may do: %w", user, err)
		}
		if ok {
			return &rbac.PrivilegedError{User: user, Groups: groups, Probe: p}
		}
	}
	return nil
}

// Issue gives consumerID a ServiceAccount identity on the provider reached
// at endpoint: it checks the ServiceAccount's user holds no privilege,
// ensures the tenant namespace, the ServiceAccount and its RBAC, checks
// again, and requests a token. It is idempotent: called again, it issues a
// new token for the same ServiceAccount, and earlier tokens keep working
// until they expire or Revoke.
//
// Bad input (consumer ID, options, endpoint), a consumer the provider
// drained or revoked (with ProviderPorts.Lifecycle: an error wrapping
// lifecycle.ErrDrained, or a *lifecycle.RevokedError), a privileged
// identity and a foreign object change nothing. A binding that makes the identity
// privileged and appears while Issue runs is found by the second check:
// then the RBAC Issue wrote stays, and no token is issued. Tokens are for
// o.Audiences; a Refresher asks for the API server's own audiences.
func Issue(ctx context.Context, p ProviderPorts, endpoint Endpoint, consumerID string, opts *IssueOptions) (*Identity, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, fmt.Errorf("saidentity: %w", err)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	exp, err := opts.expiration()
	if err != nil {
		return nil, err
	}
	if endpoint.Server == "" {
		return nil, fmt.Errorf("%w: the provider's endpoint has no server", ErrInvalidOptions)
	}
	o := opts.orZero()
	if err := o.checkProviderID(); err != nil {
		return nil, err
	}
	if err := checkEndpoint(endpoint); err != nil {
		return nil, err
	}
	grants, err := BuildGrants(consumerID)
	if err != nil {
		return nil, err
	}
	if err := admit(ctx, p, consumerID); err != nil {
		return nil, err
	}
	if err := CheckUnprivileged(ctx, p.RBAC, consumerID); err != nil {
		return nil, err
	}
	want := ServiceAccount(consumerID)
	sa, created, err := ensureServiceAccount(ctx, p, consumerID, want)
	if err != nil {
		return nil, err
	}
	if err := checkOwned(sa, want, consumerID); err != nil {
		return nil, err
	}
	if err := grant(ctx, p, grants, want, created); err != nil {
		return nil, err
	}
	// Bindings planted between the first check and the grant count too.
	if err := CheckUnprivileged(ctx, p.RBAC, consumerID); err != nil {
		return nil, err
	}
	if err := applyTokenPolicy(ctx, p); err != nil {
		return nil, err
	}
	tok, err := p.ServiceAccounts.Token(ctx, want.Namespace, want.Name, TokenRequest{Expiration: exp, Audiences: slices.Clone(o.Audiences)})
	if err != nil {
		return nil, fmt.Errorf("saidentity: requesting a token: %w", err)
	}
	if err := checkTokenFor(tok, sa); err != nil {
		return nil, err
	}
	cfg, err := Kubeconfig(endpoint, consumerID, o.ProviderID, tok)
	if err != nil {
		return nil, err
	}
	return &Identity{ConsumerID: consumerID, Token: tok, Kubeconfig: cfg}, nil
}

// orZero returns *o, or the zero value when o is nil.
func (o *IssueOptions) orZero() IssueOptions {
	if o == nil {
		return IssueOptions{}
	}
	return *o
}

// checkProviderID checks that o.ProviderID, when set, is a valid cluster ID
// (ErrInvalidOptions).
func (o IssueOptions) checkProviderID() error {
	if o.ProviderID == "" {
		return nil
	}
	if err := clusterid.Validate(o.ProviderID); err != nil {
		return fmt.Errorf("%w: provider ID: %w", ErrInvalidOptions, err)
	}
	return nil
}

// checkEndpoint refuses an endpoint a kubeconfig cannot be built for
// (ErrInvalidOptions), before anything is written.
func checkEndpoint(endpoint Endpoint) error {
	if _, err := kubeconfig.BuildToken(kubeconfig.TokenParams{Name: "check", Server: endpoint.Server, CA: endpoint.CA, Token: "check", ProxyURL: endpoint.ProxyURL}); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

// admit asks p.Lifecycle, when set, whether consumerID may be issued an
// identity: an error wrapping lifecycle.ErrDrained, or a
// *lifecycle.RevokedError, when the provider drained or revoked it.
func admit(ctx context.Context, p ProviderPorts, consumerID string) error {
	if p.Commitments != nil {
		c, err := p.Commitments.Commitment(ctx, consumerID)
		switch {
		case err != nil:
			return fmt.Errorf("saidentity: %w", err)
		case c != nil:
			return fmt.Errorf("saidentity: %w: %s peers from Git, with its committed cluster keys only", enrol.ErrNotCommitted, consumerID)
		}
	}
	if p.Lifecycle == nil {
		return nil
	}
	if _, err := p.Lifecycle.Admit(ctx, consumerID); err != nil {
		return fmt.Errorf("saidentity: %w", err)
	}
	return nil
}

// ensureServiceAccount ensures consumerID's tenant namespace and its
// ServiceAccount want, and returns the stored ServiceAccount and whether
// this call created it.
func ensureServiceAccount(ctx context.Context, p ProviderPorts, consumerID string, want *corev1.ServiceAccount) (*corev1.ServiceAccount, bool, error) {
	if err := p.Namespaces.Ensure(ctx, tenant.Namespace(consumerID)); err != nil {
		return nil, false, fmt.Errorf("saidentity: %w", err)
	}
	sa, created, err := p.ServiceAccounts.Ensure(ctx, want)
	if err != nil {
		return nil, false, fmt.Errorf("saidentity: %w", err)
	}
	return sa, created, nil
}

// checkOwned checks that sa, stored for want, is consumerID's and not one
// another made under its name (*ForeignError).
func checkOwned(sa, want *corev1.ServiceAccount, consumerID string) error {
	if !Owned(sa, consumerID) {
		return &ForeignError{Kind: "ServiceAccount", Namespace: want.Namespace, Name: want.Name}
	}
	return nil
}

// grant writes grants, the RBAC of the ServiceAccount want. When Grant
// finds a foreign object it writes nothing; then a ServiceAccount this call
// created is deleted, so that a refusal leaves nothing behind.
func grant(ctx context.Context, p ProviderPorts, grants Grants, want *corev1.ServiceAccount, created bool) error {
	if err := p.RBAC.Grant(ctx, grants); err != nil {
		if created && errors.Is(err, ErrForeign) {
			// Grant wrote nothing: take back the ServiceAccount this call
			// made, so that a refusal leaves nothing behind.
			err = errors.Join(err, p.ServiceAccounts.Delete(ctx, want.Namespace, want.Name))
		}
		return fmt.Errorf("saidentity: %w", err)
	}
	return nil
}

// applyTokenPolicy applies the admission policy on token requests when
// p.Admission is set.
func applyTokenPolicy(ctx context.Context, p ProviderPorts) error {
	if p.Admission == nil {
		return nil
	}
	policy, binding := TokenPolicy()
	if err := p.Admission.ApplyPolicy(ctx, policy, binding); err != nil {
		return fmt.Errorf("saidentity: %w", err)
	}
	return nil
}

// checkTokenFor checks that tok was issued for sa, the same object and not
// one deleted and created again under its name (ErrWrongServiceAccount).
func checkTokenFor(tok *Token, sa *corev1.ServiceAccount) error {
	if ns, name, uid := tok.ServiceAccount(); ns != sa.Namespace || name != sa.Name || uid != sa.UID {
		return fmt.Errorf("%w: %v, want %s/%s with UID %s", ErrWrongServiceAccount, tok, sa.Namespace, sa.Name, sa.UID)
	}
	return nil
}

// Revoke removes consumerID's ServiceAccount identity: the ServiceAccount
// first, so that every token issued for it stops working at once, then its
// RBAC. It succeeds when there is nothing to remove.
func Revoke(ctx context.Context, p ProviderPorts, consumerID string) error {
	if err := clusterid.Validate(consumerID); err != nil {
		return fmt.Errorf("saidentity: %w", err)
	}
	if err := p.check(); err != nil {
		return err
	}
	grants, err := BuildGrants(consumerID)
	if err != nil {
		return err
	}
	if err := p.ServiceAccounts.Delete(ctx, clusterid.TenantNamespace(consumerID), Name(consumerID)); err != nil {
		return fmt.Errorf("saidentity: %w", err)
	}
	if err := p.RBAC.Remove(ctx, grants); err != nil {
		return fmt.Errorf("saidentity: %w", err)
	}
	return nil
}

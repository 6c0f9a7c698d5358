package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// AuthenticatedGroup is the group the API server adds to every
// authenticated user. CheckUnprivileged always checks it.
const AuthenticatedGroup = "system:authenticated"

// ErrPrivilegedUser means the user an identity would be issued for already
// holds a permission kubepact does not grant. Errors wrapping it are
// *PrivilegedError.
var ErrPrivilegedUser = errors.New("privileged user")

// PrivilegedError says which permission made CheckUnprivileged refuse a
// user. It unwraps to ErrPrivilegedUser.
type PrivilegedError struct {
	// User is the user name checked.
	User string
	// Groups are the groups checked with it, AuthenticatedGroup included.
	Groups []string
	// Probe is the first of PrivilegeProbes the user and groups may do.
	Probe authorizationv1.ResourceAttributes
}

func (e *PrivilegedError) Error() string {
	return fmt.Sprintf("rbac: %v: %q with groups %q may %s, which kubepact never grants",
		ErrPrivilegedUser, e.User, e.Groups, describe(e.Probe))
}

// Unwrap returns ErrPrivilegedUser.
func (e *PrivilegedError) Unwrap() error { return ErrPrivilegedUser }

// Reviewer asks the provider's authorizer what a user may do.
//
// Allowed reports whether a request described by attrs, made by user as a
// member of exactly groups, would be authorized, as the API server would
// decide it for a request authenticated that way (a SubjectAccessReview).
// groups are used as given: the caller adds any the API server would add.
// It returns (false, nil) when the request would be refused; a binding to a
// role that does not exist grants nothing, as in Kubernetes RBAC. It
// returns an error when it cannot tell: the review failed, or an
// authorizer failed and nothing allowed the request (a
// SubjectAccessReview's evaluationError), so callers fail closed. A
// cancelled ctx gives an error wrapping ctx.Err(). Implementations are
// safe for concurrent use.
type Reviewer interface {
	Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// Binder is the provider's RBAC port: it checks that a user is unprivileged
// (Reviewer) before kubepact binds it (Applier). One port does both so that
// a provider cannot be given the means to bind without the means to check.
type Binder interface {
	Applier
	Reviewer
}

// PrivilegeProbes returns the requests CheckUnprivileged asks about, in the
// order it asks. A user allowed any of them holds a permission kubepact
// never grants, and in a stock cluster can make itself cluster-admin:
//
//   - get secrets in every namespace: every token, key and kubeconfig
//     stored in Secrets; any ClusterRoleBinding to cluster-admin, admin,
//     edit or a wildcard role allows it;
//   - get secrets in kube-system: the system controllers' tokens and the
//     cluster's own keys, through a RoleBinding there alone;
//   - create pods in kube-system: run as any of the system controllers'
//     ServiceAccounts; a RoleBinding to admin or edit in kube-system, or a
//     wildcard there, allows it;
//   - escalate clusterroles: write a role with permissions it does not hold;
//   - bind clusterrole cluster-admin: bind roles it does not hold (a rule
//     limited to that role name matches too);
//   - impersonate users: act as any user;
//   - approve for the signer kubernetes.io/kube-apiserver-client: get client
//     certificates for any user or group approved.
//
// Concrete requests are probed rather than the "*" verb or resource: an
// authorizer matches a requested "*" only against a rule that literally
// says "*", while a wildcard rule matches every concrete request above. The
// list is short on purpose, since each probe costs one request to the API
// server; it catches the grants that matter, not every grant (a
// cluster-wide binding to view, for example, passes).
func PrivilegeProbes() []authorizationv1.ResourceAttributes {
	return []authorizationv1.ResourceAttributes{
		{Verb: "get", Version: "v1", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "get", Version: "v1", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "create", Version: "v1", Resource: "pods"},
		{Verb: "escalate", Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles"},
		{Verb: "bind", Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "impersonate", Version: "v1", Resource: "users"},
		{Verb: "approve", Group: "certificates.k8s.io", Version: "v1", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client"},
	}
}

// CheckUnprivileged asks r, for each of PrivilegeProbes, whether user, as a
// member of groups and of AuthenticatedGroup, may make it. It returns nil
// when none is allowed; otherwise it reads the answers in the order of
// PrivilegeProbes and returns, for the first that is not a plain "no",
// either a *PrivilegedError naming the probe allowed or r's error, wrapped:
// an identity that cannot be checked is not bound.
//
// The provider calls it before it issues a certificate or binds anything,
// with the user and groups the certificate will carry (for a ControlPlane
// identity: the consumer cluster ID and csr.ControlPlaneOrganization), so
// that a consumer cannot pick an ID that names an existing, privileged user
// and inherit its bindings. The identity is checked whole, user and groups
// together, as the API server would authorize it: a permission held only by
// one of the groups counts too, because the certificate would carry it.
//
// It makes len(PrivilegeProbes()) calls of r, all at once, so a check
// takes about as long as one review.
func CheckUnprivileged(ctx context.Context, r Reviewer, user string, groups []string) error {
	if user == "" {
		return errors.New("rbac: checking privileges: empty user name")
	}
	groups = slices.Clone(groups)
	if !slices.Contains(groups, AuthenticatedGroup) {
		groups = append(groups, AuthenticatedGroup)
	}
	probes := PrivilegeProbes()
	type answer struct {
		allowed bool
		err     error
	}
	answers := make([]answer, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() {
			ok, err := r.Allowed(ctx, user, slices.Clone(groups), p)
			answers[i] = answer{ok, err}
		})
	}
	wg.Wait()
	for i, a := range answers {
		switch {
		case a.err != nil:
			return fmt.Errorf("rbac: checking whether user %q may %s: %w", user, describe(probes[i]), a.err)
		case a.allowed:
			return &PrivilegedError{User: user, Groups: groups, Probe: probes[i]}
		}
	}
	return nil
}

// describe returns attrs in words, such as "get secrets cluster-wide" or
// "create pods in namespace kube-system".
func describe(attrs authorizationv1.ResourceAttributes) string {
	var b strings.Builder
	b.WriteString(attrs.Verb)
	b.WriteByte(' ')
	b.WriteString(attrs.Resource)
	if attrs.Subresource != "" {
		b.WriteString("/" + attrs.Subresource)
	}
	if attrs.Group != "" {
		b.WriteString("." + attrs.Group)
	}
	if attrs.Name != "" {
		b.WriteString(" " + attrs.Name)
	}
	if attrs.Namespace != "" {
		b.WriteString(" in namespace " + attrs.Namespace)
	} else {
		b.WriteString(" cluster-wide")
	}
	return b.String()
}

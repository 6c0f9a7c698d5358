package fake

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/saidentity"
)

var (
	_ saidentity.ServiceAccounts    = (*ServiceAccounts)(nil)
	_ saidentity.Binder             = (*ServiceAccountRBAC)(nil)
	_ saidentity.SelfTokenRequester = (*TokenClient)(nil)
	_ identity.Reviewer             = (*TokenClient)(nil)
	_ saidentity.SecretStore        = (*KubeconfigSecrets)(nil)
)

// ErrInvalidTokenRequest is what ServiceAccounts.Token returns for a
// lifetime below ten minutes, which the TokenRequest API refuses.
var ErrInvalidTokenRequest = errors.New("invalid TokenRequest")

// ServiceAccounts is an in-memory saidentity.ServiceAccounts: it keeps
// ServiceAccounts and issues their tokens as the TokenRequest API does, as
// unsigned JWTs carrying the same claims (namespace, name and UID of the
// ServiceAccount, iat, exp) that only it can authenticate (TokenClient). A
// token stops authenticating when it expires at Clock's time or when its
// ServiceAccount is deleted, even if one of the same name is created again.
// MaxExpiration, when set, caps lifetimes as the API server's
// --service-account-max-token-expiration does. It is safe for concurrent use.
type ServiceAccounts struct {
	// Clock is the time tokens are issued and checked at; nil means the
	// real clock. Set it before the first call.
	Clock clock.PassiveClock
	// MaxExpiration caps token lifetimes; zero means no cap.
	MaxExpiration time.Duration

	objects[*corev1.ServiceAccount]
	ensureMu sync.Mutex
	tokensMu sync.Mutex
	tokens   map[string]issued
}

type issued struct {
	namespace, name string
	uid             types.UID
	expiry          time.Time
}

func (s *ServiceAccounts) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// Ensure creates sa or returns the stored ServiceAccount of that name.
func (s *ServiceAccounts) Ensure(ctx context.Context, sa *corev1.ServiceAccount) (*corev1.ServiceAccount, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.ensureMu.Lock()
	defer s.ensureMu.Unlock()
	if cur, ok := s.get(sa.Namespace, sa.Name); ok {
		return cur, false, nil
	}
	return s.apply(sa), true, nil
}

// Plant stores sa as someone other than kubepact would create it.
func (s *ServiceAccounts) Plant(sa *corev1.ServiceAccount) *corev1.ServiceAccount {
	s.ensureMu.Lock()
	defer s.ensureMu.Unlock()
	return s.writeAsOther(sa, nil)
}

// Get returns the ServiceAccount namespace/name.
func (s *ServiceAccounts) Get(namespace, name string) (*corev1.ServiceAccount, bool) {
	return s.get(namespace, name)
}

// Token issues a token of the ServiceAccount namespace/name.
func (s *ServiceAccounts) Token(ctx context.Context, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sa, ok := s.get(namespace, name)
	if !ok {
		return nil, fmt.Errorf("%w: ServiceAccount %s/%s", saidentity.ErrNotFound, namespace, name)
	}
	if req.Expiration < saidentity.MinExpiration {
		return nil, fmt.Errorf("%w: expirationSeconds %d is below 600", ErrInvalidTokenRequest, int64(req.Expiration/time.Second))
	}
	exp := req.Expiration
	if s.MaxExpiration > 0 && exp > s.MaxExpiration {
		exp = s.MaxExpiration
	}
	now := s.now().Truncate(time.Second)
	expiry := now.Add(exp.Truncate(time.Second))
	c := map[string]any{
		"iat": now.Unix(), "nbf": now.Unix(), "exp": expiry.Unix(),
		"sub": "system:serviceaccount:" + namespace + ":" + name,
		"kubernetes.io": map[string]any{
			"namespace":      namespace,
			"serviceaccount": map[string]string{"name": name, "uid": string(sa.UID)},
		},
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	sig := make([]byte, 32)
	if _, err := rand.Read(sig); err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding
	value := enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString(sig)
	s.tokensMu.Lock()
	if s.tokens == nil {
		s.tokens = map[string]issued{}
	}
	s.tokens[value] = issued{namespace: namespace, name: name, uid: sa.UID, expiry: expiry}
	s.tokensMu.Unlock()
	return saidentity.ParseToken(value, expiry)
}

// Delete removes the ServiceAccount namespace/name; its tokens stop
// authenticating.
func (s *ServiceAccounts) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.delete(namespace, name)
	return nil
}

// Authenticate returns the user and groups token authenticates as, or an
// error wrapping identity.ErrRejected, as a 401 does.
func (s *ServiceAccounts) Authenticate(token string) (string, []string, error) {
	s.tokensMu.Lock()
	t, ok := s.tokens[token]
	s.tokensMu.Unlock()
	if !ok {
		return "", nil, fmt.Errorf("%w: unknown token", identity.ErrRejected)
	}
	if !s.now().Before(t.expiry) {
		return "", nil, fmt.Errorf("%w: token expired", identity.ErrRejected)
	}
	sa, ok := s.get(t.namespace, t.name)
	if !ok || sa.UID != t.uid {
		return "", nil, fmt.Errorf("%w: the token's ServiceAccount no longer exists", identity.ErrRejected)
	}
	return "system:serviceaccount:" + t.namespace + ":" + t.name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + t.namespace, "system:authenticated"}, nil
}

// ServiceAccountRBAC is an in-memory saidentity.Binder. Allowed evaluates
// its Roles, ClusterRoles and their bindings as fake.RBAC does, Roles
// included; nothing else authorizes. The Plant methods write as someone
// other than kubepact, without IdentityLabel unless the object has it. It
// is safe for concurrent use.
type ServiceAccountRBAC struct {
	Roles               objects[*rbacv1.Role]
	RoleBindings        objects[*rbacv1.RoleBinding]
	ClusterRoles        objects[*rbacv1.ClusterRole]
	ClusterRoleBindings objects[*rbacv1.ClusterRoleBinding]
	mu                  sync.Mutex
}

// PlantRole stores r as another component would.
func (a *ServiceAccountRBAC) PlantRole(r *rbacv1.Role) { a.Roles.writeAsOther(r, nil) }

// PlantRoleBinding stores b as another component would.
func (a *ServiceAccountRBAC) PlantRoleBinding(b *rbacv1.RoleBinding) {
	a.RoleBindings.writeAsOther(b, nil)
}

// PlantClusterRole stores r as another component would.
func (a *ServiceAccountRBAC) PlantClusterRole(r *rbacv1.ClusterRole) {
	a.ClusterRoles.writeAsOther(r, nil)
}

// PlantClusterRoleBinding stores b as another component would.
func (a *ServiceAccountRBAC) PlantClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	a.ClusterRoleBindings.writeAsOther(b, nil)
}

// Allowed reports whether the roles and bindings held allow user, a member
// of groups, to make the request attrs describes.
func (a *ServiceAccountRBAC) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	rules := func(namespace string, ref rbacv1.RoleRef) []rbacv1.PolicyRule {
		switch ref.Kind {
		case "ClusterRole":
			if r, ok := a.ClusterRoles.get("", ref.Name); ok {
				return r.Rules
			}
		case "Role":
			if r, ok := a.Roles.get(namespace, ref.Name); ok && namespace != "" {
				return r.Rules
			}
		}
		return nil
	}
	clusterRoleBindings, roleBindings := bindingsFor(&a.ClusterRoleBindings, &a.RoleBindings, user, groups, attrs.Namespace)
	return authorize(clusterRoleBindings, roleBindings, user, groups, attrs, rules), nil
}

// Grant writes g's objects, refusing all of them when one exists without
// g's IdentityLabel value.
func (a *ServiceAccountRBAC) Grant(ctx context.Context, g saidentity.Grants) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	want := g.Role.Labels[saidentity.IdentityLabel]
	check := func(obj metav1.Object, ok bool, kind string, w metav1.Object) error {
		if ok && obj.GetLabels()[saidentity.IdentityLabel] != want {
			return &saidentity.ForeignError{Kind: kind, Namespace: w.GetNamespace(), Name: w.GetName()}
		}
		return nil
	}
	r, rok := a.Roles.get(g.Role.Namespace, g.Role.Name)
	rb, rbok := a.RoleBindings.get(g.RoleBinding.Namespace, g.RoleBinding.Name)
	cr, crok := a.ClusterRoles.get("", g.ClusterRole.Name)
	crb, crbok := a.ClusterRoleBindings.get("", g.ClusterRoleBinding.Name)
	for _, err := range []error{
		check(r, rok, "Role", g.Role),
		check(rb, rbok, "RoleBinding", g.RoleBinding),
		check(cr, crok, "ClusterRole", g.ClusterRole),
		check(crb, crbok, "ClusterRoleBinding", g.ClusterRoleBinding),
	} {
		if err != nil {
			return err
		}
	}
	if rbok && rb.RoleRef != g.RoleBinding.RoleRef {
		a.RoleBindings.delete(rb.Namespace, rb.Name)
	}
	if crbok && crb.RoleRef != g.ClusterRoleBinding.RoleRef {
		a.ClusterRoleBindings.delete("", crb.Name)
	}
	a.Roles.applyOwned(g.Role, nil)
	a.RoleBindings.applyOwned(g.RoleBinding, nil)
	a.ClusterRoles.applyOwned(g.ClusterRole, nil)
	a.ClusterRoleBindings.applyOwned(g.ClusterRoleBinding, nil)
	return nil
}

// Remove deletes g's objects.
func (a *ServiceAccountRBAC) Remove(ctx context.Context, g saidentity.Grants) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ClusterRoleBindings.delete("", g.ClusterRoleBinding.Name)
	a.RoleBindings.delete(g.RoleBinding.Namespace, g.RoleBinding.Name)
	a.ClusterRoles.delete("", g.ClusterRole.Name)
	a.Roles.delete(g.Role.Namespace, g.Role.Name)
	return nil
}

// TokenClient is what a consumer holding a ServiceAccount kubeconfig sees
// of an in-memory provider: a saidentity.SelfTokenRequester and an
// identity.Reviewer that authenticate the kubeconfig's bearer token with
// ServiceAccounts and authorize with RBAC, as the provider's API server
// would. It ignores the kubeconfig's server and CA. Errors a 401 or 403
// would give wrap identity.ErrRejected. Faults, when set, is called before
// each call and its error returned. It is safe for concurrent use.
type TokenClient struct {
	ServiceAccounts *ServiceAccounts
	RBAC            *ServiceAccountRBAC
	// Faults, when set, may fail a call before it is made: op is "Token" or
	// "Review".
	Faults func(op string) error
}

// Token issues a new token of namespace/name if cfg's token may.
func (c *TokenClient) Token(ctx context.Context, cfg *kubeconfig.Config, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	if c.Faults != nil {
		if err := c.Faults("Token"); err != nil {
			return nil, err
		}
	}
	user, groups, err := c.ServiceAccounts.Authenticate(cfg.BearerToken())
	if err != nil {
		return nil, err
	}
	ok, err := c.RBAC.Allowed(ctx, user, groups, authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: "create", Version: "v1", Resource: "serviceaccounts", Subresource: "token", Name: name,
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s may not create serviceaccounts/token %s/%s", identity.ErrRejected, user, namespace, name)
	}
	return c.ServiceAccounts.Token(ctx, namespace, name, req)
}

// Review answers who cfg's bearer token authenticates as.
func (c *TokenClient) Review(ctx context.Context, cfg *kubeconfig.Config) (string, []string, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if c.Faults != nil {
		if err := c.Faults("Review"); err != nil {
			return "", nil, err
		}
	}
	return c.ServiceAccounts.Authenticate(cfg.BearerToken())
}

// KubeconfigSecrets is an in-memory saidentity.SecretStore: a SecretWriter
// that reads Secrets back.
type KubeconfigSecrets struct{ SecretWriter }

// Get returns the Secret namespace/name, or an error wrapping
// saidentity.ErrNotFound.
func (s *KubeconfigSecrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	got, ok := s.get(namespace, name)
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s/%s", saidentity.ErrNotFound, namespace, name)
	}
	return got, nil
}

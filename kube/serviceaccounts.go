package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/saidentity"
)

// ServiceAccounts is a saidentity.ServiceAccounts over the API server. Its
// client needs create and get on serviceaccounts, create on
// serviceaccounts/token and delete on serviceaccounts in tenant
// namespaces.
type ServiceAccounts struct{ client kubernetes.Interface }

var _ saidentity.ServiceAccounts = (*ServiceAccounts)(nil)

// NewServiceAccounts returns a ServiceAccounts using client.
func NewServiceAccounts(client kubernetes.Interface) *ServiceAccounts {
	return &ServiceAccounts{client: client}
}

// Ensure creates sa, or returns the stored one unchanged.
func (s *ServiceAccounts) Ensure(ctx context.Context, sa *corev1.ServiceAccount) (*corev1.ServiceAccount, bool, error) {
	api := s.client.CoreV1().ServiceAccounts(sa.Namespace)
	got, err := api.Create(ctx, sa, metav1.CreateOptions{FieldManager: FieldManager})
	created := err == nil
	if apierrors.IsAlreadyExists(err) {
		got, err = api.Get(ctx, sa.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, false, wrap(err, "ensuring", "ServiceAccount", sa.Namespace, sa.Name)
	}
	return got, created, nil
}

// Token asks the TokenRequest API for a token of namespace/name.
func (s *ServiceAccounts) Token(ctx context.Context, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	return requestToken(ctx, s.client, namespace, name, req)
}

// Delete removes the ServiceAccount namespace/name.
func (s *ServiceAccounts) Delete(ctx context.Context, namespace, name string) error {
	err := s.client.CoreV1().ServiceAccounts(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "ServiceAccount", namespace, name)
	}
	return nil
}

func requestToken(ctx context.Context, c kubernetes.Interface, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	seconds := int64(req.Expiration / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         slices.Clone(req.Audiences),
		ExpirationSeconds: &seconds,
	}}
	got, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	if isObjectNotFound(err, name) {
		return nil, notFound(saidentity.ErrNotFound, err, "ServiceAccount", namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "requesting a token of", "ServiceAccount", namespace, name)
	}
	tok, err := saidentity.ParseToken(got.Status.Token, got.Status.ExpirationTimestamp.Time)
	if err != nil {
		return nil, fmt.Errorf("TokenRequest for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tok, nil
}

// ServiceAccountRBAC is a saidentity.Binder over the API server. Its
// client needs what RBAC's does, plus get, apply (patch) and delete on
// roles, rolebindings, clusterroles and clusterrolebindings, and the
// permissions it grants (or bind and escalate).
type ServiceAccountRBAC struct {
	client kubernetes.Interface
	rbac   *RBAC
}

var _ saidentity.Binder = (*ServiceAccountRBAC)(nil)

// NewServiceAccountRBAC returns a ServiceAccountRBAC using client.
func NewServiceAccountRBAC(client kubernetes.Interface) *ServiceAccountRBAC {
	return &ServiceAccountRBAC{client: client, rbac: NewRBAC(client)}
}

// Allowed asks the API server with one SubjectAccessReview, as RBAC's
// Allowed does.
func (a *ServiceAccountRBAC) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	return a.rbac.Allowed(ctx, user, groups, attrs)
}

// foreign returns a *saidentity.ForeignError when the object get reads
// exists without want's IdentityLabel value.
func foreign[T metav1.Object](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error), kind string, want metav1.Object) error {
	cur, err := get(ctx, want.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return wrap(err, "reading", kind, want.GetNamespace(), want.GetName())
	}
	if cur.GetLabels()[saidentity.IdentityLabel] != want.GetLabels()[saidentity.IdentityLabel] {
		return &saidentity.ForeignError{Kind: kind, Namespace: want.GetNamespace(), Name: want.GetName()}
	}
	return nil
}

// Grant checks that none of g's objects is someone else's, then applies
// them, the roles before the bindings.
func (a *ServiceAccountRBAC) Grant(ctx context.Context, g saidentity.Grants) error {
	rbacAPI := a.client.RbacV1()
	checks := []error{
		foreign(ctx, rbacAPI.Roles(g.Role.Namespace).Get, "Role", g.Role),
		foreign(ctx, rbacAPI.RoleBindings(g.RoleBinding.Namespace).Get, "RoleBinding", g.RoleBinding),
		foreign(ctx, rbacAPI.ClusterRoles().Get, "ClusterRole", g.ClusterRole),
		foreign(ctx, rbacAPI.ClusterRoleBindings().Get, "ClusterRoleBinding", g.ClusterRoleBinding),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	role := rbacv1ac.Role(g.Role.Name, g.Role.Namespace).WithLabels(g.Role.Labels).WithRules(rulesAC(g.Role.Rules)...)
	if _, err := rbacAPI.Roles(g.Role.Namespace).Apply(ctx, role, applyOptions(true)); err != nil {
		return wrap(err, "applying", "Role", g.Role.Namespace, g.Role.Name)
	}
	if err := a.rbac.ApplyRoleBinding(ctx, g.RoleBinding); err != nil {
		return err
	}
	cr := rbacv1ac.ClusterRole(g.ClusterRole.Name).WithLabels(g.ClusterRole.Labels).WithRules(rulesAC(g.ClusterRole.Rules)...)
	if _, err := rbacAPI.ClusterRoles().Apply(ctx, cr, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ClusterRole", "", g.ClusterRole.Name)
	}
	return a.rbac.ApplyClusterRoleBinding(ctx, g.ClusterRoleBinding)
}

// rulesAC returns rules as apply configurations.
func rulesAC(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, len(rules))
	for i, r := range rules {
		out[i] = rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithVerbs(r.Verbs...).WithResourceNames(r.ResourceNames...).WithNonResourceURLs(r.NonResourceURLs...)
	}
	return out
}

// Remove deletes g's objects, the bindings first.
func (a *ServiceAccountRBAC) Remove(ctx context.Context, g saidentity.Grants) error {
	api := a.client.RbacV1()
	steps := []struct {
		kind, namespace, name string
		del                   func(context.Context, string, metav1.DeleteOptions) error
	}{
		{"ClusterRoleBinding", "", g.ClusterRoleBinding.Name, api.ClusterRoleBindings().Delete},
		{"RoleBinding", g.RoleBinding.Namespace, g.RoleBinding.Name, api.RoleBindings(g.RoleBinding.Namespace).Delete},
		{"ClusterRole", "", g.ClusterRole.Name, api.ClusterRoles().Delete},
		{"Role", g.Role.Namespace, g.Role.Name, api.Roles(g.Role.Namespace).Delete},
	}
	for _, s := range steps {
		if err := s.del(ctx, s.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return wrap(err, "deleting", s.kind, s.namespace, s.name)
		}
	}
	return nil
}

// TokenRequester is the saidentity.SelfTokenRequester of a real API
// server: it sends the TokenRequest with the kubeconfig's own
// credentials and nothing else, and keeps no connection open between
// requests. It is safe for concurrent use.
type TokenRequester struct {
	// Timeout bounds one request, on top of the context; zero means 30
	// seconds.
	Timeout time.Duration
}

var _ saidentity.SelfTokenRequester = TokenRequester{}

// Token requests a token of namespace/name with cfg's credentials.
func (r TokenRequester) Token(ctx context.Context, cfg *kubeconfig.Config, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	client, done, err := kubeconfigClient(cfg, r.Timeout)
	if err != nil {
		return nil, err
	}
	defer done()
	tok, err := requestToken(ctx, client, namespace, name, req)
	if rejected(err) || errors.Is(err, saidentity.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", identity.ErrRejected, err)
	}
	return tok, err
}

// kubeconfigClient returns a client using cfg alone, and a function that
// closes its idle connections.
func kubeconfigClient(cfg *kubeconfig.Config, timeout time.Duration) (kubernetes.Interface, func(), error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	rc, err := cfg.RESTConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil || tlsCfg == nil {
		return nil, nil, fmt.Errorf("kubeconfig: TLS configuration: %w", err)
	}
	proxy := rc.Proxy
	if proxy == nil {
		proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsCfg, Proxy: proxy})
	rt, err := rest.HTTPWrappersForConfig(rc, transport)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(rc, &http.Client{Transport: rt, Timeout: timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return client, transport.CloseIdleConnections, nil
}

// KubeconfigSecrets is a saidentity.SecretStore over the API server: a
// SecretWriter that reads Secrets back.
type KubeconfigSecrets struct{ SecretWriter }

var _ saidentity.SecretStore = (*KubeconfigSecrets)(nil)

// NewKubeconfigSecrets returns a KubeconfigSecrets using client.
func NewKubeconfigSecrets(client kubernetes.Interface) *KubeconfigSecrets {
	return &KubeconfigSecrets{SecretWriter{client: client}}
}

// Get returns the Secret namespace/name.
func (s *KubeconfigSecrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	got, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if isObjectNotFound(err, name) {
		return nil, notFound(saidentity.ErrNotFound, err, "Secret", namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", namespace, name)
	}
	return got, nil
}

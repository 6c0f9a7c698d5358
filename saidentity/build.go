package saidentity

import (
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/tenant"
)

const (
	// NamePrefix prefixes the ServiceAccount, Role and RoleBinding of a
	// consumer: "remote-<consumerID>", as in Liqo v0.2.
	NamePrefix = "remote-"
	// ClusterNamePrefix prefixes the ClusterRole and ClusterRoleBinding of a
	// consumer, which share one namespace with every other cluster-wide role.
	ClusterNamePrefix = "kubepact-remote-"
	// IdentityLabel marks every object Issue writes for a consumer; its
	// value is the consumer's cluster ID.
	IdentityLabel = "kubepact.io/serviceaccount-identity"
	// IdentityType is the value of kubeconfig.IdentityTypeLabel on the
	// consumer's kubeconfig Secret.
	IdentityType = "ServiceAccount"
	// PeeringRequestGroup is the API group of Liqo v0.2's PeeringRequests.
	PeeringRequestGroup = "discovery.liqo.io"
)

// Token lifetimes.
const (
	// DefaultExpiration is the lifetime asked for when none is given.
	DefaultExpiration = time.Hour
	// MinExpiration is the shortest lifetime the TokenRequest API issues.
	MinExpiration = 10 * time.Minute
	// MaxExpiration is the longest lifetime Issue and a Refresher ask for.
	MaxExpiration = 24 * time.Hour
)

var (
	// ErrInvalidOptions reports options that cannot make an identity, such
	// as a lifetime outside MinExpiration..MaxExpiration or no server.
	ErrInvalidOptions = errors.New("invalid serviceaccount identity options")
	// ErrForeign reports an object of the identity's name that kubepact did
	// not make for that consumer. Errors wrapping it are *ForeignError.
	ErrForeign = errors.New("object exists and is not kubepact's")
)

// ForeignError names an object Issue refused to take over.
type ForeignError struct {
	Kind, Namespace, Name string
}

func (e *ForeignError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("saidentity: %s %s: %v", e.Kind, e.Name, ErrForeign)
	}
	return fmt.Sprintf("saidentity: %s %s/%s: %v", e.Kind, e.Namespace, e.Name, ErrForeign)
}

// Unwrap returns ErrForeign.
func (e *ForeignError) Unwrap() error { return ErrForeign }

// Name returns the name of consumerID's ServiceAccount, Role and
// RoleBinding.
func Name(consumerID string) string { return NamePrefix + consumerID }

// ClusterName returns the name of consumerID's ClusterRole and
// ClusterRoleBinding.
func ClusterName(consumerID string) string { return ClusterNamePrefix + consumerID }

// UserName returns the user name the API server gives consumerID's
// ServiceAccount.
func UserName(consumerID string) string {
	return "system:serviceaccount:" + clusterid.TenantNamespace(consumerID) + ":" + Name(consumerID)
}

// Groups returns the groups the API server gives consumerID's
// ServiceAccount.
func Groups(consumerID string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + clusterid.TenantNamespace(consumerID), "system:authenticated"}
}

func labels(consumerID string) map[string]string {
	return map[string]string{clusterid.Label: consumerID, IdentityLabel: consumerID}
}

// Owned reports whether obj carries IdentityLabel for consumerID: kubepact
// made it for that consumer.
func Owned(obj metav1.Object, consumerID string) bool {
	return obj.GetLabels()[IdentityLabel] == consumerID
}

// IdentityBinding reports whether b is a binding Issue made for
// consumerID's identity, which a drain or a revocation of the consumer
// deletes (the provider's Drain and Revoke): it carries IdentityLabel with
// value consumerID, and it has at least one subject, every one of them the
// identity's ServiceAccount. A binding that also grants to anyone else is
// not the identity's, whoever labelled it. Without these bindings the
// identity's tokens may do nothing, refreshing them included: a consumer's
// Refresher then fails with ErrRevoked.
func IdentityBinding(b lifecycle.Binding, consumerID string) bool {
	if clusterid.Validate(consumerID) != nil || b.Labels[IdentityLabel] != consumerID || len(b.Subjects) == 0 {
		return false
	}
	ns, name := clusterid.TenantNamespace(consumerID), Name(consumerID)
	for _, s := range b.Subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.APIGroup != "" || s.Namespace != ns || s.Name != name {
			return false
		}
	}
	return true
}

// ServiceAccount returns consumerID's ServiceAccount. It carries no
// secrets and does not mount a token.
func ServiceAccount(consumerID string) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(consumerID),
			Namespace: clusterid.TenantNamespace(consumerID),
			Labels:    labels(consumerID),
		},
		AutomountServiceAccountToken: &no,
	}
}

// Grants is the RBAC of one ServiceAccount identity.
type Grants struct {
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
}

// BuildGrants returns the RBAC of consumerID's identity, described in the
// package documentation.
func BuildGrants(consumerID string) (Grants, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return Grants{}, err
	}
	ns, name, cname := clusterid.TenantNamespace(consumerID), Name(consumerID), ClusterName(consumerID)
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}
	return Grants{
		Role: &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(consumerID)},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{consumerID}, Verbs: []string{"get", "update", "patch", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{name}, Verbs: []string{"create"}},
			},
		},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(consumerID)},
			Subjects:   subject,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: cname, Labels: labels(consumerID)},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{PeeringRequestGroup}, Resources: []string{"peeringrequests"}, ResourceNames: []string{consumerID}, Verbs: []string{"get", "update", "patch", "delete"}},
			},
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: cname, Labels: labels(consumerID)},
			Subjects:   subject,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cname},
		},
	}, nil
}

// NamespaceProbes returns the requests in consumerID's tenant namespace
// that its identity must not be allowed, checked with rbac.PrivilegeProbes
// before Issue binds or issues anything: reading any other Secret, listing
// Secrets, running pods, binding roles, and getting tokens for another
// ServiceAccount. A binding someone planted for the identity's user or
// groups that allows any of them makes Issue refuse.
func NamespaceProbes(consumerID string) []authorizationv1.ResourceAttributes {
	ns := clusterid.TenantNamespace(consumerID)
	// "-" is no valid object name, so no rule for the consumer's own names
	// can match it.
	return []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "list", Version: "v1", Resource: "secrets"},
		{Namespace: ns, Verb: "get", Version: "v1", Resource: "secrets", Name: "-"},
		{Namespace: ns, Verb: "create", Version: "v1", Resource: "pods"},
		{Namespace: ns, Verb: "create", Group: rbacv1.GroupName, Version: "v1", Resource: "rolebindings"},
		{Namespace: ns, Verb: "create", Version: "v1", Resource: "serviceaccounts", Subresource: "token", Name: "-"},
		{Verb: "list", Group: PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests"},
	}
}

// Endpoint is how the consumer reaches the provider's API server.
type Endpoint struct {
	// Server is the https URL of the API server.
	Server string
	// CA is the PEM CA bundle of the API server; optional.
	CA []byte
	// ProxyURL is the proxy to reach Server through; optional.
	ProxyURL string
}

// Kubeconfig returns the kubeconfig for consumerID's identity at endpoint,
// authenticating with token. Its context is named after the provider when
// providerID is set, after the ServiceAccount otherwise, and its default
// namespace is the consumer's tenant namespace on the provider.
func Kubeconfig(endpoint Endpoint, consumerID, providerID string, token *Token) (*kubeconfig.Config, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, err
	}
	if token == nil {
		return nil, fmt.Errorf("%w: no token", ErrInvalidOptions)
	}
	name := Name(consumerID)
	if providerID != "" {
		name = providerID
	}
	return kubeconfig.BuildToken(kubeconfig.TokenParams{
		Name:      name,
		Server:    endpoint.Server,
		CA:        endpoint.CA,
		Token:     token.value,
		Namespace: clusterid.TenantNamespace(consumerID),
		ProxyURL:  endpoint.ProxyURL,
	})
}

// SecretName returns the name of the consumer's Secret holding the
// kubeconfig of its ServiceAccount identity on provider providerID.
func SecretName(providerID string) string { return "kubeconfig-serviceaccount-" + providerID }

// SecretFor returns the consumer's Secret holding cfg, the kubeconfig of its
// identity on provider providerID, in the consumer's tenant namespace for
// that provider.
func SecretFor(providerID string, cfg *kubeconfig.Config) (*corev1.Secret, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	data, err := cfg.Marshal()
	if err != nil {
		return nil, fmt.Errorf("saidentity: serialising %v: %w", cfg, err)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        SecretName(providerID),
			Namespace:   tenant.Namespace(providerID).Name,
			Labels:      map[string]string{clusterid.Label: providerID, kubeconfig.IdentityTypeLabel: IdentityType},
			Annotations: map[string]string{kubeconfig.RemoteTenantNamespaceAnnotation: cfg.Namespace()},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{kubeconfig.SecretKey: data},
	}, nil
}

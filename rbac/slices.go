package rbac

import (
	"context"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
)

// Names of the ClusterRoles bound to ResourceSlice identities, as Liqo's.
const (
	// VirtualKubeletClusterRoleName is bound in each namespace a slice may
	// use.
	VirtualKubeletClusterRoleName = "liqo-virtual-kubelet-remote"
	// VirtualKubeletClusterWideRoleName is bound cluster-wide: metrics.
	VirtualKubeletClusterWideRoleName = "liqo-virtual-kubelet-remote-clusterwide"
)

// The app.kubernetes.io/name labels of the slice roles, as Liqo's chart
// sets them.
const (
	VirtualKubeletNameValue            = "virtual-kubelet-remote"
	VirtualKubeletClusterWideNameValue = "virtual-kubelet-remote-clusterwide"
)

// VirtualKubeletClusterRole returns the ClusterRole a slice identity is
// bound to in each namespace it may use: what a virtual kubelet of the
// consumer does there.
func VirtualKubeletClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   VirtualKubeletClusterRoleName,
			Labels: map[string]string{NameLabel: VirtualKubeletNameValue},
		},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "events", "persistentvolumeclaims", "secrets", "services"}, Verbs: objectVerbs()},
			{APIGroups: []string{""}, Resources: []string{"pods/attach", "pods/exec"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"", "metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: objectVerbs()},
			{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowendpointslices", "shadowpods"}, Verbs: objectVerbs()},
		},
	}
}

// VirtualKubeletClusterWideRole returns the ClusterRole a slice identity is
// bound to cluster-wide: reading metrics.
func VirtualKubeletClusterWideRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   VirtualKubeletClusterWideRoleName,
			Labels: map[string]string{NameLabel: VirtualKubeletClusterWideNameValue},
		},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"metrics.liqo.io"}, Resources: []string{"scrape/metrics"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
}

// ResourceSliceClusterRoleBindingName is the name of the ClusterRoleBinding
// of consumerID's slice identities.
func ResourceSliceClusterRoleBindingName(consumerID string) string {
	return BindingName(VirtualKubeletClusterWideRoleName) + "-" + consumerID
}

// ResourceSliceClusterRoleBinding binds group consumerID, the O of every
// slice certificate of the consumer, to VirtualKubeletClusterWideRole.
func ResourceSliceClusterRoleBinding(consumerID string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   ResourceSliceClusterRoleBindingName(consumerID),
			Labels: map[string]string{clusterid.Label: consumerID, ManagedByLabel: ManagedByValue},
		},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: VirtualKubeletClusterWideRoleName},
	}
}

// ClusterBinder applies and deletes ClusterRoleBindings on the provider.
//
// ApplyClusterRoleBinding sets b's subjects, roleRef and labels, owning only
// those, as a server-side apply with one field manager does: subjects are
// taken over (a binding kubepact makes grants to exactly b's subjects),
// labels others set stay, and a binding whose roleRef differs is replaced,
// as roleRef is immutable. DeleteClusterRoleBinding removes a binding and
// succeeds when there is none. Both succeed without writing when nothing
// changes. Implementations are safe for concurrent use.
type ClusterBinder interface {
	ApplyClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error
	DeleteClusterRoleBinding(ctx context.Context, name string) error
}

// TenantNamespaceSliceBinding reports whether b is a binding that kubepact
// v0.1.0 and earlier made by default for a consumer's slice
// identities in its tenant namespace, and names that consumer: the
// RoleBinding named BindingName(VirtualKubeletClusterRoleName) in
// namespace liqo-tenant-<consumerID>, to ClusterRole
// VirtualKubeletClusterRoleName, whose only subject is group consumerID.
// Such a binding lets the peer's slice identities read and write every
// Secret and ConfigMap of the tenant namespace, where this cluster keeps
// its own objects for that peer; a provider deletes it. Liqo never binds
// that role in a tenant namespace.
func TenantNamespaceSliceBinding(b *rbacv1.RoleBinding) (consumerID string, ok bool) {
	id, found := strings.CutPrefix(b.Namespace, clusterid.TenantNamespacePrefix)
	if !found || clusterid.Validate(id) != nil || b.Name != BindingName(VirtualKubeletClusterRoleName) ||
		b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: VirtualKubeletClusterRoleName}) ||
		len(b.Subjects) != 1 {
		return "", false
	}
	s := b.Subjects[0]
	if s.Kind != rbacv1.GroupKind || s.APIGroup != rbacv1.GroupName || s.Name != id || s.Namespace != "" {
		return "", false
	}
	return id, true
}

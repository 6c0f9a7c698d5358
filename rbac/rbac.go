// Package rbac builds the provider-side RBAC objects that grant an identity
// exactly what it needs, and nothing else.
//
// A ControlPlane identity (user = consumer cluster ID) is bound in its tenant
// namespace to the ClusterRole "liqo-remote-controlplane", which allows all
// verbs on authentication.liqo.io resourceslices and renews and on
// offloading.liqo.io namespacemaps (with their status subresources). A
// ResourceSlice identity (group = consumer cluster ID) is bound to a
// caller-chosen ClusterRole in each namespace the slice may use.
//
// # Peer roles
//
// The ClusterRoles that consumers are bound to (PeerRoles) are installed
// once, as Liqo's chart installs them, with the same names, rules and
// app.kubernetes.io/name labels: from the manifests in config/roles, or by
// Install. A handshake never writes a role: it only binds, and before it
// binds it checks with RequireRoles that the role exists, so a cluster
// without the roles gets a *MissingRoleError naming the role instead of a
// binding that grants nothing. Next to Liqo the roles are Liqo's, and
// kubepact leaves them as they are.
//
// Builders are pure and deterministic: the same inputs give equal objects,
// with rules and bindings in a fixed order.
//
// # Security
//
// The user and groups of an identity are names kubepact does not own: a
// consumer picks its cluster ID, and a cluster ID that names an existing
// user ("admin", "ci-deployer") or group would inherit every binding made
// for it. Before it issues a certificate or binds anything, the provider
// calls CheckUnprivileged, which asks the provider's authorizer (through a
// Reviewer, a SubjectAccessReview in package kube) about each of
// PrivilegeProbes for the identity's user and groups, AuthenticatedGroup
// included, and refuses any identity that may make one of them.
//
// The check is a snapshot: a binding made later grants the same user or
// group. RoleBindingGrantees and ClusterRoleBindingGrantees give the users
// and groups (UserKey, GroupKey) a binding grants its role to, the
// bindings a provider applies left out, so that a controller indexes
// every binding by them and judges an identity again when a binding that
// names it changes (IdentityKeys), without asking the authorizer about
// each identity it holds.
//
// # Errors
//
// CheckUnprivileged returns a *PrivilegedError, which wraps
// ErrPrivilegedUser, for a privileged identity, and the Reviewer's error
// when it cannot tell: it never treats an unanswered question as "no".
//
// # Concurrency
//
// Builders and CheckUnprivileged share no state; they are as safe for
// concurrent use as the ports they are given, which must be.
package rbac

import (
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
)

// ControlPlaneClusterRoleName names the ClusterRole of ControlPlane identities.
const ControlPlaneClusterRoleName = "liqo-remote-controlplane"

// NameLabel is the label by which Liqo finds the roles it binds; the
// ControlPlane ClusterRole carries it with value ControlPlaneNameValue, as
// Liqo's own does, so Liqo's Tenant controller finds the role kubepact
// applies.
const (
	NameLabel             = "app.kubernetes.io/name"
	ControlPlaneNameValue = "remote-controlplane"
)

// ManagedByLabel, with value ManagedByValue, is on every binding, as on
// Liqo's: Liqo's uninstaller and tools select what Liqo manages by it, and
// a kubepact provider stands in for Liqo's.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "liqo"
)

// Verbs returns the explicit list of every verb on a resource, sorted as
// Liqo's chart lists them.
func Verbs() []string {
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// objectVerbs is Verbs without deletecollection, as the chart grants on
// the objects a virtual kubelet reflects.
func objectVerbs() []string {
	return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
}

// ControlPlaneClusterRole returns the ClusterRole bound to ControlPlane
// identities in their tenant namespace.
func ControlPlaneClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   ControlPlaneClusterRoleName,
			Labels: map[string]string{NameLabel: ControlPlaneNameValue},
		},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"authentication.liqo.io"},
				Resources: []string{"renews", "renews/status", "resourceslices", "resourceslices/status"},
				Verbs:     Verbs(),
			},
			{
				APIGroups: []string{"offloading.liqo.io"},
				Resources: []string{"namespacemaps", "namespacemaps/status"},
				Verbs:     Verbs(),
			},
		},
	}
}

// BindingName is the name of the RoleBinding to ClusterRole clusterRole.
func BindingName(clusterRole string) string { return "liqo-binding-" + clusterRole }

// ControlPlaneRoleBinding binds user consumerID to the ControlPlane
// ClusterRole in namespace. A provider adds the controller reference to the
// consumer's Tenant (tenant.OwnerReference), as Liqo's does, so deleting the
// Tenant collects the binding.
func ControlPlaneRoleBinding(namespace, consumerID string) *rbacv1.RoleBinding {
	return roleBinding(namespace, consumerID, ControlPlaneClusterRoleName, rbacv1.Subject{
		Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID,
	})
}

// ResourceSliceRoleBindings binds group consumerID to clusterRole in each of
// namespaces, sorted by namespace and without duplicates.
func ResourceSliceRoleBindings(consumerID, clusterRole string, namespaces []string) []*rbacv1.RoleBinding {
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	out := make([]*rbacv1.RoleBinding, 0, len(ns))
	for _, n := range ns {
		out = append(out, roleBinding(n, consumerID, clusterRole, rbacv1.Subject{
			Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID,
		}))
	}
	return out
}

func roleBinding(namespace, consumerID, clusterRole string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      BindingName(clusterRole),
			Namespace: namespace,
			Labels:    map[string]string{clusterid.Label: consumerID, ManagedByLabel: ManagedByValue},
		},
		Subjects: []rbacv1.Subject{subject},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}
}

// Applier binds identities to roles on the provider, owning only the fields
// it applies, as a server-side apply with one field manager does.
//
// HasClusterRole reports whether the ClusterRole name exists; it never
// writes. ApplyRoleBinding sets b's subjects, roleRef, labels and owner
// references; subjects others set to other values are replaced (a binding
// kubepact makes grants to exactly b's subjects), while their labels and
// owner references stay. A binding whose roleRef differs is replaced, as
// roleRef is immutable. A label or owner reference kubepact set before and
// no longer applies is removed, unless another component set it too.
// DeleteRoleBinding removes a binding and succeeds when there is none. All
// succeed without writing when nothing changes. Implementations are safe
// for concurrent use.
type Applier interface {
	HasClusterRole(ctx context.Context, name string) (bool, error)
	ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error
	DeleteRoleBinding(ctx context.Context, namespace, name string) error
}

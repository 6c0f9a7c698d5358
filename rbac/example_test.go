package rbac_test

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
)

func ExampleControlPlaneClusterRole() {
	r := rbac.ControlPlaneClusterRole()
	fmt.Println(r.Name)
	for _, rule := range r.Rules {
		fmt.Println(rule.APIGroups, rule.Resources)
	}
	// Output:
	// liqo-remote-controlplane
	// [authentication.liqo.io] [renews renews/status resourceslices resourceslices/status]
	// [offloading.liqo.io] [namespacemaps namespacemaps/status]
}

func ExampleRequireRoles() {
	ctx := context.Background()
	provider := &fake.RBAC{} // a cluster where no peer role is installed
	err := rbac.RequireRoles(ctx, provider, rbac.ControlPlaneClusterRoleName)
	var missing *rbac.MissingRoleError
	fmt.Println(errors.As(err, &missing), missing.Name)

	// An administrator installs them once (kubepact install roles).
	_ = rbac.Install(ctx, provider)
	fmt.Println(rbac.RequireRoles(ctx, provider, rbac.PeerRoleNames()...))
	// Output:
	// true liqo-remote-controlplane
	// <nil>
}

func ExampleControlPlaneRoleBinding() {
	b := rbac.ControlPlaneRoleBinding("liqo-tenant-cl-consumer", "cl-consumer")
	fmt.Println(b.Namespace, b.Name)
	fmt.Println(b.Subjects[0].Kind, b.Subjects[0].Name, "->", b.RoleRef.Kind, b.RoleRef.Name)
	// Output:
	// liqo-tenant-cl-consumer liqo-binding-liqo-remote-controlplane
	// User cl-consumer -> ClusterRole liqo-remote-controlplane
}

func ExampleResourceSliceRoleBindings() {
	for _, b := range rbac.ResourceSliceRoleBindings("cl-consumer", "liqo-remote-resourceslice", []string{"ns-b", "ns-a", "ns-b"}) {
		fmt.Println(b.Namespace, b.Name, b.Subjects[0].Kind, b.Subjects[0].Name)
	}
	// Output:
	// ns-a liqo-binding-liqo-remote-resourceslice Group cl-consumer
	// ns-b liqo-binding-liqo-remote-resourceslice Group cl-consumer
}

func ExampleBindingName() {
	fmt.Println(rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	// Output: liqo-binding-liqo-remote-controlplane
}

func ExamplePrivilegeProbes() {
	for _, p := range rbac.PrivilegeProbes() {
		fmt.Printf("%s %q %s %q in %q\n", p.Verb, p.Group, p.Resource, p.Name, p.Namespace)
	}
	// Output:
	// get "" secrets "" in ""
	// get "" secrets "" in "kube-system"
	// create "" pods "" in "kube-system"
	// escalate "rbac.authorization.k8s.io" clusterroles "" in ""
	// bind "rbac.authorization.k8s.io" clusterroles "cluster-admin" in ""
	// impersonate "" users "" in ""
	// approve "certificates.k8s.io" signers "kubernetes.io/kube-apiserver-client" in ""
}

func ExampleCheckUnprivileged() {
	ctx := context.Background()
	// The provider's RBAC: a user "admin" bound to a wildcard role, made
	// long before kubepact, and the ControlPlane binding kubepact made for
	// cl-consumer.
	provider := &fake.RBAC{}
	_ = provider.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	})
	_ = provider.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "admin"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
	})
	_ = provider.ApplyClusterRole(ctx, rbac.ControlPlaneClusterRole())
	_ = provider.ApplyRoleBinding(ctx, rbac.ControlPlaneRoleBinding("liqo-tenant-cl-consumer", "cl-consumer"))

	// A ControlPlane certificate carries CN = consumer ID, O = liqo.io.
	for _, consumerID := range []string{"cl-consumer", "admin"} {
		err := rbac.CheckUnprivileged(ctx, provider, consumerID, []string{csr.ControlPlaneOrganization})
		var pe *rbac.PrivilegedError
		switch {
		case err == nil:
			fmt.Println(consumerID, "may be bound")
		case errors.As(err, &pe):
			fmt.Println(consumerID, "refused:", pe.Probe.Verb, pe.Probe.Resource, errors.Is(err, rbac.ErrPrivilegedUser))
		default:
			fmt.Println(consumerID, "not checked:", err)
		}
	}
	// Output:
	// cl-consumer may be bound
	// admin refused: get secrets true
}

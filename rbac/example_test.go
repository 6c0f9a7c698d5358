package rbac_test

import (
	"fmt"

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
	// [authentication.liqo.io] [resourceslices resourceslices/status renews renews/status]
	// [offloading.liqo.io] [namespacemaps namespacemaps/status]
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

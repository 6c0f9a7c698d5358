package lifecycle_test

import (
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
)

func ExampleTransition() {
	fmt.Println(lifecycle.Transition(authv1beta1.TenantConditionActive, authv1beta1.TenantConditionCordoned))
	err := lifecycle.Transition(authv1beta1.TenantConditionDrained, authv1beta1.TenantConditionActive)
	var te *lifecycle.TransitionError
	fmt.Println(errors.As(err, &te), te.From, "->", te.To)
	// Output:
	// <nil>
	// true Drained -> Active
}

func ExampleConsumerBinding() {
	labels := map[string]string{clusterid.Label: "cl-consumer", rbac.ManagedByLabel: rbac.ManagedByValue}
	own := lifecycle.Binding{Labels: labels, Subjects: []rbacv1.Subject{
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "cl-consumer"}}}
	someoneElses := lifecycle.Binding{Labels: labels, Subjects: []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	fmt.Println(lifecycle.ConsumerBinding(own, "cl-consumer"), lifecycle.ConsumerBinding(someoneElses, "cl-consumer"))
	// Output:
	// true false
}

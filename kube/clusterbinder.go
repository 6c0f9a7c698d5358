package kube

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kubepact/kubepact/rbac"
)

var _ rbac.ClusterBinder = (*RBAC)(nil)

// ApplyClusterRoleBinding applies b with server-side apply as FieldManager,
// taking over its subjects and roleRef; labels others put on it stay. A
// stored binding whose roleRef differs is deleted, exactly as read, and
// created again: roleRef is immutable. Its client needs get, create, patch
// and delete on clusterrolebindings, and bind on the role b refers to (or
// the role's permissions).
func (a *RBAC) ApplyClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	api := a.client.RbacV1().ClusterRoleBindings()
	ac := rbacv1ac.ClusterRoleBinding(b.Name).WithLabels(b.Labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(b.RoleRef.APIGroup).WithKind(b.RoleRef.Kind).WithName(b.RoleRef.Name))
	for _, s := range b.Subjects {
		subject := rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
		if s.APIGroup != "" {
			subject.WithAPIGroup(s.APIGroup)
		}
		if s.Namespace != "" {
			subject.WithNamespace(s.Namespace)
		}
		ac.WithSubjects(subject)
	}
	err := retryOnConflict(ctx, func() error {
		_, err := api.Apply(ctx, ac, applyOptions(true))
		if !apierrors.IsInvalid(err) {
			return err
		}
		cur, gerr := api.Get(ctx, b.Name, metav1.GetOptions{})
		if gerr != nil || cur.RoleRef == b.RoleRef {
			return err
		}
		derr := api.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if derr != nil && !apierrors.IsNotFound(derr) {
			return derr
		}
		return apierrors.NewConflict(rbacv1.Resource("clusterrolebindings"), b.Name, errRoleRefChanged)
	})
	if err != nil {
		return wrap(err, "applying", "ClusterRoleBinding", "", b.Name)
	}
	return nil
}

// DeleteClusterRoleBinding removes the ClusterRoleBinding name.
func (a *RBAC) DeleteClusterRoleBinding(ctx context.Context, name string) error {
	err := a.client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "ClusterRoleBinding", "", name)
	}
	return nil
}

package kube

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	ac := rbacv1ac.ClusterRoleBinding(b.Name).WithLabels(b.Labels).WithSubjects(subjectsAC(b.Subjects)...).WithRoleRef(roleRefAC(b.RoleRef))
	err := applyBinding(ctx, rbacv1.Resource("clusterrolebindings"), b.Name, b.RoleRef,
		func() error { _, err := api.Apply(ctx, ac, applyOptions(true)); return err },
		func() (*rbacv1.RoleRef, types.UID, error) {
			cur, err := api.Get(ctx, b.Name, metav1.GetOptions{})
			if err != nil {
				return nil, "", err
			}
			return &cur.RoleRef, cur.UID, nil
		},
		func(uid types.UID) error {
			return api.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
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

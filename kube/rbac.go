package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/rbac"
)

// errRoleRefChanged makes a RoleBinding whose roleRef changed be re-created.
var errRoleRefChanged = errors.New("roleRef changed")

// RBAC is an rbac.Binder over the API server.
//
// Besides what it applies (clusterroles, and rolebindings in tenant
// namespaces), its client needs create on
// subjectaccessreviews.authorization.k8s.io for Allowed; without it
// Allowed fails with a Forbidden error, and rbac.CheckUnprivileged with it.
type RBAC struct{ client kubernetes.Interface }

var _ rbac.Binder = (*RBAC)(nil)

// NewRBAC returns an RBAC using client.
func NewRBAC(client kubernetes.Interface) *RBAC { return &RBAC{client: client} }

// ApplyClusterRole creates r or brings the stored ClusterRole's rules up to
// r's and sets r's labels on it, keeping the others.
func (a *RBAC) ApplyClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	api := a.client.RbacV1().ClusterRoles()
	err := retryOnConflict(ctx, func() error {
		cur, err := api.Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, r, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(rbacv1.Resource("clusterroles"), r.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		labels := mergeLabels(cur.Labels, r.Labels)
		if maps.Equal(cur.Labels, labels) && reflect.DeepEqual(cur.Rules, r.Rules) {
			return nil
		}
		next := cur.DeepCopy()
		next.Labels, next.Rules = labels, r.Rules
		_, err = api.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return wrap(err, "applying", "ClusterRole", "", r.Name)
	}
	return nil
}

// ApplyRoleBinding creates b or brings the stored RoleBinding's subjects up
// to b's and sets b's labels on it, keeping the others; it replaces the
// binding when its roleRef differs.
func (a *RBAC) ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	api := a.client.RbacV1().RoleBindings(b.Namespace)
	_, err := api.Create(ctx, b, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return wrap(err, "applying", "RoleBinding", b.Namespace, b.Name)
		}
		return nil
	}
	err = retryOnConflict(ctx, func() error {
		cur, err := api.Get(ctx, b.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, b, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(rbacv1.Resource("rolebindings"), b.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cur.RoleRef != b.RoleRef {
			// roleRef is immutable: delete exactly what was read, then create.
			err := api.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return apierrors.NewConflict(rbacv1.Resource("rolebindings"), b.Name, errRoleRefChanged)
		}
		labels := mergeLabels(cur.Labels, b.Labels)
		if maps.Equal(cur.Labels, labels) && reflect.DeepEqual(cur.Subjects, b.Subjects) {
			return nil
		}
		next := cur.DeepCopy()
		next.Labels, next.Subjects = labels, b.Subjects
		_, err = api.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return wrap(err, "applying", "RoleBinding", b.Namespace, b.Name)
	}
	return nil
}

// mergeLabels returns stored with want's labels set over it; nil when both
// are empty.
func mergeLabels(stored, want map[string]string) map[string]string {
	if len(stored) == 0 && len(want) == 0 {
		return stored
	}
	out := maps.Clone(stored)
	if out == nil {
		out = make(map[string]string, len(want))
	}
	maps.Copy(out, want)
	return out
}

// DeleteRoleBinding removes the RoleBinding namespace/name.
func (a *RBAC) DeleteRoleBinding(ctx context.Context, namespace, name string) error {
	err := a.client.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "RoleBinding", namespace, name)
	}
	return nil
}

// Allowed asks the API server with one SubjectAccessReview. A review that
// allows the request answers true even if an authorizer failed on the
// way; one that does not, but reports an evaluationError, is an error.
func (a *RBAC) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             slices.Clone(groups),
		ResourceAttributes: &attrs,
	}}
	got, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, wrap(err, "creating", "SubjectAccessReview", "", "for user "+user)
	}
	if got.Status.Allowed {
		return true, nil
	}
	if got.Status.EvaluationError != "" {
		return false, fmt.Errorf("SubjectAccessReview for user %s: evaluation error: %s", user, got.Status.EvaluationError)
	}
	return false, nil
}

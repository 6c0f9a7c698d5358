package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/rbac"
)

// errRoleRefChanged makes a RoleBinding whose roleRef changed be re-created.
var errRoleRefChanged = errors.New("roleRef changed")

// RBAC is an rbac.Binder over the API server.
//
// Besides what it applies (rolebindings in tenant namespaces, with bind on
// their roles, and clusterroles for ApplyClusterRole) and get on the peer
// ClusterRoles for HasClusterRole, its client needs create on
// subjectaccessreviews.authorization.k8s.io for Allowed; without it
// Allowed fails with a Forbidden error, and rbac.CheckUnprivileged with it.
type RBAC struct{ client kubernetes.Interface }

var (
	_ rbac.Binder    = (*RBAC)(nil)
	_ rbac.Installer = (*RBAC)(nil)
)

// NewRBAC returns an RBAC using client.
func NewRBAC(client kubernetes.Interface) *RBAC { return &RBAC{client: client} }

// HasClusterRole reports whether the ClusterRole name exists. Its client
// needs get on that ClusterRole (the controller's RBAC names the peer
// roles).
func (a *RBAC) HasClusterRole(ctx context.Context, name string) (bool, error) {
	_, err := a.client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, wrap(err, "reading", "ClusterRole", "", name)
	}
	return true, nil
}

// ApplyClusterRole applies r with server-side apply as FieldManager
// (rbac.Installer, which rbac.Install uses):
// kubepact owns r's labels and annotations and, unless another manager set
// them to other rules, r's rules. A ClusterRole someone else manages the rules of (Liqo
// installs "liqo-remote-controlplane" with its chart) keeps them: kubepact
// then applies only its labels. Labels others set always stay.
func (a *RBAC) ApplyClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	api := a.client.RbacV1().ClusterRoles()
	rules := rulesAC(r.Rules)
	meta := func() *rbacv1ac.ClusterRoleApplyConfiguration {
		ac := rbacv1ac.ClusterRole(r.Name).WithLabels(r.Labels)
		if len(r.Annotations) > 0 {
			ac = ac.WithAnnotations(r.Annotations)
		}
		return ac
	}
	_, err := api.Apply(ctx, meta().WithRules(rules...), applyOptions(false))
	if apierrors.IsConflict(err) {
		// Another manager owns other rules: they are theirs to keep.
		_, err = api.Apply(ctx, meta(), applyOptions(false))
	}
	if err != nil {
		return wrap(err, "applying", "ClusterRole", "", r.Name)
	}
	return nil
}

// ApplyRoleBinding applies b with server-side apply as FieldManager,
// taking over its subjects and roleRef: a binding kubepact makes grants to
// exactly b's subjects. Labels and owner references others put on it stay.
// A stored binding whose roleRef differs is deleted, exactly as read, and
// created again: roleRef is immutable.
func (a *RBAC) ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	api := a.client.RbacV1().RoleBindings(b.Namespace)
	ac := rbacv1ac.RoleBinding(b.Name, b.Namespace).WithLabels(b.Labels).WithSubjects(subjectsAC(b.Subjects)...).
		WithRoleRef(roleRefAC(b.RoleRef)).WithOwnerReferences(ownerReferences(b.OwnerReferences)...)
	err := applyBinding(ctx, rbacv1.Resource("rolebindings"), b.Name, b.RoleRef,
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
		return wrap(err, "applying", "RoleBinding", b.Namespace, b.Name)
	}
	return nil
}

// applyBinding runs apply, the server-side apply of the binding name whose
// roleRef is want. roleRef is immutable: when the stored binding's differs,
// which makes the apply invalid, the binding read (get) is deleted exactly
// (del, held to its UID), and applied again.
func applyBinding(ctx context.Context, resource schema.GroupResource, name string, want rbacv1.RoleRef,
	apply func() error, get func() (*rbacv1.RoleRef, types.UID, error), del func(types.UID) error) error {
	return retryOnConflict(ctx, func() error {
		err := apply()
		if !apierrors.IsInvalid(err) {
			return err
		}
		ref, uid, gerr := get()
		if gerr != nil || *ref == want {
			return err
		}
		if derr := del(uid); derr != nil && !apierrors.IsNotFound(derr) {
			return derr
		}
		return apierrors.NewConflict(resource, name, errRoleRefChanged)
	})
}

// roleRefAC returns r as an apply configuration.
func roleRefAC(r rbacv1.RoleRef) *rbacv1ac.RoleRefApplyConfiguration {
	return rbacv1ac.RoleRef().WithAPIGroup(r.APIGroup).WithKind(r.Kind).WithName(r.Name)
}

// subjectsAC returns subjects as apply configurations.
func subjectsAC(subjects []rbacv1.Subject) []*rbacv1ac.SubjectApplyConfiguration {
	out := make([]*rbacv1ac.SubjectApplyConfiguration, len(subjects))
	for i, s := range subjects {
		out[i] = rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
		if s.APIGroup != "" {
			out[i].WithAPIGroup(s.APIGroup)
		}
		if s.Namespace != "" {
			out[i].WithNamespace(s.Namespace)
		}
	}
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

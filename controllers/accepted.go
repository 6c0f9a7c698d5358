package controllers

import (
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/provider"
)

// bindingReader is a provider.BindingReader over the manager's cache of
// every RoleBinding and ClusterRoleBinding (CacheOptions), which the Tenant
// reconciler also watches for grants (watchGrants). A binding of
// kubepact's own that someone deletes is applied again at its Tenant's
// next reconcile (a change of the Tenant, its re-signing, a restart), as
// before there was a cache: its deletion requeues nothing, since a
// provider that unpeers deletes the bindings before the Tenant, and a
// requeue would have a controller running beside it bind the consumer
// again in between.
type bindingReader struct {
	cache client.Reader
}

var (
	_ provider.BindingReader        = (*bindingReader)(nil)
	_ provider.ClusterBindingFinder = (*bindingReader)(nil)
)

func newBindingReader(cache client.Reader) *bindingReader {
	return &bindingReader{cache: cache}
}

func (r *bindingReader) RoleBindingApplied(ctx context.Context, want *rbacv1.RoleBinding) (bool, error) {
	var got rbacv1.RoleBinding
	err := r.cache.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if !applied(got.ObjectMeta, got.RoleRef, got.Subjects, want.ObjectMeta, want.RoleRef, want.Subjects) {
		return false, nil
	}
	for _, o := range want.OwnerReferences {
		if !slices.ContainsFunc(got.OwnerReferences, func(g metav1.OwnerReference) bool {
			return g.UID == o.UID && g.Kind == o.Kind && g.Name == o.Name && g.APIVersion == o.APIVersion
		}) {
			return false, nil
		}
	}
	return true, nil
}

func (r *bindingReader) ClusterRoleBindingApplied(ctx context.Context, want *rbacv1.ClusterRoleBinding) (bool, error) {
	var got rbacv1.ClusterRoleBinding
	err := r.cache.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return applied(got.ObjectMeta, got.RoleRef, got.Subjects, want.ObjectMeta, want.RoleRef, want.Subjects), nil
}

func (r *bindingReader) ClusterRoleBindingStored(ctx context.Context, name string) (bool, error) {
	var got rbacv1.ClusterRoleBinding
	err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &got)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// applied reports whether a binding stored as got is as want applies it:
// the same roleRef and subjects, and want's labels among got's.
func applied(got metav1.ObjectMeta, gotRef rbacv1.RoleRef, gotSubjects []rbacv1.Subject, want metav1.ObjectMeta, wantRef rbacv1.RoleRef, wantSubjects []rbacv1.Subject) bool {
	if gotRef != wantRef || !slices.Equal(gotSubjects, wantSubjects) {
		return false
	}
	for k, v := range want.Labels {
		if g, ok := got.Labels[k]; !ok || g != v {
			return false
		}
	}
	return true
}

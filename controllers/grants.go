package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// granteeIndex indexes the manager's cache of RoleBindings and
// ClusterRoleBindings by the users and groups they grant their role to
// (grantees), kubepact's own ControlPlane and slice bindings left out.
const granteeIndex = "kubepact.io/grantee"

// grantees returns the keys (rbac.UserKey, rbac.GroupKey) of the users and
// groups o, a RoleBinding or ClusterRoleBinding, grants its role to, none
// for a binding a provider applies (rbac.RoleBindingGrantees,
// rbac.ClusterRoleBindingGrantees) or any other object.
func grantees(o client.Object) []string {
	switch b := o.(type) {
	case *rbacv1.RoleBinding:
		return rbac.RoleBindingGrantees(b)
	case *rbacv1.ClusterRoleBinding:
		return rbac.ClusterRoleBindingGrantees(b)
	}
	return nil
}

// indexGrantees adds granteeIndex to mgr's cache of RoleBindings and
// ClusterRoleBindings.
func indexGrantees(ctx context.Context, mgr manager.Manager) error {
	for _, o := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, o, granteeIndex, grantees); err != nil {
			return fmt.Errorf("controllers: indexing %T by grantee: %w", o, err)
		}
	}
	return nil
}

// consumersGranted returns the consumer IDs a binding's grantees (keys)
// name: the user of each key that is a cluster ID, and, when a key is the
// group of ControlPlane certificates (csr.ControlPlaneOrganization), all
// of them (all, which lists the Tenants).
func consumersGranted(keys []string, all func() []string) []string {
	var ids []string
	for _, k := range keys {
		if id, ok := strings.CutPrefix(k, rbac.UserKey("")); ok && clusterid.Validate(id) == nil {
			ids = append(ids, id)
		}
		if k == rbac.GroupKey(csr.ControlPlaneOrganization) {
			ids = append(ids, all()...)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// watchGrants makes a RoleBinding or ClusterRoleBinding that grants a
// consumer's identity something requeue its Tenant, when it is created or
// deleted or its subjects change, so that Accept judges the consumer's
// privileges again (rbac.CheckUnprivileged): first it has the provider
// forget that they passed (provider.Provider.Recheck). Bindings the
// provider applies (the ControlPlane RoleBinding, the slice
// ClusterRoleBinding) requeue nothing: a provider that unpeers deletes
// them before the Tenant, and their deletion requeuing the Tenant would
// have a controller running beside it bind the consumer again in between.
func (r *tenantReconciler) watchGrants(b *builder.Builder) *builder.Builder {
	subjectsChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !slices.Equal(grantees(e.ObjectOld), grantees(e.ObjectNew))
	}}
	m := handler.EnqueueRequestsFromMapFunc(r.tenantsGranted)
	return b.Watches(&rbacv1.RoleBinding{}, m, builder.WithPredicates(subjectsChanged)).
		Watches(&rbacv1.ClusterRoleBinding{}, m, builder.WithPredicates(subjectsChanged))
}

// tenantsGranted maps a binding to the Tenants of the consumers it grants
// its role to (consumersGranted), and has the provider check their
// privileges again. What the binding names only says what to requeue.
func (r *tenantReconciler) tenantsGranted(ctx context.Context, o client.Object) []reconcile.Request {
	ids := consumersGranted(grantees(o), func() []string {
		var list authv1beta1.TenantList
		if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil // the cache is synced before any event; a Tenant it lacks is reconciled when it comes
		}
		ids := make([]string, 0, len(list.Items))
		for i := range list.Items {
			ids = append(ids, list.Items[i].Name)
		}
		return ids
	})
	if len(ids) == 0 {
		return nil
	}
	r.provider.Recheck(ids...)
	reqs := make([]reconcile.Request, len(ids))
	for i, id := range ids {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: clusterid.TenantNamespace(id), Name: id}}
	}
	return reqs
}

// grantReader is a provider.GrantReader over the manager's cache of every
// RoleBinding and ClusterRoleBinding, by granteeIndex.
type grantReader struct{ cache client.Reader }

var _ provider.GrantReader = grantReader{}

func (g grantReader) Grants(ctx context.Context, user string, groups []string) ([]string, error) {
	var found []string
	for _, key := range rbac.IdentityKeys(user, groups) {
		var rbs rbacv1.RoleBindingList
		if err := g.cache.List(ctx, &rbs, client.MatchingFields{granteeIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range rbs.Items {
			found = append(found, "RoleBinding "+rbs.Items[i].Namespace+"/"+rbs.Items[i].Name)
		}
		var crbs rbacv1.ClusterRoleBindingList
		if err := g.cache.List(ctx, &crbs, client.MatchingFields{granteeIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range crbs.Items {
			found = append(found, "ClusterRoleBinding "+crbs.Items[i].Name)
		}
	}
	return found, nil
}

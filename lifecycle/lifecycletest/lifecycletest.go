// Package lifecycletest is the conformance suite of the lifecycle ports:
// every implementation (package fake's, package kube's on a real API
// server) passes Run.
package lifecycletest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// Env is one cluster as the suite sees it: the ports under test, and how
// to plant and read what they act on.
type Env struct {
	Ports lifecycle.Ports
	// Tenants stores Tenants as a provider does (Apply leaves out the
	// condition, as Provider.Accept does).
	Tenants tenant.Store
	// PutSlice creates a ResourceSlice as another component does.
	PutSlice func(t *testing.T, s *authv1beta1.ResourceSlice)
	// Slices returns the ResourceSlices in namespace.
	Slices func(t *testing.T, namespace string) []authv1beta1.ResourceSlice
	// PutRoleBinding and PutClusterRoleBinding create bindings as an
	// administrator does.
	PutRoleBinding        func(t *testing.T, b *rbacv1.RoleBinding)
	PutClusterRoleBinding func(t *testing.T, b *rbacv1.ClusterRoleBinding)
	// BindingExists reports whether the RoleBinding (namespace set) or
	// ClusterRoleBinding exists.
	BindingExists func(t *testing.T, namespace, name string) bool
	// EnsureNamespace creates namespace if it does not exist.
	EnsureNamespace func(t *testing.T, namespace string)
}

// Harness makes the Env of an implementation.
type Harness struct {
	New func(t *testing.T) Env
}

var seq atomic.Int64

// consumer returns a fresh consumer ID and ensures its tenant namespace.
func consumer(t *testing.T, e Env) string {
	id := fmt.Sprintf("lc-%d-%d", time.Now().UnixNano()%100000, seq.Add(1))
	e.EnsureNamespace(t, clusterid.TenantNamespace(id))
	return id
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("Conditions", func(t *testing.T) { testConditions(t, h.New(t)) })
	t.Run("Slices", func(t *testing.T) { testSlices(t, h.New(t)) })
	t.Run("Bindings", func(t *testing.T) { testBindings(t, h.New(t)) })
	t.Run("Revocations", func(t *testing.T) { testRevocations(t, h.New(t)) })
}

func testTenant(id string) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: id, Namespace: clusterid.TenantNamespace(id),
			Labels: map[string]string{clusterid.Label: id},
		},
		Spec: authv1beta1.TenantSpec{ClusterID: id, PublicKey: []byte("key of " + id), CSR: []byte("csr of " + id)},
	}
}

func testConditions(t *testing.T, e Env) {
	ctx := context.Background()
	id := consumer(t, e)
	ns := clusterid.TenantNamespace(id)
	stored, err := e.Tenants.Apply(ctx, testTenant(id))
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionActive, lifecycle.Condition(stored.Spec.TenantCondition))

	require.NoError(t, e.Ports.Conditions.SetCondition(ctx, stored, authv1beta1.TenantConditionCordoned))
	got, err := e.Tenants.Get(ctx, ns, id)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionCordoned, got.Spec.TenantCondition)
	require.Equal(t, stored.Spec.PublicKey, got.Spec.PublicKey)

	// A stale read is refused and changes nothing.
	err = e.Ports.Conditions.SetCondition(ctx, stored, authv1beta1.TenantConditionDrained)
	require.ErrorIs(t, err, lifecycle.ErrConflict)
	again, err := e.Tenants.Get(ctx, ns, id)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionCordoned, again.Spec.TenantCondition)

	// The provider applying its Tenant again, without a condition, keeps
	// the condition set.
	reapplied := testTenant(id)
	reapplied.Spec.CSR = []byte("another csr")
	_, err = e.Tenants.Apply(ctx, reapplied)
	require.NoError(t, err)
	again, err = e.Tenants.Get(ctx, ns, id)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionCordoned, again.Spec.TenantCondition)
	require.Equal(t, []byte("another csr"), again.Spec.CSR)

	missing := testTenant(consumer(t, e))
	err = e.Ports.Conditions.SetCondition(ctx, missing, authv1beta1.TenantConditionCordoned)
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

func testSlice(namespace, name string) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels:      map[string]string{"liqo.io/replicated": "true"},
			Annotations: map[string]string{"example.com/note": "kept"},
		},
	}
}

func testSlices(t *testing.T, e Env) {
	ctx := context.Background()
	ns, other := clusterid.TenantNamespace(consumer(t, e)), clusterid.TenantNamespace(consumer(t, e))
	require.NoError(t, e.Ports.Slices.SetCordoned(ctx, ns, true), "no slices")
	require.NoError(t, e.Ports.Slices.DeleteAll(ctx, ns), "no slices")
	e.PutSlice(t, testSlice(ns, "a"))
	e.PutSlice(t, testSlice(ns, "b"))
	e.PutSlice(t, testSlice(other, "c"))

	require.NoError(t, e.Ports.Slices.SetCordoned(ctx, ns, true))
	require.NoError(t, e.Ports.Slices.SetCordoned(ctx, ns, true), "idempotent")
	for _, s := range e.Slices(t, ns) {
		require.Equal(t, map[string]string{lifecycle.CordonAnnotation: "true", "example.com/note": "kept"}, s.Annotations, s.Name)
		require.Equal(t, "true", s.Labels["liqo.io/replicated"])
	}
	for _, s := range e.Slices(t, other) {
		require.NotContains(t, s.Annotations, lifecycle.CordonAnnotation)
	}
	require.NoError(t, e.Ports.Slices.SetCordoned(ctx, ns, false))
	for _, s := range e.Slices(t, ns) {
		require.Equal(t, map[string]string{"example.com/note": "kept"}, s.Annotations, s.Name)
	}

	require.NoError(t, e.Ports.Slices.DeleteAll(ctx, ns))
	require.Empty(t, e.Slices(t, ns))
	require.Len(t, e.Slices(t, other), 1)
}

func testBindings(t *testing.T, e Env) {
	ctx := context.Background()
	id, otherID := consumer(t, e), consumer(t, e)
	ns := clusterid.TenantNamespace(id)
	e.EnsureNamespace(t, "lc-offloaded")
	cp := rbac.ControlPlaneRoleBinding(ns, id)
	e.PutRoleBinding(t, cp)
	slice := rbac.ResourceSliceRoleBindings(id, "view", []string{"lc-offloaded"})[0]
	slice.Name += "-" + id
	e.PutRoleBinding(t, slice)
	e.PutRoleBinding(t, rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace(otherID), otherID))
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lc-clusterwide-" + id, Labels: map[string]string{clusterid.Label: id, rbac.ManagedByLabel: rbac.ManagedByValue}},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: id}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	e.PutClusterRoleBinding(t, crb)

	list, err := e.Ports.Bindings.ListBindings(ctx, id)
	require.NoError(t, err)
	names := map[string]lifecycle.Binding{}
	for _, b := range list {
		names[b.String()] = b
		require.NotEmpty(t, b.UID)
		require.Equal(t, id, b.Labels[clusterid.Label])
		require.Len(t, b.Subjects, 1)
	}
	require.Len(t, names, 3)
	require.Contains(t, names, "RoleBinding "+ns+"/"+cp.Name)
	require.Contains(t, names, "RoleBinding lc-offloaded/"+slice.Name)
	require.Contains(t, names, "ClusterRoleBinding "+crb.Name)

	// A binding recreated under the same name is not deleted.
	stale := names["ClusterRoleBinding "+crb.Name]
	require.NoError(t, e.Ports.Bindings.DeleteBinding(ctx, stale))
	require.False(t, e.BindingExists(t, "", crb.Name))
	e.PutClusterRoleBinding(t, crb)
	require.NoError(t, e.Ports.Bindings.DeleteBinding(ctx, stale))
	require.True(t, e.BindingExists(t, "", crb.Name))

	require.NoError(t, e.Ports.Bindings.DeleteBinding(ctx, names["RoleBinding lc-offloaded/"+slice.Name]))
	require.False(t, e.BindingExists(t, "lc-offloaded", slice.Name))
	require.NoError(t, e.Ports.Bindings.DeleteBinding(ctx, names["RoleBinding lc-offloaded/"+slice.Name]), "already gone")
	require.True(t, e.BindingExists(t, clusterid.TenantNamespace(otherID), cp.Name), "another consumer's binding stays")
}

func testRevocations(t *testing.T, e Env) {
	ctx := context.Background()
	id := consumer(t, e)
	_, err := e.Ports.Revocations.Get(ctx, id)
	require.ErrorIs(t, err, lifecycle.ErrNotFound)
	require.NoError(t, e.Ports.Revocations.Delete(ctx, id), "nothing to delete")

	until := time.Date(2027, 3, 4, 5, 6, 7, 0, time.UTC)
	r := lifecycle.Revocation{ConsumerID: id, Until: until, Reason: lifecycle.ReasonDrained}
	require.NoError(t, e.Ports.Revocations.Put(ctx, r))
	got, err := e.Ports.Revocations.Get(ctx, id)
	require.NoError(t, err)
	require.True(t, until.Equal(got.Until))
	require.Equal(t, r.Reason, got.Reason)
	require.Equal(t, id, got.ConsumerID)

	r.Until, r.Reason = until.Add(time.Hour), lifecycle.ReasonForgotten
	require.NoError(t, e.Ports.Revocations.Put(ctx, r))
	got, err = e.Ports.Revocations.Get(ctx, id)
	require.NoError(t, err)
	require.True(t, r.Until.Equal(got.Until))
	require.Equal(t, lifecycle.ReasonForgotten, got.Reason)

	require.NoError(t, e.Ports.Revocations.Delete(ctx, id))
	_, err = e.Ports.Revocations.Get(ctx, id)
	require.ErrorIs(t, err, lifecycle.ErrNotFound)
}

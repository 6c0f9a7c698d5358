package rbactest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/rbac"
)

// ReviewedBinder is what RunReviewer checks: an rbac.Binder that is also
// an rbac.Installer.
type ReviewedBinder interface {
	rbac.Binder
	rbac.Installer
}

// ReviewerHarness tells RunReviewer how to use the Binder under test.
type ReviewerHarness struct {
	// New returns the Binder under test, which must also install the roles
	// the suite reviews. Required.
	New func(t *testing.T) ReviewedBinder
	// ClusterRoleBinding creates b where the Binder reviews: the port
	// cannot create ClusterRoleBindings, which grant outside any tenant
	// namespace. Required.
	ClusterRoleBinding func(t *testing.T, b *rbacv1.ClusterRoleBinding)
	// Namespace, when set, makes sure namespace name exists. The suite
	// calls it before it first uses a namespace.
	Namespace func(t *testing.T, name string)
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// RunReviewer checks that the Binder made by h.New meets the rbac.Reviewer
// contract, and that rbac.CheckUnprivileged over it tells privileged users
// from unprivileged ones:
//
//   - a user no binding names is allowed none of rbac.PrivilegeProbes, and
//     CheckUnprivileged accepts it;
//   - a user bound cluster-wide to a wildcard ClusterRole (what
//     cluster-admin is) is allowed all of them, and CheckUnprivileged
//     refuses it with a *rbac.PrivilegedError naming the first probe;
//   - a binding to a group counts only for members of the group;
//   - verbs, API groups, resources, subresources and resource names match
//     as the Kubernetes RBAC authorizer matches them;
//   - a RoleBinding allows only in its namespace;
//   - the ControlPlane binding kubepact applies allows what it should and
//     leaves the user unprivileged;
//   - a binding to a ClusterRole that does not exist grants nothing, and
//     the same binding grants once the role exists;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// After making a binding, the suite waits up to 30 seconds for it to be in
// force (an API server's authorizer reads bindings from a cache) before it
// checks what the binding does not allow.
//
// Users, groups and ClusterRoles are named "kubepact-test-...-<random>",
// and namespaces are used by no other test, so the suite runs against a
// real API server that other tests share. It binds no group an API server
// gives its users (system:authenticated, liqo.io). ClusterRoles and
// ClusterRoleBindings stay behind unless the harness removes them.
func RunReviewer(t *testing.T, h ReviewerHarness) {
	t.Helper()
	if h.New == nil || h.ClusterRoleBinding == nil {
		t.Fatal("rbactest: ReviewerHarness.New and ClusterRoleBinding are required")
	}
	t.Run("FreshUserIsUnprivileged", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		for _, p := range rbac.PrivilegeProbes() {
			ok, err := b.Allowed(t.Context(), user, []string{rbac.AuthenticatedGroup}, p)
			require.NoError(t, err, "Allowed %+v", p)
			require.False(t, ok, "Allowed %+v", p)
		}
		require.NoError(t, rbac.CheckUnprivileged(t.Context(), b, user, nil))
	})
	t.Run("WildcardClusterRoleBindingIsPrivileged", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		role := h.bindCluster(t, b, userSubject(user), rbacv1.PolicyRule{
			APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"},
		})
		awaitAllowed(t, b, user, nil, rbac.PrivilegeProbes()[0])
		for _, p := range rbac.PrivilegeProbes() {
			ok, err := b.Allowed(t.Context(), user, nil, p)
			require.NoError(t, err, "Allowed %+v", p)
			require.True(t, ok, "Allowed %+v with a ClusterRoleBinding to %s", p, role)
		}
		err := rbac.CheckUnprivileged(t.Context(), b, user, []string{"kubepact-test-group"})
		require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
		var pe *rbac.PrivilegedError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, user, pe.User)
		require.Equal(t, []string{"kubepact-test-group", rbac.AuthenticatedGroup}, pe.Groups)
		require.Equal(t, rbac.PrivilegeProbes()[0], pe.Probe)
	})
	t.Run("GroupBindingCountsForMembers", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user, group := "kubepact-test-user-"+uniqueSuffix(), "kubepact-test-group-"+uniqueSuffix()
		h.bindCluster(t, b, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}, rbacv1.PolicyRule{
			APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
		})
		secrets := rbac.PrivilegeProbes()[0]
		awaitAllowed(t, b, user, []string{group}, secrets)
		for _, c := range []struct {
			groups []string
			want   bool
		}{
			{groups: []string{group}, want: true},
			{groups: []string{"other", group}, want: true},
			{groups: nil, want: false},
			{groups: []string{"other"}, want: false},
		} {
			ok, err := b.Allowed(t.Context(), user, c.groups, secrets)
			require.NoError(t, err, "groups %q", c.groups)
			require.Equal(t, c.want, ok, "groups %q", c.groups)
		}
		ok, err := b.Allowed(t.Context(), group, nil, secrets)
		require.NoError(t, err)
		require.False(t, ok, "a user named like the group is not its member")
		require.ErrorIs(t, rbac.CheckUnprivileged(t.Context(), b, user, []string{group}), rbac.ErrPrivilegedUser)
		require.NoError(t, rbac.CheckUnprivileged(t.Context(), b, user, nil))
	})
	t.Run("RulesMatch", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		h.bindCluster(t, b, userSubject(user),
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"one"}},
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"*/scale"}, Verbs: []string{"update"}},
			rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"widgets"}, Verbs: []string{"*"}},
			rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs/status"}, Verbs: []string{"patch"}},
		)
		ns := h.namespace(t)
		awaitAllowed(t, b, user, nil, authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps"})
		for _, c := range []struct {
			attrs authorizationv1.ResourceAttributes
			want  bool
		}{
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps"}, true},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: ns, Name: "x"}, true},
			{authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Group: "apps", Resource: "configmaps"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Subresource: "status"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "one"}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Namespace: ns, Name: "one"}, true},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "two"}, false},
			{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale"}, true},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "apps", Resource: "deployments"}, false},
			{authorizationv1.ResourceAttributes{Verb: "update", Group: "", Resource: "deployments", Subresource: "scale"}, false},
			{authorizationv1.ResourceAttributes{Verb: "escalate", Group: "example.com", Resource: "widgets"}, true},
			{authorizationv1.ResourceAttributes{Verb: "get", Group: "example.com", Resource: "widgets", Subresource: "status"}, false},
			{authorizationv1.ResourceAttributes{Verb: "patch", Group: "batch", Resource: "jobs", Subresource: "status"}, true},
			{authorizationv1.ResourceAttributes{Verb: "patch", Group: "batch", Resource: "jobs"}, false},
			{authorizationv1.ResourceAttributes{Verb: "*", Resource: "configmaps"}, false},
		} {
			ok, err := b.Allowed(t.Context(), user, nil, c.attrs)
			require.NoError(t, err, "%+v", c.attrs)
			require.Equal(t, c.want, ok, "%+v", c.attrs)
		}
	})
	t.Run("RoleBindingAllowsInItsNamespace", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		role := newClusterRole(t)
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
		require.NoError(t, b.ApplyClusterRole(t.Context(), role))
		ns, other := h.namespace(t), h.namespace(t)
		rb := roleBinding(ns, role.Name)
		rb.Subjects = []rbacv1.Subject{userSubject(user)}
		require.NoError(t, b.ApplyRoleBinding(t.Context(), rb))
		awaitAllowed(t, b, user, nil, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"})
		for _, c := range []struct {
			namespace string
			want      bool
		}{{ns, true}, {other, false}, {"", false}} {
			ok, err := b.Allowed(t.Context(), user, nil, authorizationv1.ResourceAttributes{Namespace: c.namespace, Verb: "get", Resource: "secrets"})
			require.NoError(t, err, "namespace %q", c.namespace)
			require.Equal(t, c.want, ok, "namespace %q", c.namespace)
		}
		require.NoError(t, rbac.CheckUnprivileged(t.Context(), b, user, nil))
	})
	t.Run("ControlPlaneBindingIsUnprivileged", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		ns := h.namespace(t)
		require.NoError(t, b.ApplyClusterRole(t.Context(), rbac.ControlPlaneClusterRole()))
		require.NoError(t, b.ApplyRoleBinding(t.Context(), rbac.ControlPlaneRoleBinding(ns, user)))
		awaitAllowed(t, b, user, nil, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "authentication.liqo.io", Resource: "resourceslices"})
		for _, c := range []struct {
			attrs authorizationv1.ResourceAttributes
			want  bool
		}{
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "authentication.liqo.io", Resource: "resourceslices"}, true},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Group: "offloading.liqo.io", Resource: "namespacemaps", Subresource: "status"}, true},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.liqo.io", Resource: "resourceslices"}, false},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"}, false},
		} {
			ok, err := b.Allowed(t.Context(), user, nil, c.attrs)
			require.NoError(t, err, "%+v", c.attrs)
			require.Equal(t, c.want, ok, "%+v", c.attrs)
		}
		require.NoError(t, rbac.CheckUnprivileged(t.Context(), b, user, nil))
	})
	t.Run("MissingRoleGrantsNothing", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		user := "kubepact-test-user-" + uniqueSuffix()
		role := newClusterRole(t)
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
		h.ClusterRoleBinding(t, clusterRoleBinding(role.Name, userSubject(user)))
		ok, err := b.Allowed(t.Context(), user, nil, rbac.PrivilegeProbes()[0])
		require.NoError(t, err, "Allowed with a binding to a missing ClusterRole")
		require.False(t, ok, "a binding to a missing ClusterRole grants nothing")
		require.NoError(t, b.ApplyClusterRole(t.Context(), role))
		awaitAllowed(t, b, user, nil, rbac.PrivilegeProbes()[0])
		require.ErrorIs(t, rbac.CheckUnprivileged(t.Context(), b, user, nil), rbac.ErrPrivilegedUser)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		b := h.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := b.Allowed(ctx, "kubepact-test-user-"+uniqueSuffix(), nil, rbac.PrivilegeProbes()[0])
		require.ErrorIs(t, err, context.Canceled, "Allowed")
		err = rbac.CheckUnprivileged(ctx, b, "kubepact-test-user-"+uniqueSuffix(), nil)
		require.ErrorIs(t, err, context.Canceled, "CheckUnprivileged")
		require.False(t, errors.Is(err, rbac.ErrPrivilegedUser))
	})
}

// propagation bounds how long a binding may take to be in force: an API
// server's authorizer reads bindings from a cache.
const propagation = 30 * time.Second

// await calls cond until it returns true, failing t after propagation.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(propagation)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", propagation, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitAllowed waits until b allows user, a member of groups, attrs: until
// the bindings just made are in force.
func awaitAllowed(t *testing.T, b rbac.Reviewer, user string, groups []string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	await(t, fmt.Sprintf("user %q to be allowed %+v", user, attrs), func() bool {
		ok, err := b.Allowed(t.Context(), user, groups, attrs)
		require.NoError(t, err)
		return ok
	})
}

func (h ReviewerHarness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

// namespace returns a namespace no other test uses, which it makes sure
// exists.
func (h ReviewerHarness) namespace(t *testing.T) string {
	t.Helper()
	return Harness{Namespace: h.Namespace}.namespace(t)
}

// bindCluster applies, through b, a new ClusterRole with rules, binds s to
// it cluster-wide through the harness, and returns the role's name.
func (h ReviewerHarness) bindCluster(t *testing.T, b ReviewedBinder, s rbacv1.Subject, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	role := newClusterRole(t)
	role.Rules = rules
	require.NoError(t, b.ApplyClusterRole(t.Context(), role), "ApplyClusterRole %s", role.Name)
	h.ClusterRoleBinding(t, clusterRoleBinding(role.Name, s))
	return role.Name
}

func clusterRoleBinding(clusterRole string, s rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-" + uniqueSuffix(), Labels: map[string]string{testKey: "first"}},
		Subjects:   []rbacv1.Subject{s},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

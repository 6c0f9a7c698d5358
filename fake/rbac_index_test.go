package fake

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
)

// TestRBACIndexAnswersAsAFullScan checks that RBAC, which finds bindings
// through its subject and label index, answers every review and every
// ListBindings as an evaluation of all the bindings it holds does, while
// bindings are created, replaced with other subjects, labels and roles,
// and deleted in every way the fake offers, with a review after each write
// so that the index is kept current rather than rebuilt.
func TestRBACIndexAnswersAsAFullScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	a := &RBAC{}
	for _, r := range []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "make-pods"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
	} {
		require.NoError(t, a.ApplyClusterRole(ctx, r))
	}
	pick := func(from ...string) string { return from[rng.IntN(len(from))] }
	namespaces := []string{"ns-a", "ns-b"}
	users := []string{"alice", "bob", "system:serviceaccount:ns-a:robot", "system:serviceaccount:ns-b:robot"}
	groupNames := []string{"team", "liqo.io", "system:authenticated"}
	subjects := func() []rbacv1.Subject {
		var out []rbacv1.Subject
		for range rng.IntN(3) {
			switch rng.IntN(4) {
			case 0:
				out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, Name: pick(users...)})
			case 1:
				out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: pick(groupNames...)})
			case 2:
				out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: pick(namespaces...)})
			default: // in its binding's namespace; nobody's in a ClusterRoleBinding
				out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot"})
			}
		}
		return out
	}
	labels := func() map[string]string {
		if rng.IntN(3) == 0 {
			return nil
		}
		return map[string]string{clusterid.Label: pick("cl-one", "cl-two")}
	}
	roleRef := func() rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: pick("all", "read-secrets", "make-pods", "missing")}
	}
	name := func() string { return "b-" + strconv.Itoa(rng.IntN(6)) }

	requests := []authorizationv1.ResourceAttributes{{Verb: "get", Resource: "secrets"}, {Verb: "create", Resource: "pods"}, {Verb: "delete", Resource: "nodes"}}
	check := func(step int) {
		t.Helper()
		for _, user := range users {
			for _, groups := range [][]string{nil, {"team"}, {"liqo.io", "system:authenticated"}} {
				for _, ns := range append([]string{""}, namespaces...) {
					for _, attrs := range requests {
						attrs.Namespace = ns
						got, err := a.Allowed(ctx, user, groups, attrs)
						require.NoError(t, err)
						require.Equal(t, a.allowedByFullScan(user, groups, attrs), got,
							"step %d: %s in %v may %s %s in %q", step, user, groups, attrs.Verb, attrs.Resource, ns)
					}
				}
			}
		}
		for _, consumerID := range []string{"cl-one", "cl-two", ""} {
			got, err := a.ListBindings(ctx, consumerID)
			require.NoError(t, err)
			require.Equal(t, a.listBindingsByFullScan(consumerID), got, "step %d: the bindings of %q", step, consumerID)
		}
	}

	check(0)
	for step := 1; step <= 400; step++ {
		ns := pick(namespaces...)
		switch rng.IntN(6) {
		case 0, 1:
			require.NoError(t, a.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name(), Labels: labels()}, Subjects: subjects(), RoleRef: roleRef()}))
		case 2:
			require.NoError(t, a.ApplyRoleBinding(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name(), Namespace: ns, Labels: labels()}, Subjects: subjects(), RoleRef: roleRef()}))
		case 3:
			require.NoError(t, a.UpdateRoleBinding(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name(), Namespace: ns, Labels: labels()}, Subjects: subjects(), RoleRef: roleRef()}))
		case 4:
			if rng.IntN(2) == 0 {
				require.NoError(t, a.DeleteClusterRoleBinding(ctx, name()))
			} else {
				require.NoError(t, a.DeleteRoleBinding(ctx, ns, name()))
			}
		default:
			found, err := a.ListBindings(ctx, pick("cl-one", "cl-two"))
			require.NoError(t, err)
			if len(found) > 0 {
				require.NoError(t, a.DeleteBinding(ctx, found[rng.IntN(len(found))]))
			}
		}
		check(step)
	}
	require.NotEmpty(t, a.ClusterRoleBindings.Objects(""), "the walk ends with bindings to review")
}

// allowedByFullScan is Allowed evaluated over every binding a holds.
func (a *RBAC) allowedByFullScan(user string, groups []string, attrs authorizationv1.ResourceAttributes) bool {
	var roleBindings []*rbacv1.RoleBinding
	if attrs.Namespace != "" {
		roleBindings = a.RoleBindings.list(attrs.Namespace)
	}
	return authorize(a.ClusterRoleBindings.list(""), roleBindings, user, groups, attrs,
		func(_ string, ref rbacv1.RoleRef) []rbacv1.PolicyRule {
			if r, ok := a.ClusterRoles.get("", ref.Name); ok && ref.Kind == "ClusterRole" {
				return r.Rules
			}
			return nil
		})
}

// listBindingsByFullScan is ListBindings over every binding a holds.
func (a *RBAC) listBindingsByFullScan(consumerID string) []lifecycle.Binding {
	var out []lifecycle.Binding
	for _, b := range a.ClusterRoleBindings.list("") {
		if b.Labels[clusterid.Label] == consumerID {
			out = append(out, binding("", b.Name, b.UID, b.Labels, b.Subjects))
		}
	}
	for _, b := range a.RoleBindings.list("") {
		if b.Labels[clusterid.Label] == consumerID {
			out = append(out, binding(b.Namespace, b.Name, b.UID, b.Labels, b.Subjects))
		}
	}
	return out
}

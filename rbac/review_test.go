package rbac_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
)

// reviewer is an rbac.Reviewer that records its calls and answers with
// answer.
type reviewer struct {
	answer func(i int, attrs authorizationv1.ResourceAttributes) (bool, error)

	mu     sync.Mutex
	users  []string
	groups [][]string
	probes []authorizationv1.ResourceAttributes
}

func (r *reviewer) Allowed(_ context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	r.mu.Lock()
	i := slices.IndexFunc(rbac.PrivilegeProbes(), func(p authorizationv1.ResourceAttributes) bool { return p == attrs })
	r.users = append(r.users, user)
	r.groups = append(r.groups, groups)
	r.probes = append(r.probes, attrs)
	r.mu.Unlock()
	if r.answer == nil {
		return false, nil
	}
	return r.answer(i, attrs)
}

func TestPrivilegeProbes(t *testing.T) {
	t.Parallel()
	want := []authorizationv1.ResourceAttributes{
		{Verb: "get", Version: "v1", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "get", Version: "v1", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "create", Version: "v1", Resource: "pods"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "impersonate", Version: "v1", Resource: "users"},
		{Verb: "approve", Group: "certificates.k8s.io", Version: "v1", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client"},
	}
	got := rbac.PrivilegeProbes()
	require.Equal(t, want, got)
	for _, p := range got {
		// A requested "*" matches only rules that say "*": probe concrete requests.
		require.NotContains(t, []string{p.Verb, p.Group, p.Resource, p.Namespace}, "*")
		require.NotEmpty(t, p.Verb)
		require.NotEmpty(t, p.Resource)
	}
	got[0].Verb = "mutated"
	require.Equal(t, want, rbac.PrivilegeProbes(), "callers do not share the list")
}

func TestCheckUnprivileged(t *testing.T) {
	t.Parallel()
	probes := rbac.PrivilegeProbes()
	failure := errors.New("review failed")
	tests := []struct {
		name      string
		groups    []string
		answer    func(i int, attrs authorizationv1.ResourceAttributes) (bool, error)
		wantProbe int // index of the probe named by a PrivilegedError, or -1
		wantErr   error
		wantGroup []string
	}{
		{
			name: "nothing allowed", groups: []string{csr.ControlPlaneOrganization},
			wantProbe: -1, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "no groups", groups: nil,
			wantProbe: -1, wantGroup: []string{"system:authenticated"},
		},
		{
			name: "system:authenticated given", groups: []string{"system:authenticated", "liqo.io"},
			wantProbe: -1, wantGroup: []string{"system:authenticated", "liqo.io"},
		},
		{
			name: "first probe allowed", groups: []string{"liqo.io"},
			answer:    func(i int, _ authorizationv1.ResourceAttributes) (bool, error) { return i == 0, nil },
			wantProbe: 0, wantErr: rbac.ErrPrivilegedUser, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "last probe allowed", groups: []string{"liqo.io"},
			answer:    func(i int, _ authorizationv1.ResourceAttributes) (bool, error) { return i == len(probes)-1, nil },
			wantProbe: len(probes) - 1, wantErr: rbac.ErrPrivilegedUser, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "every probe allowed names the first", groups: []string{"liqo.io"},
			answer:    func(int, authorizationv1.ResourceAttributes) (bool, error) { return true, nil },
			wantProbe: 0, wantErr: rbac.ErrPrivilegedUser, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "a failed review fails closed", groups: []string{"liqo.io"},
			answer: func(i int, _ authorizationv1.ResourceAttributes) (bool, error) {
				if i == 2 {
					return false, failure
				}
				return false, nil
			},
			wantProbe: -1, wantErr: failure, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "an allow before a failed review names the allow", groups: []string{"liqo.io"},
			answer: func(i int, _ authorizationv1.ResourceAttributes) (bool, error) {
				if i == 4 {
					return false, failure
				}
				return i == 3, nil
			},
			wantProbe: 3, wantErr: rbac.ErrPrivilegedUser, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
		{
			name: "an error beside an allow is an error", groups: []string{"liqo.io"},
			answer:    func(int, authorizationv1.ResourceAttributes) (bool, error) { return true, failure },
			wantProbe: -1, wantErr: failure, wantGroup: []string{"liqo.io", "system:authenticated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &reviewer{answer: tt.answer}
			// Spare capacity would let an append write into the caller's array.
			groups := append(make([]string, 0, 8), tt.groups...)
			err := rbac.CheckUnprivileged(t.Context(), r, "cl-consumer", groups)
			require.True(t, slices.Equal(tt.groups, groups), "the caller's groups are not modified")
			for _, g := range groups[len(groups):cap(groups)] {
				require.Empty(t, g, "nothing is appended to the caller's array")
			}
			require.ElementsMatch(t, probes, r.probes, "every probe asked once")
			for i := range r.probes {
				require.Equal(t, "cl-consumer", r.users[i])
				require.Equal(t, tt.wantGroup, r.groups[i])
			}
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			var pe *rbac.PrivilegedError
			if tt.wantProbe < 0 {
				require.False(t, errors.As(err, &pe), "no PrivilegedError: %v", err)
				require.NotErrorIs(t, err, rbac.ErrPrivilegedUser)
				return
			}
			require.ErrorAs(t, err, &pe)
			require.Equal(t, &rbac.PrivilegedError{User: "cl-consumer", Groups: tt.wantGroup, Probe: probes[tt.wantProbe]}, pe)
		})
	}
}

func TestCheckUnprivilegedRefusesEmptyUser(t *testing.T) {
	t.Parallel()
	r := &reviewer{}
	err := rbac.CheckUnprivileged(t.Context(), r, "", []string{"liqo.io"})
	require.Error(t, err)
	require.NotErrorIs(t, err, rbac.ErrPrivilegedUser)
	require.Empty(t, r.probes)
}

func TestPrivilegedErrorMessage(t *testing.T) {
	t.Parallel()
	for i, want := range []string{
		"get secrets cluster-wide",
		"get secrets in namespace kube-system",
		"create pods in namespace kube-system",
		"escalate clusterroles.rbac.authorization.k8s.io cluster-wide",
		"bind clusterroles.rbac.authorization.k8s.io cluster-admin cluster-wide",
		"impersonate users cluster-wide",
		"approve signers.certificates.k8s.io kubernetes.io/kube-apiserver-client cluster-wide",
	} {
		err := &rbac.PrivilegedError{User: "admin", Groups: []string{"liqo.io", "system:authenticated"}, Probe: rbac.PrivilegeProbes()[i]}
		require.Equal(t, `rbac: privileged user: "admin" with groups ["liqo.io" "system:authenticated"] may `+want+`, which kubepact never grants`, err.Error())
		require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	}
}

// The attack: a consumer picks as its cluster ID the name of a user, or
// shares the name of a group, that already holds permissions on the
// provider. The certificate the provider would sign makes the consumer
// that user; CheckUnprivileged refuses it before anything is signed or
// bound.
func TestCheckUnprivilegedRefusesInheritedBindings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := &fake.RBAC{}
	wildcard := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}
	editor := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "edit"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, Verbs: rbac.Verbs()}},
	}
	require.NoError(t, a.ApplyClusterRole(ctx, wildcard))
	require.NoError(t, a.ApplyClusterRole(ctx, editor))
	require.NoError(t, a.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-is-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "admin"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
	}))
	require.NoError(t, a.ApplyRoleBinding(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ops-edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ops"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
	}))

	tests := []struct {
		name      string
		user      string
		groups    []string
		wantProbe int // -1: unprivileged
	}{
		{name: "existing admin user", user: "admin", groups: []string{csr.ControlPlaneOrganization}, wantProbe: 0},
		{name: "group editing kube-system", user: "cl-x", groups: []string{"ops"}, wantProbe: 1},
		{name: "fresh consumer", user: "cl-consumer", groups: []string{csr.ControlPlaneOrganization}, wantProbe: -1},
		{name: "user named like a group", user: "ops", groups: []string{csr.ControlPlaneOrganization}, wantProbe: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := rbac.CheckUnprivileged(t.Context(), a, tt.user, tt.groups)
			if tt.wantProbe < 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
			var pe *rbac.PrivilegedError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.user, pe.User)
			require.Equal(t, rbac.PrivilegeProbes()[tt.wantProbe], pe.Probe)
		})
	}

	t.Run("kubepact's own binding is unprivileged", func(t *testing.T) {
		t.Parallel()
		a := &fake.RBAC{}
		require.NoError(t, a.ApplyClusterRole(t.Context(), rbac.ControlPlaneClusterRole()))
		require.NoError(t, a.ApplyRoleBinding(t.Context(), rbac.ControlPlaneRoleBinding("liqo-tenant-cl-consumer", "cl-consumer")))
		require.NoError(t, rbac.CheckUnprivileged(t.Context(), a, "cl-consumer", []string{csr.ControlPlaneOrganization}))
	})
}

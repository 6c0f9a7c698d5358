package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
)

func TestTransition(t *testing.T) {
	t.Parallel()
	const (
		active   = authv1beta1.TenantConditionActive
		cordoned = authv1beta1.TenantConditionCordoned
		drained  = authv1beta1.TenantConditionDrained
	)
	for _, tc := range []struct {
		from, to authv1beta1.TenantCondition
		ok       bool
	}{
		{active, cordoned, true},
		{"", cordoned, true},
		{cordoned, cordoned, false},
		{drained, cordoned, false},
		{cordoned, active, true},
		{active, active, false},
		{"", active, false},
		{drained, active, false},
		{active, drained, true},
		{cordoned, drained, true},
		{drained, drained, true},
		{active, "Paused", false},
	} {
		err := lifecycle.Transition(tc.from, tc.to)
		if tc.ok {
			require.NoError(t, err, "%s -> %s", tc.from, tc.to)
			continue
		}
		var te *lifecycle.TransitionError
		require.ErrorAs(t, err, &te, "%s -> %s", tc.from, tc.to)
		require.ErrorIs(t, err, lifecycle.ErrTransition)
		require.Equal(t, lifecycle.Condition(tc.from), te.From)
	}
}

func TestConsumerBinding(t *testing.T) {
	t.Parallel()
	const id = "cl-consumer"
	ours := map[string]string{clusterid.Label: id, rbac.ManagedByLabel: rbac.ManagedByValue}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: id}
	group := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: id}
	for _, tc := range []struct {
		name string
		b    lifecycle.Binding
		ok   bool
	}{
		{"user", lifecycle.Binding{Labels: ours, Subjects: []rbacv1.Subject{user}}, true},
		{"group and user", lifecycle.Binding{Labels: ours, Subjects: []rbacv1.Subject{group, user}}, true},
		{"another consumer's label", lifecycle.Binding{Labels: map[string]string{clusterid.Label: "other", rbac.ManagedByLabel: rbac.ManagedByValue}, Subjects: []rbacv1.Subject{user}}, false},
		{"not managed by liqo", lifecycle.Binding{Labels: map[string]string{clusterid.Label: id}, Subjects: []rbacv1.Subject{user}}, false},
		{"no subject", lifecycle.Binding{Labels: ours}, false},
		{"another user too", lifecycle.Binding{Labels: ours, Subjects: []rbacv1.Subject{user, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, false},
		{"a ServiceAccount of the name", lifecycle.Binding{Labels: ours, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: id, Namespace: "x"}}}, false},
		{"another API group", lifecycle.Binding{Labels: ours, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "example.com", Name: id}}}, false},
	} {
		require.Equal(t, tc.ok, lifecycle.ConsumerBinding(tc.b, id), tc.name)
	}
}

func TestUntil(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got := lifecycle.Until(now, time.Hour, time.Minute)
	require.Equal(t, now.Add(time.Hour+time.Minute+time.Second), got)
	later := now.Add(48 * time.Hour).Add(500 * time.Millisecond)
	require.Equal(t, now.Add(48*time.Hour+time.Second), lifecycle.Until(now, time.Hour, time.Minute, now, later))
}

func TestRevocationCheck(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := lifecycle.Revocation{ConsumerID: "c", Until: until, Reason: lifecycle.ReasonForgotten}
	err := r.Check(until)
	var revoked *lifecycle.RevokedError
	require.True(t, errors.As(err, &revoked))
	require.ErrorIs(t, err, lifecycle.ErrRevoked)
	require.Equal(t, until, revoked.Until)
	require.NoError(t, r.Check(until.Add(time.Nanosecond)))
}

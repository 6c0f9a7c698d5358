package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// stubRoles answers HasClusterRole from present, or with err when set.
type stubRoles struct {
	rbac.Applier // only HasClusterRole is called
	present      map[string]bool
	err          error
}

func (s *stubRoles) HasClusterRole(_ context.Context, name string) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	return s.present[name], nil
}

// readinessUnderTest is a providerReadiness over stubRoles, a fake clock,
// a fake recorder and a logger that keeps its lines.
type readinessUnderTest struct {
	*providerReadiness
	roles  *stubRoles
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
	lines  *[]string
}

func newReadinessUnderTest(t *testing.T, pc controllers.ProviderConfig, pod *corev1.ObjectReference) readinessUnderTest {
	t.Helper()
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	u := readinessUnderTest{
		roles:  &stubRoles{present: map[string]bool{rbac.ControlPlaneClusterRoleName: true, rbac.VirtualKubeletClusterWideRoleName: true}},
		clock:  clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)),
		events: events.NewFakeRecorder(100),
		lines:  &lines,
	}
	u.providerReadiness = newProviderReadiness(pc, u.roles,
		[]string{rbac.ControlPlaneClusterRoleName, rbac.VirtualKubeletClusterWideRoleName},
		u.events, pod, "kubepact-system", log, u.clock)
	return u
}

// recorded drains the Events recorded so far.
func (u readinessUnderTest) recorded() []string {
	var out []string
	for {
		select {
		case e := <-u.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

var testPod = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kubepact-system", Name: "kubepact-controller-0"}

var withURL = controllers.ProviderConfig{ClusterID: "cl-p", Endpoint: provider.Endpoint{Server: "https://192.0.2.1:6443", CA: []byte("ca")}}

// TestProviderReadinessNoURL: a provider without an API server URL is not
// ready, with provider.ErrNoEndpoint and the fix; it says so in one log
// line and one Warning Event, recorded again only every eventReminder.
func TestProviderReadinessNoURL(t *testing.T) {
	u := newReadinessUnderTest(t, controllers.ProviderConfig{ClusterID: "cl-p"}, testPod)
	require.ErrorIs(t, u.Check(nil), errNotChecked, "not ready before the first check")

	u.check(t.Context())
	err := u.Check(nil)
	require.ErrorIs(t, err, errProviderNotReady)
	require.ErrorIs(t, err, provider.ErrNoEndpoint)
	require.Contains(t, err.Error(), "--api-server-url=https://HOST:PORT", "the fix")
	require.Contains(t, err.Error(), "kubectl -n kubepact-system edit deployment kubepact-controller", "where to make it")
	require.Contains(t, err.Error(), "--roles=consumer", "the way out for a consumer")
	require.Equal(t, []string{"Warning " + contract.ReasonAPIServerURLUnknown + " " + u.noEndpoint.Error()}, u.recorded())
	require.Len(t, *u.lines, 1)
	require.Contains(t, (*u.lines)[0], `"reason"="APIServerURLUnknown"`)

	// It lasts: no new line, and no new Event before the reminder.
	for range 10 {
		u.clock.Step(readinessInterval)
		u.check(t.Context())
	}
	require.Empty(t, u.recorded())
	require.Len(t, *u.lines, 1, "logged once")
	u.clock.Step(eventReminder)
	u.check(t.Context())
	require.Len(t, u.recorded(), 1, "recorded again after eventReminder, so it stays listed")
	require.Len(t, *u.lines, 1, "not logged again")
}

// TestProviderReadinessRoles: a missing peer role makes the provider not
// ready with its *rbac.MissingRoleError (and the fix); installed again, it
// is ready, with a line and a Normal Event. A read that fails keeps the
// last verdict; before any verdict it is the problem.
func TestProviderReadinessRoles(t *testing.T) {
	u := newReadinessUnderTest(t, withURL, testPod)
	u.check(t.Context())
	require.NoError(t, u.Check(nil))
	require.Empty(t, u.recorded(), "nothing to say while ready")
	require.Empty(t, *u.lines)

	// Both roles deleted: both named.
	u.roles.present = map[string]bool{}
	u.check(t.Context())
	err := u.Check(nil)
	require.ErrorIs(t, err, errProviderNotReady)
	var missing *rbac.MissingRoleError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, rbac.ControlPlaneClusterRoleName, missing.Name)
	require.Contains(t, err.Error(), rbac.VirtualKubeletClusterWideRoleName)
	require.Contains(t, err.Error(), "kubectl apply -k config/roles, or kubepact install roles", "the fix")
	got := u.recorded()
	require.Len(t, got, 2)
	for _, e := range got {
		require.True(t, strings.HasPrefix(e, "Warning "+contract.ReasonPeerRoleMissing+" "), e)
	}
	require.Len(t, *u.lines, 2)

	// A read that fails says nothing new: still not ready, for the same reasons.
	u.roles.err = errors.New("connection refused")
	u.clock.Step(readinessInterval)
	u.check(t.Context())
	require.ErrorAs(t, u.Check(nil), &missing)
	require.Empty(t, u.recorded())

	// One role back: the other still missing.
	u.roles.err = nil
	u.roles.present = map[string]bool{rbac.ControlPlaneClusterRoleName: true}
	u.check(t.Context())
	require.ErrorAs(t, u.Check(nil), &missing)
	require.Equal(t, rbac.VirtualKubeletClusterWideRoleName, missing.Name)
	require.Empty(t, u.recorded(), "a problem that lasts is not recorded again")

	// Both back: ready, said once.
	u.roles.present[rbac.VirtualKubeletClusterWideRoleName] = true
	u.check(t.Context())
	require.NoError(t, u.Check(nil))
	require.Equal(t, []string{"Normal " + reasonProviderReady + " ready: the provider role accepts Tenants and ResourceSlices again"}, u.recorded())
	require.Len(t, *u.lines, 3)
	require.Contains(t, (*u.lines)[2], `"reason"="ProviderReady"`)
	u.check(t.Context())
	require.Empty(t, u.recorded())
	require.Len(t, *u.lines, 3)

	// A read that fails once does not make a ready replica flap.
	u.roles.err = errors.New("the server is currently unable to handle the request")
	u.check(t.Context())
	require.NoError(t, u.Check(nil))
	require.Empty(t, u.recorded())
}

// TestProviderReadinessUnread: a role never read (the controller's RBAC
// refuses the get) is a problem with the API's error, not "installed".
func TestProviderReadinessUnread(t *testing.T) {
	u := newReadinessUnderTest(t, withURL, testPod)
	forbidden := errors.New("clusterroles.rbac.authorization.k8s.io is forbidden")
	u.roles.err = forbidden
	u.check(t.Context())
	err := u.Check(nil)
	require.ErrorIs(t, err, errProviderNotReady)
	require.ErrorIs(t, err, forbidden)
	got := u.recorded()
	require.Len(t, got, 2)
	require.True(t, strings.HasPrefix(got[0], "Warning "+reasonPeerRoleUnknown+" "), got[0])

	// Stopping is no verdict.
	u = newReadinessUnderTest(t, withURL, testPod)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	u.roles.err = context.Canceled
	u.check(ctx)
	require.ErrorIs(t, u.Check(nil), errNotChecked)
}

// TestProviderReadinessOutsidePod: without a Pod to record on, the check
// logs and answers, and records nothing.
func TestProviderReadinessOutsidePod(t *testing.T) {
	u := newReadinessUnderTest(t, controllers.ProviderConfig{ClusterID: "cl-p"}, nil)
	u.check(t.Context())
	require.ErrorIs(t, u.Check(nil), provider.ErrNoEndpoint)
	require.Empty(t, u.recorded())
	require.Len(t, *u.lines, 1)
}

// TestPodReference: the Pod is the one the downward API names.
func TestPodReference(t *testing.T) {
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_NAMESPACE", "kubepact-system")
	require.Nil(t, podReference(), "no POD_NAME: outside a pod")
	t.Setenv("POD_NAME", "kubepact-controller-abc")
	t.Setenv("POD_UID", "0b1c")
	require.Equal(t, &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "kubepact-system",
		Name: "kubepact-controller-abc", UID: "0b1c"}, podReference())
}

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubepact/kubepact/controllers/contract"
)

// TestNewestCurrent tells the Events listed before a wait that still tell
// about the object from those about an older state or incarnation of it.
func TestNewestCurrent(t *testing.T) {
	t.Parallel()
	at := func(sec int) metav1.MicroTime { return metav1.NewMicroTime(time.Unix(1_700_000_000+int64(sec), 0)) }
	ev := func(name, typ, reason string, uid types.UID, sec int) eventsv1.Event {
		return eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, Reason: reason,
			Regarding: corev1.ObjectReference{UID: uid}, EventTime: at(sec)}
	}
	refused := ev("a", corev1.EventTypeWarning, contract.ReasonInvalidSignature, "u1", 1)
	accepted := ev("b", corev1.EventTypeNormal, contract.ReasonTenantAccepted, "u1", 2)
	older := ev("c", corev1.EventTypeWarning, contract.ReasonInvalidSignature, "u0", 3)
	tenant := objectState{exists: true, uid: "u1", generation: 2, resourceVersion: "10"}
	secret := objectState{exists: true, uid: "u1", resourceVersion: "10"}
	with := func(s objectState, f func(*objectState)) objectState { f(&s); return s }
	for _, tc := range []struct {
		name          string
		earlier       []eventsv1.Event
		before, after objectState
		want          string // the Event's name, "" for none
	}{
		{"unchanged: the refusal holds", []eventsv1.Event{refused}, tenant, tenant, "a"},
		{"status written since: the generation holds", []eventsv1.Event{refused}, tenant, with(tenant, func(s *objectState) { s.resourceVersion = "11" }), "a"},
		{"a later Normal Event supersedes", []eventsv1.Event{accepted, refused}, tenant, tenant, "b"},
		{"another incarnation's Event is ignored", []eventsv1.Event{refused, older}, tenant, tenant, "a"},
		{"the spec changed: judged anew", []eventsv1.Event{refused}, tenant, with(tenant, func(s *objectState) { s.generation = 3 }), ""},
		{"recreated: judged anew", []eventsv1.Event{refused}, tenant, with(tenant, func(s *objectState) { s.uid = "u2" }), ""},
		{"created by the CLI: judged anew", []eventsv1.Event{refused}, objectState{}, tenant, ""},
		{"a Secret unchanged", []eventsv1.Event{refused}, secret, secret, "a"},
		{"a Secret written since", []eventsv1.Event{refused}, secret, with(secret, func(s *objectState) { s.resourceVersion = "11" }), ""},
		{"no Events", nil, tenant, tenant, ""},
	} {
		got := newestCurrent(tc.earlier, tc.before, tc.after)
		if tc.want == "" {
			assert.Nil(t, got, tc.name)
			continue
		}
		if assert.NotNil(t, got, tc.name) {
			assert.Equal(t, tc.want, got.Name, tc.name)
		}
	}
}

// TestStopError ends a wait on the Warnings that need a person, kubepact's
// and Liqo's, and on nothing else.
func TestStopError(t *testing.T) {
	t.Parallel()
	ev := func(typ, reason string) *eventsv1.Event {
		return &eventsv1.Event{Type: typ, Reason: reason, Note: strings.Repeat("a long note that names the fix ", 10),
			Regarding: corev1.ObjectReference{Kind: "Tenant", Namespace: "liqo-tenant-c", Name: "c"}}
	}
	for _, reason := range []string{contract.ReasonConsumerRevoked, liqoInvalidCSR, liqoSignatureVerificationFailed, liqoWrongNamespace} {
		var refused *RefusedError
		err := stopError(providerRole, ev(corev1.EventTypeWarning, reason))
		require.ErrorAs(t, err, &refused, reason)
		require.ErrorIs(t, err, errRefused)
		assert.Equal(t, reason, refused.Reason)
		assert.Contains(t, err.Error(), ev("", "").Note, "the whole note")
	}
	for _, reason := range []string{contract.ReasonAPIServerURLUnknown, contract.ReasonPeerRoleMissing, contract.ReasonPublishRefused} {
		var blocked *BlockedError
		err := stopError(providerRole, ev(corev1.EventTypeWarning, reason))
		require.ErrorAs(t, err, &blocked, reason)
		require.ErrorIs(t, err, errBlocked)
		assert.Equal(t, providerRole, blocked.Role)
		assert.Contains(t, err.Error(), ev("", "").Note, "the whole note")
	}
	for _, e := range []*eventsv1.Event{
		nil,
		ev(corev1.EventTypeWarning, contract.ReasonAcceptFailed),       // transient
		ev(corev1.EventTypeWarning, contract.ReasonSigningNonceFailed), // transient
		ev(corev1.EventTypeNormal, contract.ReasonCertificatePending),  // waits for the signer
		ev(corev1.EventTypeNormal, contract.ReasonPeerRoleMissing),     // not a Warning
	} {
		assert.NoError(t, stopError(providerRole, e))
	}
}

// TestTimeoutQuotesLastWarning: a wait that --timeout ended quotes the
// newest Event, and the newest Warning in full when a later Event is not
// it: a retried failure says what went wrong though it ends no wait.
func TestTimeoutQuotesLastWarning(t *testing.T) {
	t.Parallel()
	note := strings.Repeat("a long note that says what went wrong\n", 8)
	warning := &eventsv1.Event{Type: corev1.EventTypeWarning, Reason: "SomethingRetried", Note: note}
	normal := &eventsv1.Event{Type: corev1.EventTypeNormal, Reason: contract.ReasonCertificatePending, Note: "waiting"}
	whole := "Warning SomethingRetried: " + strings.ReplaceAll(note, "\n", " ")

	err := error(&TimeoutError{Role: consumerRole, What: "it", Namespace: "ns", Name: "n", Last: normal, LastWarning: warning})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "; last Event: Normal CertificatePending: waiting; last Warning: "+whole)

	err = &TimeoutError{Role: consumerRole, What: "it", Namespace: "ns", Name: "n", Last: warning, LastWarning: warning}
	assert.Contains(t, err.Error(), "; last Event: "+whole)
	assert.NotContains(t, err.Error(), "last Warning")
}

// TestAdviceOfWaits gives the fix each end of a wait calls for, and the
// CSR signer's only where a CSR waits.
func TestAdviceOfWaits(t *testing.T) {
	t.Parallel()
	const signer = "signs CertificateSigningRequests"
	for _, tc := range []struct {
		name      string
		err       error
		want      string
		csrAdvice bool
	}{
		{"no API server URL", &BlockedError{Reason: contract.ReasonAPIServerURLUnknown}, "--api-server-url", false},
		{"a peer role missing", &BlockedError{Reason: contract.ReasonPeerRoleMissing}, "kubectl apply -k config/roles", false},
		{"the public key refused", &BlockedError{Reason: contract.ReasonPublishRefused}, "kubectl create token kubepact-controller -n kubepact-system", false},
		{"a retried Warning, then a Normal Event", &TimeoutError{Last: &eventsv1.Event{Type: "Normal"}, LastWarning: &eventsv1.Event{Type: "Warning"}},
			"last Warning, quoted above", false},
		{"Liqo refuses the signature", &RefusedError{Reason: liqoSignatureVerificationFailed}, "not signed over this nonce", false},
		{"a CSR pending", &TimeoutError{CSRPending: true, Last: &eventsv1.Event{Type: "Normal", Reason: contract.ReasonCertificatePending}}, "raise --timeout", true},
		{"a silent controller", &TimeoutError{Controller: "Lease kube-system/x"}, "Lease kube-system/x", false},
		{"a controller gone", &ControllerGoneError{Role: providerRole, Where: "Lease kube-system/x"}, "run the command again", false},
		{"another timeout", context.DeadlineExceeded, "raise --timeout", false},
		{"interrupted", &InterruptedError{Resume: "run it again", Clean: "or unauthenticate"}, "run it again; or unauthenticate", false},
	} {
		got := advice(tc.err, "cl-consumer")
		assert.Contains(t, got, tc.want, tc.name)
		assert.Equal(t, tc.csrAdvice, strings.Contains(got, signer), "%s: %s", tc.name, got)
	}
}

// TestProgress says what a wait waits for: one plain line off a terminal,
// a spinner erased at the end on one.
func TestProgress(t *testing.T) {
	t.Parallel()
	var plain bytes.Buffer
	done := newProgress(&plain).wait("the provider's controller to issue the nonce")
	done()
	assert.Equal(t, " INFO  Waiting for the provider's controller to issue the nonce\n", plain.String())

	var tty syncBuffer
	p := &progress{w: &tty, tty: true, interval: time.Millisecond}
	done = p.wait("the provider's controller to accept the Tenant")
	time.Sleep(20 * time.Millisecond)
	done()
	done() // twice is fine
	out := tty.String()
	assert.Contains(t, out, "Waiting for the provider's controller to accept the Tenant (0s)")
	assert.Contains(t, out, string(spinnerFrames[1]), "the spinner turns")
	assert.True(t, strings.HasSuffix(out, "\r\033[K"), "the line is erased at the end: %q", out)
	assert.False(t, newProgress(&plain).tty, "a buffer is no terminal")
}

// TestExitCode reports a command a signal stopped as a shell does.
func TestExitCode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	assert.Equal(t, exitError, exitCode(ctx, exitError), "no signal")
	cancel(&signalCause{sig: os.Interrupt})
	assert.Equal(t, 130, exitCode(ctx, exitError))
	assert.Equal(t, exitOK, exitCode(ctx, exitOK), "done before the signal")
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(&signalCause{sig: syscall.SIGTERM})
	assert.Equal(t, 143, exitCode(ctx, exitError))
	assert.True(t, errors.Is(context.Cause(ctx), errInterrupted))
}

// TestControllerLiveness tells a controller that renews its Lease from one
// whose Lease ran out, was released or deleted, and judges a Lease that
// ran out only once it is no longer written.
func TestControllerLiveness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lease := func(rv, holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: kubepactLease, ResourceVersion: rv},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: time.Now().Add(-renewed)}},
		}
	}
	cs := fake.NewClientset(lease("1", "pod-a", 0))
	leases := cs.CoordinationV1().Leases("kube-system")
	w := watched{cl: &cluster{role: providerRole, client: cs},
		ctl: &controllerInfo{where: "Lease kube-system/" + kubepactLease, lease: &types.NamespacedName{Namespace: "kube-system", Name: kubepactLease}}}
	var s livenessState
	update := func(l *coordinationv1.Lease) {
		t.Helper()
		_, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	assert.Nil(t, w.check(ctx, &s), "renewed")
	update(lease("2", "pod-a", 20*time.Second))
	assert.Nil(t, w.check(ctx, &s), "written since the previous reading")
	gone := w.check(ctx, &s)
	require.NotNil(t, gone, "ran out")
	assert.ErrorIs(t, gone, errControllerGone)
	assert.Equal(t, "ran out", gone.How)
	assert.Equal(t, "pod-a", gone.Holder)
	assert.InDelta(t, 20, gone.Age.Seconds(), 2)
	assert.Contains(t, gone.Error(), "was last renewed 20s ago by the API server's clock")

	update(lease("3", "pod-b", 0))
	assert.Nil(t, w.check(ctx, &s), "another replica took over")
	update(lease("4", "", 0))
	assert.Nil(t, w.check(ctx, &s), "released: another replica may take over")
	gone = w.check(ctx, &s)
	require.NotNil(t, gone)
	assert.Equal(t, "was released", gone.How)

	require.NoError(t, leases.Delete(ctx, kubepactLease, metav1.DeleteOptions{}))
	gone = w.check(ctx, &s)
	require.NotNil(t, gone)
	assert.Equal(t, "was deleted", gone.How)
}

// TestObservedAgain tells a new observation, in an update of an Event
// listed before the wait, from a recorder closing or refreshing a series.
func TestObservedAgain(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	legacy := func(count int32, sec int) *eventsv1.Event {
		return &eventsv1.Event{DeprecatedCount: count, DeprecatedLastTimestamp: metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))}
	}
	series := func(count int32, sec int) *eventsv1.Event {
		return &eventsv1.Event{EventTime: metav1.NewMicroTime(t0), Series: &eventsv1.EventSeries{Count: count,
			LastObservedTime: metav1.NewMicroTime(t0.Add(time.Duration(sec) * time.Second))}}
	}
	same := objectState{exists: true, uid: "u", generation: 1}
	changed := objectState{exists: true, uid: "u", generation: 2}
	assert.True(t, observedAgain(legacy(1, 0), legacy(2, 5), same, &changed), "Liqo's repeat, about the object as it is")
	assert.False(t, observedAgain(legacy(2, 5), legacy(2, 5), same, &changed), "rewritten, not observed")
	assert.True(t, observedAgain(series(2, 1), series(3, 9), same, &same), "a series of the unchanged object")
	assert.False(t, observedAgain(series(2, 1), series(3, 9), same, &changed), "a series of an older version")
	assert.False(t, observedAgain(series(2, 1), series(3, 9), same, nil), "the object not read yet")
	assert.False(t, observedAgain(series(2, 9), series(2, 9), same, &same), "refreshed")
}

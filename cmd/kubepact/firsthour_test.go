package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// These tests run authenticate and unauthenticate through controllers
// that cannot answer as a newcomer meets them, and check that each wait
// ends at the first answer that needs a person, says why in full and names
// the fix. Not parallel: the controllers answer every object of their
// kinds in the clusters.

// pairIDs records a generated cluster ID on each test cluster, in a
// namespace of its own, as kubepact-controller does, installs the peer
// roles on the provider, and returns the IDs, that namespace, and the
// arguments of a command between the clusters.
func pairIDs(t *testing.T, ctx context.Context) (consumerID, providerID, ns string, args func(verb string, extra ...string) []string) {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	ns = unique("liqo-first")
	consumerID, _, err := kube.EnsureClusterID(ctx, consumerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	providerID, _, err = kube.EnsureClusterID(ctx, providerEnv.client, "", &kube.ClusterIDOptions{Namespace: ns})
	require.NoError(t, err)
	require.NoError(t, rbac.Install(ctx, kube.NewRBAC(providerEnv.client)))
	args = func(verb string, extra ...string) []string {
		return append([]string{verb, "--kubeconfig", consumerEnv.kubeconfig, "-n", ns, "--remote-kubeconfig", providerEnv.kubeconfig, "--remote-namespace", ns}, extra...)
	}
	return consumerID, providerID, ns, args
}

// startControllers runs kubepact's provider reconcilers (with pcfg, its
// ClusterID set here) on the provider and its consumer reconcilers on the
// consumer, and waits until the CLI finds both.
func startControllers(t *testing.T, ctx context.Context, consumerID, providerID, ns string, pcfg controllers.ProviderConfig) {
	t.Helper()
	pcfg.ClusterID = providerID
	startController(t, providerEnv.cluster.AdminConfig(), func(mgr manager.Manager) error { return controllers.SetupProvider(mgr, pcfg) })
	startController(t, consumerEnv.cluster.AdminConfig(), func(mgr manager.Manager) error {
		return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: ns})
	})
	requireControllers(t, ctx, ns)
}

func requireControllers(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	for _, e := range []*testEnv{providerEnv, consumerEnv} {
		require.Eventually(t, func() bool {
			_, err := findController(ctx, e.client, ns)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "the controller holds its Lease on %s", e.cluster.Name())
	}
}

// testEndpoint is how consumers reach the provider test cluster.
func testEndpoint() provider.Endpoint {
	return provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}
}

// newestEvent returns the newest Event of reason about the object kind
// namespace/name on e.
func newestEvent(t *testing.T, ctx context.Context, e *testEnv, namespace, kind, name, reason string) *eventsv1.Event {
	t.Helper()
	list, err := e.client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var newest *eventsv1.Event
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == reason &&
			(newest == nil || waitEventTime(ev).After(waitEventTime(newest))) {
			newest = ev
		}
	}
	require.NotNil(t, newest, "no %s Event about %s %s/%s", reason, kind, namespace, name)
	return newest
}

// requireFastAnswer checks that the CLI, run at start, returned at
// returned within 15 seconds of the controller's Event ev (or of its own
// start, for an Event that came before it).
func requireFastAnswer(t *testing.T, ev *eventsv1.Event, start, returned time.Time) {
	t.Helper()
	from := waitEventTime(ev)
	if from.Before(start) {
		from = start
	}
	assert.Less(t, returned.Sub(from), 15*time.Second, "the CLI returned %s after the Event %s", returned.Sub(from), ev.Reason)
}

// TestAuthenticateNoAPIServerURL: a provider whose controller knows no URL
// for its API server (no kube-public/cluster-info, no --api-server-url).
// authenticate ends at its APIServerURLUnknown Event with a
// *BlockedError, the Event's whole note and the fix, never the CSR
// signer's; so does a second run, on the Event that came before it.
func TestAuthenticateNoAPIServerURL(t *testing.T) {
	ctx := testContext(t)
	consumerID, providerID, ns, args := pairIDs(t, ctx)
	startControllers(t, ctx, consumerID, providerID, ns, controllers.ProviderConfig{}) // no Endpoint
	tenantNS := clusterid.TenantNamespace(consumerID)
	for run := 1; run <= 2; run++ {
		start := time.Now()
		r, err := cliErr(t, nil, args("authenticate", "--timeout", "2m")...)
		returned := time.Now()
		var blocked *BlockedError
		require.ErrorAs(t, err, &blocked, r.stderr)
		require.ErrorIs(t, err, errBlocked)
		assert.Equal(t, contract.ReasonAPIServerURLUnknown, blocked.Reason)
		assert.Equal(t, providerRole, blocked.Role)
		assert.Equal(t, exitError, r.code)
		ev := newestEvent(t, ctx, providerEnv, tenantNS, "Tenant", consumerID, contract.ReasonAPIServerURLUnknown)
		assert.Equal(t, ev.Note, blocked.Note)
		assert.Contains(t, r.stderr, ev.Note, "the whole note")
		assert.Contains(t, r.stderr, "--api-server-url", "the fix")
		assert.NotContains(t, r.stderr, "CertificateSigningRequests", "no CSR waits")
		assert.Contains(t, r.stderr, " INFO  Waiting for the provider's controller to accept the Tenant\n")
		requireFastAnswer(t, ev, start, returned)
		t.Logf("run %d: %s\n%s", run, returned.Sub(start).Round(time.Millisecond), r.stderr)
	}
}

// TestAuthenticatePeerRoleMissing: a provider without the ClusterRole
// consumers are bound to. authenticate ends at the controller's
// PeerRoleMissing Event with a *BlockedError, the whole note and the fix;
// once the roles are installed, authenticate run again goes through,
// though the Event of the first run is still the newest.
func TestAuthenticatePeerRoleMissing(t *testing.T) {
	ctx := testContext(t)
	consumerID, providerID, ns, args := pairIDs(t, ctx)
	t.Cleanup(func() { require.NoError(t, rbac.Install(context.Background(), kube.NewRBAC(providerEnv.client))) })
	require.NoError(t, providerEnv.client.RbacV1().ClusterRoles().Delete(ctx, rbac.ControlPlaneClusterRoleName, metav1.DeleteOptions{}))
	startControllers(t, ctx, consumerID, providerID, ns, controllers.ProviderConfig{Endpoint: testEndpoint()})

	start := time.Now()
	r, err := cliErr(t, nil, args("authenticate", "--timeout", "2m")...)
	returned := time.Now()
	var blocked *BlockedError
	require.ErrorAs(t, err, &blocked, r.stderr)
	require.ErrorIs(t, err, errBlocked)
	assert.Equal(t, contract.ReasonPeerRoleMissing, blocked.Reason)
	ev := newestEvent(t, ctx, providerEnv, clusterid.TenantNamespace(consumerID), "Tenant", consumerID, contract.ReasonPeerRoleMissing)
	assert.Contains(t, r.stderr, ev.Note, "the whole note")
	assert.Contains(t, ev.Note, "kubepact install roles", "the Event names the fix")
	assert.Contains(t, r.stderr, "kubectl apply -k config/roles")
	assert.NotContains(t, r.stderr, "CertificateSigningRequests")
	requireFastAnswer(t, ev, start, returned)
	t.Logf("refused in %s\n%s", returned.Sub(start).Round(time.Millisecond), r.stderr)

	require.NoError(t, rbac.Install(ctx, kube.NewRBAC(providerEnv.client)))
	start = time.Now()
	r, err = cliErr(t, nil, args("authenticate", "--timeout", "2m")...)
	require.NoError(t, err, r.stderr)
	t.Logf("with the roles installed: authenticated in %s", time.Since(start).Round(time.Millisecond))
	_, err = cliErr(t, nil, args("unauthenticate")...)
	require.NoError(t, err)
}

// startLeaseHolder runs on a cluster a manager that holds
// kubepact-controller's Lease, renewed every second for leaseDuration, and
// answers nothing. kill stops it as kill -9 would: the Lease is not
// released and runs out. The Lease is deleted when the test ends.
func startLeaseHolder(t *testing.T, cfg *rest.Config, leaseDuration time.Duration) (kill func()) {
	t.Helper()
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	renew, retry := leaseDuration*3/5, time.Second
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                  scheme,
		Logger:                  logr.Discard(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        kubepactLease,
		LeaderElectionNamespace: metav1.NamespaceSystem,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renew,
		RetryPeriod:             &retry,
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	select {
	case <-mgr.Elected():
	case <-time.After(time.Minute):
		t.Fatal("the manager was not elected within a minute")
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(func() {
		kill()
		cs, err := kube.NewClientset(cfg, nil)
		if err == nil {
			_ = cs.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(context.Background(), kubepactLease, metav1.DeleteOptions{})
		}
	})
	return kill
}

// cliAsync runs the CLI in-process under ctx, in a goroutine; stderr is
// safe to read meanwhile.
func cliAsync(ctx context.Context, stderr *syncBuffer, args ...string) <-chan asyncResult {
	out := make(chan asyncResult, 1)
	go func() {
		var stdout strings.Builder
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr}
		cmd, err := execute(ctx, e, args)
		code := report(e, cmd, err)
		out <- asyncResult{code: code, stdout: stdout.String(), err: err, at: time.Now()}
	}()
	return out
}

type asyncResult struct {
	code   int
	stdout string
	err    error
	at     time.Time
}

// TestAuthenticateControllerKilled: the provider's controller stops, as
// with kill -9, once the CLI waits for it. The wait ends within 15 seconds
// of its Lease running out, by the API server's clock, with a
// *ControllerGoneError that names it and the fix.
func TestAuthenticateControllerKilled(t *testing.T) {
	ctx := testContext(t)
	_, _, ns, args := pairIDs(t, ctx)
	const leaseDuration = 5 * time.Second
	kill := startLeaseHolder(t, providerEnv.cluster.AdminConfig(), leaseDuration)
	startLeaseHolder(t, consumerEnv.cluster.AdminConfig(), leaseDuration)
	requireControllers(t, ctx, ns)

	var stderr syncBuffer
	done := cliAsync(ctx, &stderr, args("authenticate", "--timeout", "2m")...)
	// The CLI waits for the provider's controller to issue the nonce.
	require.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "Waiting for the provider's controller to issue the nonce")
	}, time.Minute, 50*time.Millisecond, "the CLI waits for the nonce")
	kill()
	l, err := providerEnv.client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, kubepactLease, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, ptr.Deref(l.Spec.HolderIdentity, ""), "killed, the controller keeps its Lease")
	staleAt := l.Spec.RenewTime.Add(leaseDuration)

	var r asyncResult
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the CLI still waits a minute after the controller was killed:\n%s", stderr.String())
	}
	var gone *ControllerGoneError
	require.ErrorAs(t, r.err, &gone, stderr.String())
	require.ErrorIs(t, r.err, errControllerGone)
	assert.Equal(t, providerRole, gone.Role)
	assert.Equal(t, "Lease "+metav1.NamespaceSystem+"/"+kubepactLease, gone.Where)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, stderr.String(), "Lease "+metav1.NamespaceSystem+"/"+kubepactLease)
	assert.Contains(t, stderr.String(), "once it runs again, run the command again")
	assert.Less(t, r.at.Sub(staleAt), 15*time.Second, "the CLI returned %s after the Lease ran out", r.at.Sub(staleAt))
	t.Logf("returned %s after the Lease ran out\n%s", r.at.Sub(staleAt).Round(time.Millisecond), stderr.String())
}

// TestAuthenticateEarlierRefusal: a refusal recorded before the wait began
// about the object as it still is ends the wait at once, with its whole
// note; one about an earlier incarnation of the object does not.
func TestAuthenticateEarlierRefusal(t *testing.T) {
	ctx := testContext(t)
	consumerID, _, ns, args := pairIDs(t, ctx)
	startLeaseHolder(t, providerEnv.cluster.AdminConfig(), 5*time.Second)
	startLeaseHolder(t, consumerEnv.cluster.AdminConfig(), 5*time.Second)
	requireControllers(t, ctx, ns)

	// An earlier run left the nonce request, and a Liqo provider refused it.
	require.NoError(t, kube.NewNamespaces(providerEnv.client).Ensure(ctx, tenant.Namespace(consumerID)))
	req := nonce.Secret(consumerID, nonce.Entry{})
	req.Data, req.Annotations = nil, nil
	secrets := providerEnv.client.CoreV1().Secrets(req.Namespace)
	s, err := secrets.Create(ctx, req, metav1.CreateOptions{})
	require.NoError(t, err)
	note := "Secret not in tenant namespace: " + strings.Repeat("this note is longer than eighty characters, and is printed whole; ", 2)
	_, err = providerEnv.client.EventsV1().Events(s.Namespace).Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: unique(s.Name)},
		EventTime:           metav1.NowMicro(),
		ReportingController: "liqo.io/noncecreator",
		ReportingInstance:   "liqo-controller-manager-0",
		Action:              "Reconcile",
		Type:                corev1.EventTypeWarning,
		Reason:              liqoWrongNamespace,
		Note:                note,
		Regarding: corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: s.Namespace, Name: s.Name,
			UID: s.UID, ResourceVersion: s.ResourceVersion},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	start := time.Now()
	r, err := cliErr(t, nil, args("authenticate", "--timeout", "2m")...)
	var refused *RefusedError
	require.ErrorAs(t, err, &refused, r.stderr)
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, liqoWrongNamespace, refused.Reason)
	assert.Contains(t, r.stderr, note, "the whole note")
	assert.Less(t, time.Since(start), 15*time.Second)
	t.Logf("refused by the earlier Event in %s", time.Since(start).Round(time.Millisecond))

	// The request made anew: the Event is about another incarnation, and
	// the CLI waits (until its timeout, no controller answering).
	require.NoError(t, secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}))
	_, err = secrets.Create(ctx, req, metav1.CreateOptions{})
	require.NoError(t, err)
	r, err = cliErr(t, nil, args("authenticate", "--timeout", "4s")...)
	var timeout *TimeoutError
	require.ErrorAs(t, err, &timeout, r.stderr)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.As(err, &refused))
	assert.Nil(t, timeout.Last)
	assert.Contains(t, r.stderr, "has not answered")
	assert.NotContains(t, r.stderr, "CertificateSigningRequests")
}

// pendingSigner signs nothing: every request stays pending, as on a
// provider whose kube-controller-manager signs no CertificateSigningRequest.
type pendingSigner struct{}

func (pendingSigner) Sign(context.Context, csr.Request) ([]byte, error) { return nil, csr.ErrPending }

// TestAuthenticateInterrupted: Ctrl-C while authenticate waits for the
// provider's controller to accept the Tenant (its certificate pending)
// ends it with "interrupted", exit status 130, what it left behind and how
// to resume or clean up; in-process, with an *InterruptedError. Its
// timeout, there, does name the CSR signer.
func TestAuthenticateInterrupted(t *testing.T) {
	ctx := testContext(t)
	consumerID, providerID, ns, args := pairIDs(t, ctx)
	startControllers(t, ctx, consumerID, providerID, ns, controllers.ProviderConfig{Endpoint: testEndpoint(), Signer: pendingSigner{}})
	bin := buildCLI(t)
	tenantNS := clusterid.TenantNamespace(consumerID)
	waiting := "Waiting for the provider's controller to accept the Tenant"

	// The timeout names the CSR signer, a CSR pending.
	r, err := cliErr(t, nil, args("authenticate", "--timeout", "6s")...)
	var timeout *TimeoutError
	require.ErrorAs(t, err, &timeout, r.stderr)
	assert.True(t, timeout.CSRPending)
	assert.Contains(t, r.stderr, "signs CertificateSigningRequests")

	// In-process: a signal's cause ends the wait with an *InterruptedError.
	sctx, interrupt := context.WithCancelCause(ctx)
	var stderr syncBuffer
	done := cliAsync(sctx, &stderr, args("authenticate", "--timeout", "2m")...)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), waiting) }, time.Minute, 20*time.Millisecond)
	interrupt(&signalCause{sig: os.Interrupt})
	res := <-done
	var ie *InterruptedError
	require.ErrorAs(t, res.err, &ie, stderr.String())
	require.ErrorIs(t, res.err, errInterrupted)
	assert.Equal(t, "authenticate", ie.Command)
	assert.Equal(t, "the provider's controller to accept the Tenant", ie.Waiting)
	assert.Contains(t, ie.Left, "Tenant "+tenantNS+"/"+consumerID+" on the provider")
	assert.Contains(t, ie.Left, "signed-nonce Secret "+clusterid.TenantNamespace(providerID)+"/"+nonce.SignedSecretName+" on the consumer")
	assert.Equal(t, 130, exitCode(sctx, res.code))

	// As a process: SIGINT.
	cmd := exec.CommandContext(ctx, bin, args("authenticate", "--timeout", "2m")...)
	cmd.Env = testenv.New(t, testenv.Options{})
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var lines []string
	var sent time.Time
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sent.IsZero() && strings.Contains(sc.Text(), waiting) {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			sent = time.Now()
		}
	}
	err = cmd.Wait()
	out := strings.Join(lines, "\n")
	require.False(t, sent.IsZero(), "the CLI never waited for the Tenant:\n%s", out)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	assert.Equal(t, 130, exit.ExitCode(), out)
	assert.Contains(t, out, "kubepact: interrupted authenticate while waiting for the provider's controller to accept the Tenant; left behind: ")
	assert.Contains(t, out, "Tenant "+tenantNS+"/"+consumerID+" on the provider")
	assert.Contains(t, out, "to resume, run the same authenticate command again")
	assert.Contains(t, out, "run unauthenticate with the same flags")
	assert.NotContains(t, out, "raise --timeout")
	t.Logf("exit %d, %s after SIGINT\n%s", exit.ExitCode(), time.Since(sent).Round(time.Millisecond), out)

	// What was left is cleaned as said.
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.NoError(t, err, r.stderr)
}

var (
	buildOnce sync.Once
	builtCLI  string
	buildErr  error
)

// buildCLI builds the kubepact binary once for the package's tests.
func buildCLI(t *testing.T) string {
	t.Helper()
	env := testenv.New(t, testenv.Options{Go: true})
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubepact-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtCLI = filepath.Join(dir, "kubepact")
		build := exec.Command("go", "build", "-o", builtCLI, ".")
		build.Env = env
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr)
	return builtCLI
}

// TestUnauthenticateTwice: unauthenticate of a peering already removed
// exits 0 and says so, as liqoctl does, and so does one whose Identity
// alone is gone; clusters that never peered still fail with errNotPeered.
func TestUnauthenticateTwice(t *testing.T) {
	ctx := testContext(t)
	consumerID, providerID, ns, args := pairIDs(t, ctx)
	startControllers(t, ctx, consumerID, providerID, ns, controllers.ProviderConfig{Endpoint: testEndpoint()})

	_, err := cliErr(t, nil, args("unauthenticate")...)
	require.ErrorIs(t, err, errNotPeered, "never peered")

	r, err := cliErr(t, nil, args("authenticate")...)
	require.NoError(t, err, r.stderr)
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.NoError(t, err, r.stderr)
	for _, extra := range [][]string{nil, {"--local"}} {
		start := time.Now()
		r, err = cliErr(t, nil, args("unauthenticate", extra...)...)
		require.NoError(t, err, r.stderr)
		assert.Equal(t, exitOK, r.code)
		assert.Equal(t, "Consumer "+consumerID+" is no longer authenticated on provider "+providerID+" (its Identity and Tenant were already gone)\n", r.stdout)
		assert.Contains(t, r.stderr, " INFO  Identity "+clusterid.TenantNamespace(providerID)+"/"+identity.ControlPlaneName(providerID)+" already gone on the consumer\n")
		t.Logf("unauthenticate %q again: %s\n%s%s", extra, time.Since(start).Round(time.Millisecond), r.stderr, r.stdout)
	}

	// The Identity alone gone: the Tenant is removed, and the rest said.
	r, err = cliErr(t, nil, args("authenticate")...)
	require.NoError(t, err, r.stderr)
	idNS, idName := clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID)
	require.NoError(t, kube.NewIdentityStore(consumerEnv.typed).Delete(ctx, idNS, idName))
	require.Eventually(t, func() bool {
		_, err := consumerEnv.dynamic.Resource(identitiesResource).Namespace(idNS).Get(ctx, idName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 50*time.Millisecond, "the consumer's controller lets the Identity go")
	r, err = cliErr(t, nil, args("unauthenticate")...)
	require.NoError(t, err, r.stderr)
	assert.Contains(t, r.stderr, " INFO  Identity "+idNS+"/"+idName+" already gone on the consumer\n")
	assert.Contains(t, r.stderr, " INFO  Tenant "+clusterid.TenantNamespace(consumerID)+"/"+consumerID+" removed by the provider's controller\n")
	_, err = providerEnv.dynamic.Resource(tenantsResource).Namespace(clusterid.TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Tenant is gone: %v", err)
	assert.True(t, slices.Contains(strings.Split(r.stdout, "\n"), "Consumer "+consumerID+" is no longer authenticated on provider "+providerID))
}

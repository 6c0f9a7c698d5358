package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	runtimemetrics "runtime/metrics"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// restartTenants is how many Tenants TestRestartAcceptedTenants accepts
// before it restarts the controller; restartIdle is how long it then
// counts the requests of the idle controller. Larger runs are local:
//
//	go test -run TestRestartAcceptedTenants ./cmd/kubepact-controller/ -restart-tenants=200 -restart-idle=3m -v
var (
	restartTenants = flag.Int("restart-tenants", 30, "Tenants accepted before TestRestartAcceptedTenants restarts the controller")
	restartIdle    = flag.Duration("restart-idle", 20*time.Second, "how long TestRestartAcceptedTenants counts the requests of the idle controller")
)

// TestRestartAcceptedTenants runs the controller with the Deployment's
// args, as its ServiceAccount, in a pod's environment, on a cluster of its
// own whose API server keeps an audit log; it accepts -restart-tenants
// Tenants through it, stops it and starts it again. Once the restarted
// controller is ready and its workqueues are empty, the audit log must
// show that the restart made no CertificateSigningRequest and no write
// (the leader election's Lease aside), and at most 2 requests per Tenant
// above what a restart with no Tenant costs. An idle controller then
// writes nothing either. The live heap at 0, a tenth and all of the
// Tenants is logged, per Tenant.
func TestRestartAcceptedTenants(t *testing.T) {
	n := *restartTenants
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+time.Duration(n)*time.Second+*restartIdle)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{Name: "restart", AuditLog: true, ControllerManagerQPS: 100})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	s, err := newSide(ctx, c)
	require.NoError(t, err)
	publishClusterInfo(ctx, t, s.admin, c)
	args, probe := shippedWith(ctx, t, "provider,consumer")
	pod := controllerPod(ctx, t, s, "kubepact-controller-restart")
	audit := &auditLog{path: c.AuditLogPath(), user: controllerUser}
	// The workqueue metrics are the process's: what controllers of earlier
	// tests left in theirs when they stopped stays.
	leftover = queueState(t)

	// A restart with no Tenant: the fixed cost of a start.
	first, _ := startSettled(ctx, t, s, pod, probe, args, 0)
	heap0 := liveHeap()
	first.release()
	empty := measureRestart(ctx, t, s, pod, probe, args, audit, 0)
	t.Logf("restart with 0 Tenants: %d requests (%v), settled in %v", empty.requests.total, empty.requests, empty.settle)

	// Tenants accepted through the running controller, a tenth first.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("cl-restart-%04d", i)
	}
	tenth := max(n/10, 1)
	acceptTenants(ctx, t, s, ids[:tenth])
	waitSettled(ctx, t, queueState(t), 0)
	heapTenth := liveHeap()
	acceptTenants(ctx, t, s, ids[tenth:])
	waitSettled(ctx, t, queueState(t), 0)
	heapAll := liveHeap()
	csrs := allCSRs(ctx, t, s)
	require.GreaterOrEqual(t, csrs, n, "a CSR per Tenant accepted")
	empty.replica.release()

	r := measureRestart(ctx, t, s, pod, probe, args, audit, n)
	heapRestarted := liveHeap()
	t.Logf("restart with %d Tenants: %d requests (%v), settled in %v", n, r.requests.total, r.requests, r.settle)
	t.Logf("live heap: %d KiB with 0 Tenants, %d KiB with %d, %d KiB with %d, %d KiB with %d after the restart: %.1f KiB per Tenant (%.1f after the restart)",
		heap0>>10, heapTenth>>10, tenth, heapAll>>10, n, heapRestarted>>10, n,
		float64(heapAll-heap0)/1024/float64(n), float64(heapRestarted-heap0)/1024/float64(n))

	require.Zero(t, r.requests.counts["create certificatesigningrequests"], "no CSR made on a restart")
	require.Equal(t, csrs, allCSRs(ctx, t, s), "no CSR made on a restart")
	w := writes(r.requests.counts)
	// The consumer role applies the cluster's public-key record at each
	// start, the provider role the enrolment key's: applies that change
	// nothing (each record is as its key is). Taking the Lease records no
	// Event (leaderLock).
	require.LessOrEqual(t, w["patch configmaps"], 2, "the public-key records")
	delete(w, "patch configmaps")
	require.Empty(t, w, "no write on a restart")
	perTenant := float64(r.requests.total-empty.requests.total) / float64(n)
	t.Logf("restart: %.2f requests per Tenant above a restart with none, %.2f per Tenant in all", perTenant, float64(r.requests.total)/float64(n))
	require.LessOrEqual(t, perTenant, 2.0, "requests per Tenant on a restart: %v against %v with no Tenant", r.requests, empty.requests)

	// Idle: nothing changes, and nothing is written.
	from := audit.offset(t)
	start := time.Now()
	time.Sleep(*restartIdle)
	idle := audit.count(t, from, start, time.Now())
	perMinute := float64(idle.total) / restartIdle.Minutes()
	t.Logf("idle with %d Tenants for %v: %d requests (%.1f a minute): %v", n, *restartIdle, idle.total, perMinute, idle)
	require.Empty(t, writes(idle.counts), "no write while idle")

	// A ControlPlane binding someone deleted comes back at its Tenant's
	// next reconcile, as a restart makes: Unchanged finds it missing from
	// the cache, and Accept applies it again.
	r.replica.release()
	bindings := s.admin.RbacV1().RoleBindings(clusterid.TenantNamespace(ids[0]))
	name := rbac.BindingName(rbac.ControlPlaneClusterRoleName)
	require.NoError(t, bindings.Delete(ctx, name, metav1.DeleteOptions{}))
	again, _ := startSettled(ctx, t, s, pod, probe, args, n)
	eventually(t, "the deleted binding applied again", func() bool {
		_, err := bindings.Get(ctx, name, metav1.GetOptions{})
		return err == nil
	})

	// An administrator binds a consumer's user to cluster-admin while the
	// controller is down: the restart does not vouch for its Tenant (a
	// binding other than kubepact's names the consumer), and Accept,
	// judging its privileges, refuses it and deletes its bindings, as the
	// controller's ServiceAccount, under its admission policy.
	again.release()
	granted := ids[1]
	_, err = s.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-grants-" + granted},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: granted}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	startSettled(ctx, t, s, pod, probe, args, n)
	grantedBindings := s.admin.RbacV1().RoleBindings(clusterid.TenantNamespace(granted))
	eventually(t, "the granted consumer's bindings deleted on the restart", func() bool {
		_, err := grantedBindings.Get(ctx, name, metav1.GetOptions{})
		_, cerr := s.admin.RbacV1().ClusterRoleBindings().Get(ctx, rbac.ResourceSliceClusterRoleBindingName(granted), metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(cerr)
	})
	eventually(t, "a ConsumerPrivileged Event", func() bool {
		list, err := s.admin.EventsV1().Events(clusterid.TenantNamespace(granted)).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, e := range list.Items {
			if e.Regarding.Name == granted && e.Reason == contract.ReasonConsumerPrivileged {
				return true
			}
		}
		return false
	})
	_, err = bindings.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "another consumer stays bound")
}

// restart is what a restart of the controller cost.
type restart struct {
	replica  *podController
	requests counted       // of the controller's user
	settle   time.Duration // from the start to ready with empty workqueues
}

// measureRestart starts the controller, waits until it settled with
// tenants Tenants, and returns the requests it made meanwhile.
func measureRestart(ctx context.Context, t *testing.T, s *side, pod *corev1.Pod, probe string, args []string, audit *auditLog, tenants int) restart {
	t.Helper()
	time.Sleep(time.Second) // the stopped controller's last requests, its watches, are logged
	from := audit.offset(t)
	began := time.Now()
	var settled time.Time
	r := restart{}
	r.replica, settled = startSettled(ctx, t, s, pod, probe, args, tenants)
	r.settle = settled.Sub(began)
	// Watches are logged when they end: read what began in the window once
	// the controller stops, which ends them.
	r.replica.release()
	time.Sleep(time.Second)
	got := audit.count(t, from, began, settled)
	r.requests = got
	// Running again for what follows, with requests no longer counted.
	r.replica, _ = startSettled(ctx, t, s, pod, probe, args, tenants)
	return r
}

// startSettled starts the controller and waits until it is ready, leads,
// and has reconciled at least tenants Tenants with its workqueues empty;
// it returns the controller and when it settled.
func startSettled(ctx context.Context, t *testing.T, s *side, pod *corev1.Pod, probe string, args []string, tenants int) (*podController, time.Time) {
	t.Helper()
	base := queueState(t)
	c := startKeepingID(t, s, pod, probe, args)
	eventually(t, "ready", c.ready)
	eventually(t, "leading", c.elected)
	return c, waitSettled(ctx, t, base, tenants)
}

// leftover is the state of the process's workqueues before
// TestRestartAcceptedTenants started its first controller.
var leftover queues

// waitSettled waits until the Tenant controllers of the process reconciled
// at least tenants Tenants since base and every workqueue is as empty as
// before the test, with no worker busy, for a second; it returns when that
// second began.
func waitSettled(ctx context.Context, t *testing.T, base queues, tenants int) time.Time {
	t.Helper()
	quiet := time.Time{}
	for {
		q := queueState(t)
		if q.depth <= leftover.depth && q.active <= leftover.active && q.tenantReconciles-base.tenantReconciles >= float64(tenants) {
			if quiet.IsZero() {
				quiet = time.Now()
			} else if time.Since(quiet) >= time.Second {
				return quiet
			}
		} else {
			quiet = time.Time{}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the workqueues to empty: %v (%+v)", ctx.Err(), q)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// queues is the state of the process's workqueues, from
// controller-runtime's metrics.
type queues struct {
	depth, active    float64
	tenantReconciles float64
}

func queueState(t *testing.T) queues {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	var q queues
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "workqueue_depth":
				q.depth += m.GetGauge().GetValue()
			case "controller_runtime_active_workers":
				q.active += m.GetGauge().GetValue()
			case "controller_runtime_reconcile_total":
				if labels["controller"] == "kubepact-tenant" {
					q.tenantReconciles += m.GetCounter().GetValue()
				}
			}
		}
	}
	return q
}

// liveHeap returns the live heap of this process after a full collection:
// what the controller running in it holds (the test holds no Tenant).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtimemetrics.Read(sample)
	return sample[0].Value.Uint64()
}

// acceptTenants plays, for each of ids, the consumer's side of a handshake
// against the controller on s, eight at once: the tenant namespace, the
// nonce request, and a Tenant signed with a fresh key; it returns once
// every Tenant has a status.
func acceptTenants(ctx context.Context, t *testing.T, s *side, ids []string) {
	t.Helper()
	tenants := kube.NewTenantStore(s.typed)
	work := make(chan string)
	errs := make(chan error, len(ids))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range work {
				errs <- acceptTenant(ctx, s, tenants, id)
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func acceptTenant(ctx context.Context, s *side, tenants *kube.TenantStore, id string) error {
	ns := clusterid.TenantNamespace(id)
	if _, err := s.admin.CoreV1().Namespaces().Create(ctx, tenant.Namespace(id), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := s.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: id},
	}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var n nonce.Nonce
	if err := poll(ctx, func() (bool, error) {
		sec, err := s.admin.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if err != nil || len(sec.Data[nonce.SecretKey]) == 0 {
			return false, nil
		}
		n, err = nonce.Parse(string(sec.Data[nonce.SecretKey]))
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("%s: the nonce: %w", id, err)
	}
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		return err
	}
	tn, err := tenant.Build(id, key, n, nil)
	if err != nil {
		return err
	}
	if _, err := tenants.Apply(ctx, tn); err != nil {
		return err
	}
	return poll(ctx, func() (bool, error) {
		got, err := tenants.Get(ctx, ns, id)
		return err == nil && got.Status.AuthParams != nil, nil
	})
}

// poll calls cond every 100ms until it is true, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allCSRs(ctx context.Context, t *testing.T, s *side) int {
	t.Helper()
	list, err := s.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	return len(list.Items)
}

// writes returns the counts of counts that write, the leader election's
// Lease aside.
func writes(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		verb, resource, _ := strings.Cut(k, " ")
		switch verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if resource == "leases" {
			continue
		}
		// Reviews (access, token, self-subject) are questions, not writes:
		// the API server stores none.
		if strings.HasSuffix(resource, "reviews") {
			continue
		}
		out[k] = v
	}
	return out
}

// auditLog reads the requests of one user from an API server's audit log.
type auditLog struct {
	path string
	user string
}

// offset is the log's current size: where requests logged from now on
// begin.
func (a *auditLog) offset(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(a.path)
	require.NoError(t, err)
	return fi.Size()
}

// counted are requests counted by "verb resource[/subresource]".
type counted struct {
	counts map[string]int
	total  int
}

func (c counted) String() string {
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, c.counts[k])
	}
	return b.String()
}

// count counts the requests of a's user logged from offset that the API
// server received between from and to.
func (a *auditLog) count(t *testing.T, offset int64, from, to time.Time) counted {
	t.Helper()
	f, err := os.Open(a.path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Seek(offset, io.SeekStart)
	require.NoError(t, err)
	c := counted{counts: map[string]int{}}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var ev struct {
			Verb             string                     `json:"verb"`
			User             struct{ Username string }  `json:"user"`
			ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
			Received         metav1.MicroTime           `json:"requestReceivedTimestamp"`
			ObjectRef        *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		require.NoError(t, json.Unmarshal(line, &ev))
		who := ev.User.Username
		if ev.ImpersonatedUser != nil {
			who = ev.ImpersonatedUser.Username
		}
		if who != a.user || ev.Received.Time.Before(from) || ev.Received.Time.After(to) {
			continue
		}
		kind := ev.Verb
		if ev.ObjectRef != nil {
			kind += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				kind += "/" + ev.ObjectRef.Subresource
			}
		}
		c.counts[kind]++
		c.total++
	}
	return c
}

// startKeepingID starts kubepact-controller with args as s's
// ServiceAccount in pod (its downward-API environment) and returns once its
// manager exists, keeping the cluster ID recorded by an earlier start, as a
// restarted pod does; startInPod forgets it first and waits for the probes.
func startKeepingID(t *testing.T, s *side, pod *corev1.Pod, probe string, args []string) *podController {
	t.Helper()
	t.Setenv("POD_NAME", pod.Name)
	t.Setenv("POD_NAMESPACE", pod.Namespace)
	t.Setenv("POD_UID", string(pod.UID))
	ctx, cancel := context.WithCancel(context.Background())
	c := &podController{replica: &replica{cancel: cancel, done: make(chan error, 1)}, pod: pod, probe: probe, logs: &lockedBuffer{}}
	created := make(chan manager.Manager, 1)
	hookMu.Lock()
	managerCreated = func(m manager.Manager) { created <- m }
	go func() { c.done <- run(ctx, args, s.sa, c.logs, c.logs) }()
	select {
	case c.mgr = <-created:
	case err := <-c.done:
		hookMu.Unlock()
		cancel()
		t.Fatalf("kubepact-controller %v: %v", args, err)
	}
	managerCreated = nil
	hookMu.Unlock()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("kubepact-controller %v in %s:\n%s", args, pod.Name, c.logs.String())
		}
		c.release()
	})
	return c
}

// release stops c and lets go of its manager, and so of its caches, for
// the live heap measured next to hold only what runs.
func (c *podController) release() {
	c.stop()
	c.mgr = nil
	c.logs = &lockedBuffer{}
}

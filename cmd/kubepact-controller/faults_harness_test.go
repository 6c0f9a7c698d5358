package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// faultConsumers is how many consumers the fault tests' burst has. The
// default keeps the package's run short; -consumers=200 is the burst the
// figures in docs/scale.md ("Under faults") come from.
var faultConsumers = flag.Int("consumers", 30, "consumers at once in the burst of the fault tests (LeaderKilled, APIServerRestart)")

// The shipped Deployment's leader election timings: its args leave them
// to the binary's defaults, and controller-runtime's RetryPeriod.
const (
	shippedLeaseDuration = 15 * time.Second
	shippedRenewDeadline = 10 * time.Second
	shippedRetryPeriod   = 2 * time.Second
)

// buildShippedBinary builds this kubepact-controller binary, as shipped (no
// race detector), into a directory of t's.
func buildShippedBinary(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubepact-controller")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Env = testenv.New(t, testenv.Options{Go: true})
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "go build ./cmd/kubepact-controller")
	return bin
}

// leaseAcquired is the message client-go's leader election logs (through
// the binary's klog logger) when a replica becomes the leader; its case
// changed across versions.
const leaseAcquired = "successfully acquired lease"

// supervised is one replica of kubepact-controller run as a kubelet runs
// a container with restartPolicy Always: whenever the process exits,
// whatever the reason, it is started again, the first time at once and
// then after a back-off of 10 s, doubling (the kubelet's
// CrashLoopBackOff); the restarts are counted.
type supervised struct {
	name string
	bin  string
	args []string
	env  []string
	logs lockedBuffer

	mu        sync.Mutex
	cmd       *exec.Cmd
	stopping  bool
	restarts  int
	exits     []string    // each exit: its error, and the log line before it
	leadSince time.Time   // when the running process logged leaseAcquired; zero when it did not
	acquired  []time.Time // every leaseAcquired, of every process
	lives     []life      // each process, in start order
	done      chan struct{}
}

// life is when one process of a replica ran: from its start to its exit,
// zero while it runs.
type life struct{ start, end time.Time }

// supervise starts the replica and its supervisor; it is stopped when t
// ends, and its logs are printed if t failed.
func supervise(t *testing.T, name, bin, kubeconfig string, args []string) *supervised {
	t.Helper()
	// The Pod's name, namespace and UID, as the Deployment gives them from
	// the downward API: the same across the restarts of a replica.
	env := testenv.New(t, testenv.Options{Kubeconfig: kubeconfig, Set: []string{
		"POD_NAME=kubepact-controller-" + name, "POD_NAMESPACE=kubepact-system", "POD_UID=" + string(uuid.NewUUID())}})
	s := &supervised{name: name, bin: bin, args: args, env: env, done: make(chan struct{})}
	require.NoError(t, s.start())
	go s.loop()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("replica %s %v (restarts %d, exits %q):\n%s", name, args, s.restartCount(), s.exitList(), s.logs.String())
		}
	})
	return s
}

// start starts a process of the replica. s.mu must not be held.
func (s *supervised) start() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = s.env
	lines := &lineWatcher{on: s.line}
	cmd.Stdout = io.MultiWriter(&s.logs, lines)
	cmd.Stderr = cmd.Stdout
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.leadSince = cmd, time.Time{}
	s.lives = append(s.lives, life{start: time.Now()})
	return nil
}

// loop waits for each process to exit and starts the next one, with the
// kubelet's back-off, until stop.
func (s *supervised) loop() {
	defer close(s.done)
	backoff := time.Duration(0)
	for {
		s.mu.Lock()
		cmd := s.cmd
		s.mu.Unlock()
		err := cmd.Wait()
		s.mu.Lock()
		s.leadSince = time.Time{}
		s.lives[len(s.lives)-1].end = time.Now()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		s.exits = append(s.exits, fmt.Sprintf("%v: %s", err, lastLogLine(s.logs.String())))
		s.restarts++
		s.mu.Unlock()
		time.Sleep(backoff)
		backoff = min(max(2*backoff, 10*time.Second), 5*time.Minute)
		if err := s.start(); err != nil {
			s.mu.Lock()
			s.exits = append(s.exits, "restart: "+err.Error())
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			return
		}
	}
}

// line notes when the running process becomes the leader.
func (s *supervised) line(l string) {
	if !strings.Contains(strings.ToLower(l), leaseAcquired) {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leadSince = now
	s.acquired = append(s.acquired, now)
}

// leading reports whether the running process leads.
func (s *supervised) leading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.leadSince.IsZero()
}

// acquiredAfter returns the first time a process of s became the leader
// after t0, zero if none has.
func (s *supervised) acquiredAfter(t0 time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.acquired {
		if a.After(t0) {
			return a
		}
	}
	return time.Time{}
}

// kill sends SIGKILL to the running process, as a node's failure or the
// OOM killer would; the supervisor restarts it.
func (s *supervised) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Signal(syscall.SIGKILL)
}

// killForGood kills the running process with SIGKILL and starts no other:
// its Pod is gone, as with the node it ran on.
func (s *supervised) killForGood() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	return s.cmd.Process.Signal(syscall.SIGKILL)
}

// stop stops supervising: the running process gets SIGTERM and, 30
// seconds later, SIGKILL.
func (s *supervised) stop() {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.stopping = true
	cmd := s.cmd
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-s.done
	}
}

// processAt returns the index, in start order, of the process of s that
// ran at t, -1 if none did.
func (s *supervised) processAt(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.lives {
		if !t.Before(l.start) && (l.end.IsZero() || !t.After(l.end)) {
			return i
		}
	}
	return -1
}

func (s *supervised) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

func (s *supervised) exitList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.exits)
}

// lastLogLine returns the last non-empty line of out.
func lastLogLine(out string) string {
	out = strings.TrimRight(out, "\n")
	return out[strings.LastIndexByte(out, '\n')+1:]
}

// lineWatcher calls on with every complete line written to it.
type lineWatcher struct {
	on  func(string)
	buf []byte
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.on(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// leaderOf waits for one of replicas to lead and returns it.
func leaderOf(t *testing.T, replicas []*supervised) *supervised {
	t.Helper()
	var leader *supervised
	require.Eventually(t, func() bool {
		for _, r := range replicas {
			if r.leading() {
				leader = r
				return true
			}
		}
		return false
	}, 2*time.Minute, 50*time.Millisecond, "a replica leads")
	return leader
}

// burst drives the provider side of many consumers' handshakes at once,
// as liqoctl does for each (SPEC §7): the tenant namespace, the empty
// nonce Secret, then the Tenant signed with a fresh Ed25519 cluster key,
// and waits for the provider's answers from an informer (no request per
// wait). A consumer retries a step the API server refused or did not
// answer, as an operator re-running liqoctl would, with the same key.
type burst struct {
	admin   *side
	cache   cache.Cache
	tenants *kube.TenantStore

	mu       sync.Mutex
	accepted map[string]time.Time // consumer ID: when its Tenant was seen accepted
	failures map[string]error
}

// newBurst starts the burst's informers (Secrets labelled nonce.SecretLabel,
// Tenants) on s, as its admin.
func newBurst(ctx context.Context, t *testing.T, s *side) *burst {
	t.Helper()
	// The informers log through controller-runtime's logger, which the
	// controllers of this package's other tests set; these have nothing to
	// say that the test does not check.
	ctrl.SetLogger(logr.Discard())
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	nonceSecrets, err := labels.Parse(nonce.SecretLabel)
	require.NoError(t, err)
	c, err := cache.New(s.cluster.AdminConfig(), cache.Options{Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: nonceSecrets}}})
	require.NoError(t, err)
	for _, o := range []client.Object{&corev1.Secret{}, &authv1beta1.Tenant{}} {
		_, err := c.GetInformer(ctx, o)
		require.NoError(t, err)
	}
	go func() { _ = c.Start(ctx) }()
	require.True(t, c.WaitForCacheSync(ctx), "the burst's informers sync")
	return &burst{admin: s, cache: c, tenants: kube.NewTenantStore(s.typed),
		accepted: map[string]time.Time{}, failures: map[string]error{}}
}

// run runs the handshakes of ids at once and returns when each is
// accepted or has failed (ctx ended).
func (b *burst) run(ctx context.Context, ids []string) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if err := b.handshake(ctx, id); err != nil {
				b.mu.Lock()
				b.failures[id] = err
				b.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// handshake plays one consumer's side.
func (b *burst) handshake(ctx context.Context, id string) error {
	ns := clusterid.TenantNamespace(id)
	if err := faultRetry(ctx, func() error {
		_, err := b.admin.admin.CoreV1().Namespaces().Create(ctx, tenant.Namespace(id), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("%s: tenant namespace: %w", id, err)
	}
	if err := faultRetry(ctx, func() error {
		_, err := b.admin.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: id},
		}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("%s: nonce Secret: %w", id, err)
	}
	var n nonce.Nonce
	if err := faultPoll(ctx, func() (bool, error) {
		var s corev1.Secret
		if err := b.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: nonce.SecretName}, &s); err != nil || len(s.Data[nonce.SecretKey]) == 0 {
			return false, nil
		}
		var err error
		n, err = nonce.Parse(string(s.Data[nonce.SecretKey]))
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("%s: waiting for the nonce: %w", id, err)
	}
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		return err
	}
	tn, err := tenant.Build(id, key, n, nil)
	if err != nil {
		return err
	}
	if err := faultRetry(ctx, func() error {
		_, err := b.tenants.Apply(ctx, tn.DeepCopy())
		return err
	}); err != nil {
		return fmt.Errorf("%s: Tenant: %w", id, err)
	}
	if err := faultPoll(ctx, func() (bool, error) {
		var got authv1beta1.Tenant
		err := b.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: id}, &got)
		return err == nil && tenantAccepted(&got), nil
	}); err != nil {
		return fmt.Errorf("%s: waiting for the Tenant's status: %w", id, err)
	}
	b.mu.Lock()
	b.accepted[id] = time.Now()
	b.mu.Unlock()
	return nil
}

// accepted reports whether the provider accepted tn: its status holds the
// issued certificate, the Tenant's terminal state.
func tenantAccepted(tn *authv1beta1.Tenant) bool {
	return tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0
}

// reset forgets the handshakes done so far.
func (b *burst) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.accepted)
	clear(b.failures)
}

// acceptedCount is how many Tenants were seen accepted so far.
func (b *burst) acceptedCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.accepted)
}

// lastAccepted is when the last Tenant was seen accepted.
func (b *burst) lastAccepted() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var last time.Time
	for _, at := range b.accepted {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// whenHalfAccepted calls f once half of n Tenants are accepted.
func (b *burst) whenHalfAccepted(ctx context.Context, n int, f func()) {
	for b.acceptedCount() < (n+1)/2 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	f()
}

// faultRetry calls f until it succeeds, backing off from 100 ms to 2 s, until
// ctx ends.
func faultRetry(ctx context.Context, f func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// faultPoll calls cond every 100 ms until it holds or fails, or ctx ends.
func faultPoll(ctx context.Context, cond func() (bool, error)) error {
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

// faultConsumerIDs returns n cluster IDs named after prefix.
func faultConsumerIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return ids
}

// consumerShape is what the provider holds for one consumer, with the consumer's
// ID written "ID": its Tenants, the Secrets, ConfigMaps and RoleBindings of
// its tenant namespace with their data keys, role and subjects, the
// ClusterRoleBindings naming it, and its CertificateSigningRequests with
// their state. Two consumers whose handshakes both completed cleanly have
// the same consumerShape; one left half-made lacks an object or a key, one done
// twice has an object too many.
type consumerShape []string

// shapes returns the consumerShape of each consumer of ids on s.
func consumerShapes(ctx context.Context, t *testing.T, s *side, ids []string) map[string]consumerShape {
	t.Helper()
	crbs, err := s.admin.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]consumerShape{}
	for _, id := range ids {
		ns := clusterid.TenantNamespace(id)
		anon := func(v string) string { return strings.ReplaceAll(v, id, "ID") }
		var sh consumerShape
		var tenants authv1beta1.TenantList
		require.NoError(t, s.typed.List(ctx, &tenants, client.InNamespace(ns)))
		for _, tn := range tenants.Items {
			sh = append(sh, fmt.Sprintf("tenant %s accepted=%t finalizers=%v", anon(tn.Name), tenantAccepted(&tn), tn.Finalizers))
		}
		secrets, err := s.admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, x := range secrets.Items {
			sh = append(sh, fmt.Sprintf("secret %s keys=%v", anon(x.Name), nonEmptyKeys(x.Data)))
		}
		cms, err := s.admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, x := range cms.Items {
			sh = append(sh, fmt.Sprintf("configmap %s keys=%v", anon(x.Name), slices.Sorted(maps.Keys(x.Data))))
		}
		rbs, err := s.admin.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, x := range rbs.Items {
			sh = append(sh, fmt.Sprintf("rolebinding %s role=%s subjects=%s", anon(x.Name), x.RoleRef.Name, anon(fmt.Sprint(x.Subjects))))
		}
		for _, x := range crbs.Items {
			names := strings.Contains(x.Name, id)
			for _, sub := range x.Subjects {
				names = names || sub.Name == id
			}
			if names {
				sh = append(sh, fmt.Sprintf("clusterrolebinding %s role=%s subjects=%s", anon(x.Name), x.RoleRef.Name, anon(fmt.Sprint(x.Subjects))))
			}
		}
		csrs, err := s.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + id})
		require.NoError(t, err)
		for _, x := range csrs.Items {
			sh = append(sh, fmt.Sprintf("csr signer=%s approved=%t issued=%t", x.Spec.SignerName, csrApproved(&x), len(x.Status.Certificate) > 0))
		}
		sort.Strings(sh)
		out[id] = sh
	}
	return out
}

func nonEmptyKeys(data map[string][]byte) []string {
	var ks []string
	for k, v := range data {
		if len(v) > 0 {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func csrApproved(x *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range x.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// countCSRsOf counts the CertificateSigningRequests of consumer id on s.
func countCSRsOf(sh consumerShape) int {
	n := 0
	for _, l := range sh {
		if strings.HasPrefix(l, "csr ") {
			n++
		}
	}
	return n
}

// faultFigures are the zero goals and timings of one burst under a fault.
type faultFigures struct {
	consumers, accepted, failed int
	stuck                       int            // Tenants without the issued certificate
	csrs                        map[int]int    // CSRs per consumer: consumers with that many
	misshapen                   map[string]int // consumers whose objects differ from the reference, by difference
}

// check compares each consumer's consumerShape with ref's and counts what
// differs.
func (b *burst) check(ctx context.Context, t *testing.T, ref string, ids []string) faultFigures {
	t.Helper()
	all := consumerShapes(ctx, t, b.admin, append([]string{ref}, ids...))
	want := all[ref]
	t.Logf("each consumer's objects, as the reference consumer's are:\n  %s", strings.Join(want, "\n  "))
	f := faultFigures{consumers: len(ids), csrs: map[int]int{}, misshapen: map[string]int{}}
	b.mu.Lock()
	f.accepted, f.failed = len(b.accepted), len(b.failures)
	for id, err := range b.failures {
		t.Errorf("consumer %s: %v", id, err)
	}
	b.mu.Unlock()
	for _, id := range ids {
		got := all[id]
		f.csrs[countCSRsOf(got)]++
		var tn authv1beta1.Tenant
		if err := b.admin.typed.Get(ctx, types.NamespacedName{Namespace: clusterid.TenantNamespace(id), Name: id}, &tn); err != nil || !tenantAccepted(&tn) {
			f.stuck++
		}
		if slices.Equal(got, want) {
			continue
		}
		for _, l := range got {
			if !slices.Contains(want, l) {
				f.misshapen["extra: "+l]++
			}
		}
		for _, l := range want {
			if !slices.Contains(got, l) {
				f.misshapen["missing: "+l]++
			}
		}
		if len(got) != len(want) && f.misshapen["count"] == 0 {
			f.misshapen[fmt.Sprintf("count: %d objects, want %d", len(got), len(want))]++
		}
	}
	return f
}

// requireZeroGoals asserts the zero goals: every handshake completed,
// each with exactly the reference's CSRs, none left half-made or
// duplicated, none stuck.
func requireZeroGoals(t *testing.T, f faultFigures, refCSRs int) {
	t.Helper()
	require.Equal(t, f.consumers, f.accepted, "every handshake completed (0 lost)")
	require.Zero(t, f.stuck, "Tenants without the issued certificate (stuck)")
	require.Equal(t, map[int]int{refCSRs: f.consumers}, f.csrs, "CSRs per consumer: consumers with that many (0 duplicated)")
	require.Empty(t, f.misshapen, "Secrets, ConfigMaps, bindings, Tenants or CSRs that differ from a clean handshake's (0 half-made or duplicated)")
}

// auditRequest is one request of an audit log.
type auditRequest struct {
	Received         time.Time                  `json:"requestReceivedTimestamp"`
	Verb             string                     `json:"verb"`
	RequestURI       string                     `json:"requestURI"`
	User             struct{ Username string }  `json:"user"`
	ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
	ObjectRef        *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// code is the response's HTTP status code, 0 when the request had none.
func (r auditRequest) code() int {
	if r.ResponseStatus == nil {
		return 0
	}
	return r.ResponseStatus.Code
}

// auditSince returns the requests of user received since since, from the
// audit log at path from offset. A watch is logged when it ends.
func auditSince(t *testing.T, path string, offset int64, since time.Time, user string) []auditRequest {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Seek(offset, io.SeekStart)
	require.NoError(t, err)
	var out []auditRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var r auditRequest
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a partial last line
		}
		who := r.User.Username
		if r.ImpersonatedUser != nil {
			who = r.ImpersonatedUser.Username
		}
		if who == user && r.ObjectRef != nil && !r.Received.Before(since) {
			out = append(out, r)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

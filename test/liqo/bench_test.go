package liqo

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	liqoconsts "github.com/liqotech/liqo/pkg/consts"
	"github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	"github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication/forge"
	authutils "github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication/utils"
	tenantnamespace "github.com/liqotech/liqo/pkg/tenantNamespace"

	"github.com/kubepact/kubepact/internal/floor"
)

// burst is how many consumers authenticate at once in BenchmarkProviders,
// and idleRounds how many authenticate one after another on an idle
// provider.
const (
	burst      = 200
	idleRounds = 10
)

// providerResult is what BenchmarkProviders measured of one provider.
type providerResult struct {
	perSecond float64       // handshakes a second, burst consumers at once
	p50, p99  time.Duration // per-consumer latency in the burst
	idleP50   time.Duration // one handshake on an idle provider
	// idleProviderP50 is the part of it from the nonce request to the
	// Tenant's status, the tenant namespace aside.
	idleProviderP50 time.Duration
	// idleAnswerP50 is the part of it spent waiting for the provider's two
	// answers, the nonce and the Tenant's status; the rest is the
	// consumer's own steps (handshakeSteps).
	idleAnswerP50 time.Duration
	// idleNonceP50 and idleAcceptP50 are those two waits apart.
	idleNonceP50, idleAcceptP50 time.Duration
	// idleOwnP50 is the rest: the consumer's own steps, the tenant
	// namespace and the Tenant (handshakeSteps.own).
	idleOwnP50       time.Duration
	requestsPerShake float64 // the provider's API requests per handshake
	// byKind is what those requests were, per handshake, from the audit log:
	// verb and resource.
	byKind map[string]float64
}

// BenchmarkProviders measures Liqo's provider (liqo-controller-manager's
// authentication module) and kubepact-controller with the args it ships,
// each on its own cluster of this suite, on the same machine and in one
// run, the kube-controller-manager at 200 QPS for both. RBAC authorizes
// both controllers' requests (Liqo's user is bound to cluster-admin, as a
// chart binds its ServiceAccount; kubepact-controller runs as its own),
// and each burst starts once the machine is quiet (waitQuiet). Consumers play
// liqoctl's steps with Liqo's own code: the tenant namespace, the nonce
// request and a wait for the nonce, the signature and CSR, the Tenant, and
// a wait for its status.
//
// Reported per provider: handshakes/s and the per-consumer p50 and p99
// with burst consumers at once, the p50 of one handshake on an idle
// provider (measured before either burst, the providers taking turns,
// each once the machine settled after the turn before it), whole, from
// the nonce request on, and of its waits for the provider's two answers
// alone (idle-answers: the nonce, then the Tenant's status; the rest is
// the consumer's own steps, Liqo's code whichever the provider), and the
// provider's API requests per handshake (its client-go
// rest_client_requests_total over the burst, less its idle rate over the
// same time). Then kubepact's figures over Liqo's, and idle-bound: the
// least one idle handshake can take against any provider on this machine,
// over Liqo's idle p50. It is the consumer's own steps (the lesser of the
// two sides' medians) and the least a provider must do to answer, at the
// floor of the kubepact side's API server (package floor, measured after
// the idle handshakes): the nonce written, the CSR round and the status
// written, with no watch delay, no binding and no check. An idle-p50-x
// below idle-bound-x cannot be reached here.
//
// kubepact's provider makes requests for checks Liqo's does not make:
//
//   - 7 SubjectAccessReviews: a consumer ID that names a user already
//     holding permissions (an "admin") is refused before it is signed for.
//   - a read of the revocation record: a drained or revoked consumer is
//     refused until it is readmitted.
//   - a read of the stored Tenant from the API server, not a cache: a
//     Tenant drained a moment ago is refused.
//   - a read of the certificate cache: another key holding a live
//     certificate for the consumer ID is refused.
//
// These are 10 requests per handshake. The nonce request, the tenant
// namespace (whose labels it keeps), the nonce once issued and the
// certificate once signed come from the controller's informers, as
// Liqo's do.
//
//	(cd test/liqo && go test -run '^$' -bench Providers -benchtime 1x)
func BenchmarkProviders(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := benchRuns.Add(1)
	type provider struct {
		name    string
		side    *side
		metrics func(context.Context) (float64, error)
		w       *waiter
		c       *consumers
	}
	providers := []*provider{
		{name: "liqo", side: liqoSide, metrics: liqoSide.requestCount},
		{name: "kubepact", side: kubepactSide, metrics: kubepactSide.requestCount},
	}
	for _, p := range providers {
		var err error
		if p.w, err = newWaiter(ctx, p.side); err != nil {
			b.Fatal(err)
		}
		if p.c, err = newConsumers(p.side); err != nil {
			b.Fatal(err)
		}
	}
	// The idle handshakes come first, the providers taking turns, so that
	// both meet the same machine: neither runs while the other's cluster
	// still settles after its burst. Each waits for the machine to settle
	// after the handshake before it, so that it does not meet the work a
	// handshake leaves the other side's controllers (Liqo's provider goes
	// on writing the consumer's ForeignCluster once the Tenant is
	// answered); the turns alternate, and the first turn, which meets cold
	// caches and connections, is not counted.
	if err := waitQuiet(ctx); err != nil {
		b.Fatal(err)
	}
	idle := map[string][]handshakeSteps{}
	for i := range idleRounds + 1 {
		turn := slices.Clone(providers)
		if i%2 == 1 {
			slices.Reverse(turn)
		}
		for _, p := range turn {
			if err := waitCPU(ctx, settleWindow, settleLimit); err != nil {
				b.Fatal(err)
			}
			st, err := handshake(ctx, p.c, p.w, fmt.Sprintf("cl-%s-%d-idle-%d", p.name, run, i))
			if err != nil {
				b.Fatal(err)
			}
			if i > 0 {
				idle[p.name] = append(idle[p.name], st)
			}
		}
	}

	// The floor of the kubepact side's API server, measured on the machine
	// as quiet as the idle handshakes met it.
	f, err := floor.Measure(ctx, kubepactSide.admin, metav1.NamespaceDefault, 20)
	if err != nil {
		b.Fatal(err)
	}

	results := map[string]providerResult{}
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			var r providerResult
			var err error
			for i := 0; i < b.N; i++ {
				if r, err = measure(ctx, p.side, p.c, p.w, fmt.Sprintf("%s-%d-%d", p.name, run, i), p.metrics); err != nil {
					b.Fatal(err)
				}
			}
			r.setIdle(idle[p.name])
			results[p.name] = r
			b.ReportMetric(r.perSecond, "handshakes/s")
			b.ReportMetric(float64(r.p50.Milliseconds()), "p50-ms")
			b.ReportMetric(float64(r.p99.Milliseconds()), "p99-ms")
			b.ReportMetric(float64(r.idleP50.Milliseconds()), "idle-p50-ms")
			b.ReportMetric(float64(r.idleProviderP50.Microseconds())/1000, "idle-from-nonce-p50-ms")
			b.ReportMetric(float64(r.idleAnswerP50.Microseconds())/1000, "idle-answers-p50-ms")
			b.ReportMetric(float64(r.idleNonceP50.Microseconds())/1000, "idle-nonce-p50-ms")
			b.ReportMetric(float64(r.idleAcceptP50.Microseconds())/1000, "idle-accept-p50-ms")
			b.ReportMetric(r.requestsPerShake, "requests/handshake")
			kinds := slices.Sorted(maps.Keys(r.byKind))
			var line strings.Builder
			for _, k := range kinds {
				fmt.Fprintf(&line, " %s=%.2f", k, r.byKind[k])
			}
			b.Logf("%s's requests per handshake, by verb and resource (audit log):%s", p.name, line.String())
		})
	}
	liqo, okL := results["liqo"]
	kp, okK := results["kubepact"]
	if !okL || !okK {
		return
	}
	b.Run("kubepact-over-liqo", func(b *testing.B) {
		b.ReportMetric(kp.perSecond/liqo.perSecond, "throughput-x")
		b.ReportMetric(float64(kp.p50)/float64(liqo.p50), "p50-x")
		b.ReportMetric(float64(kp.idleP50)/float64(liqo.idleP50), "idle-p50-x")
		b.ReportMetric(float64(kp.idleProviderP50)/float64(liqo.idleProviderP50), "idle-from-nonce-p50-x")
		b.ReportMetric(float64(kp.idleAnswerP50)/float64(liqo.idleAnswerP50), "idle-answers-p50-x")
		b.ReportMetric(kp.requestsPerShake/liqo.requestsPerShake, "requests-x")
		bound := min(kp.idleOwnP50, liqo.idleOwnP50) + 2*f.Write + f.CSRRound
		b.ReportMetric(float64(bound.Microseconds())/1000, "idle-bound-ms")
		b.ReportMetric(float64(bound)/float64(liqo.idleP50), "idle-bound-x")
	})
}

// waitQuiet returns once the machine's CPUs were less than a quarter busy
// over a second, or after a minute and a half: a burst then starts on a
// machine that no other cluster of the suite keeps busy, such as the one
// measured before it, still settling after its own burst.
func waitQuiet(ctx context.Context) error { return waitCPU(ctx, time.Second, 90*time.Second) }

// settleWindow and settleLimit are how an idle handshake waits for the
// machine to settle (waitCPU).
const (
	settleWindow = 250 * time.Millisecond
	settleLimit  = 5 * time.Second
)

// waitCPU returns once the machine's CPUs were less than a quarter busy
// over window, or after limit.
func waitCPU(ctx context.Context, window, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	busy, total, err := cpuTicks()
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		b, t, err := cpuTicks()
		if err != nil {
			return err
		}
		if t > total && float64(b-busy)/float64(t-total) < 0.25 {
			return nil
		}
		busy, total = b, t
	}
	return nil
}

// cpuTicks returns the ticks the machine's CPUs spent busy, and in all,
// from /proc/stat.
func cpuTicks() (busy, total uint64, err error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// benchRuns numbers the runs of BenchmarkProviders in this process, so
// that each names its consumers anew.
var benchRuns atomic.Int32

// setIdle sets r's idle figures from the idle handshakes steps.
func (r *providerResult) setIdle(steps []handshakeSteps) {
	var whole, fromNonce, answers, nonces, accepts, own []time.Duration
	for _, st := range steps {
		whole = append(whole, st.total())
		own = append(own, st.own())
		fromNonce = append(fromNonce, st.nonce+st.tenant+st.accepted)
		answers = append(answers, st.nonce+st.accepted)
		nonces, accepts = append(nonces, st.nonce), append(accepts, st.accepted)
	}
	r.idleP50, r.idleProviderP50, r.idleAnswerP50 = percentile(whole, 50), percentile(fromNonce, 50), percentile(answers, 50)
	r.idleNonceP50, r.idleAcceptP50 = percentile(nonces, 50), percentile(accepts, 50)
	r.idleOwnP50 = percentile(own, 50)
}

// measure runs burst handshakes at once against the provider on s, its
// consumers named after label.
func measure(ctx context.Context, s *side, c *consumers, w *waiter, label string, requests func(context.Context) (float64, error)) (providerResult, error) {
	var r providerResult
	if err := waitQuiet(ctx); err != nil {
		return r, err
	}
	// The provider's background rate (leases, resyncs), to leave out.
	idleFrom, err := auditOffset(s)
	if err != nil {
		return r, err
	}
	before, err := requests(ctx)
	if err != nil {
		return r, err
	}
	time.Sleep(5 * time.Second)
	after, err := requests(ctx)
	if err != nil {
		return r, err
	}
	idleRate := (after - before) / 5
	idleKinds, burstFrom, err := auditCounts(s, idleFrom)
	if err != nil {
		return r, err
	}

	start := time.Now()
	latencies := make([]time.Duration, burst)
	errs := make([]error, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			var st handshakeSteps
			st, errs[i] = handshake(ctx, c, w, fmt.Sprintf("cl-%s-burst-%d", label, i))
			latencies[i] = st.total()
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return r, err
		}
	}
	done, err := requests(ctx)
	if err != nil {
		return r, err
	}
	r.perSecond = float64(burst) / wall.Seconds()
	r.p50, r.p99 = percentile(latencies, 50), percentile(latencies, 99)
	r.requestsPerShake = (done - after - idleRate*wall.Seconds()) / burst
	burstKinds, _, err := auditCounts(s, burstFrom)
	if err != nil {
		return r, err
	}
	r.byKind = map[string]float64{}
	for k, n := range burstKinds {
		if v := (float64(n) - float64(idleKinds[k])/5*wall.Seconds()) / burst; v >= 0.05 {
			r.byKind[k] = v
		}
	}
	return r, nil
}

// consumers are the clients the benchmark's consumers use on a provider's
// cluster. Each consumer stands for a liqoctl of its own, with its own
// client-side rate limit, which a handshake's few requests never reach:
// the clients have none, so that a limit shared by all the consumers of
// the burst does not cap what is measured of the provider.
type consumers struct {
	admin  kubernetes.Interface
	client client.Client
}

func newConsumers(s *side) (*consumers, error) {
	cfg := s.cluster.AdminConfig()
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil // no client-side limit
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &consumers{admin: admin, client: c}, nil
}

// handshakeSteps are how long each part of one consumer's handshake took,
// as the consumer saw it: its own steps (Liqo's code, the same whichever
// the provider) and its waits for the provider's answers.
type handshakeSteps struct {
	// namespace is the tenant namespace, made by Liqo's tenant-namespace
	// manager as liqoctl makes it, with a consistent list of namespaces
	// that may wait for the API server's cache.
	namespace time.Duration
	// nonce is from the nonce request to the nonce (the provider's
	// answer).
	nonce time.Duration
	// tenant is the signature, the CSR and the Tenant's creation.
	tenant time.Duration
	// accepted is from the Tenant created to its status (the provider's
	// answer).
	accepted time.Duration
}

func (s handshakeSteps) total() time.Duration { return s.namespace + s.nonce + s.tenant + s.accepted }

// own is the part of the handshake that is the consumer's own steps, the
// same whichever the provider: the tenant namespace and the Tenant.
func (s handshakeSteps) own() time.Duration { return s.namespace + s.tenant }

// handshake plays liqoctl's provider-side steps for the consumer id, with
// a fresh Ed25519 cluster key, and returns how long each took.
func handshake(ctx context.Context, s *consumers, w *waiter, id string) (st handshakeSteps, err error) {
	start := time.Now()
	consumer := liqov1beta1.ClusterID(id)
	ns, err := tenantnamespace.NewManager(s.admin, scheme).CreateNamespace(ctx, consumer)
	if err != nil {
		return st, fmt.Errorf("%s: tenant namespace: %w", id, err)
	}
	requested := time.Now()
	st.namespace = requested.Sub(start)
	nonceReady := w.expect(w.nonces, ns.Name)
	if err := authutils.EnsureNonceSecret(ctx, s.client, consumer, ns.Name); err != nil {
		return st, fmt.Errorf("%s: %w", id, err)
	}
	var nonce []byte
	select {
	case o := <-nonceReady:
		nonce = o.(*corev1.Secret).Data[liqoconsts.NonceSecretField]
	case <-ctx.Done():
		return st, fmt.Errorf("%s: waiting for the nonce: %w", id, ctx.Err())
	}
	nonced := time.Now()
	st.nonce = nonced.Sub(requested)

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return st, err
	}
	signature, err := authentication.SignNonce(priv, nonce)
	if err != nil {
		return st, err
	}
	csr, err := authentication.GenerateCSRForControlPlane(priv, consumer)
	if err != nil {
		return st, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return st, err
	}
	tenant := forge.TenantForRemoteCluster(consumer, der, csr, signature, &ns.Name, nil)
	accepted := w.expect(w.tenants, ns.Name)
	if err := s.client.Create(ctx, tenant); err != nil {
		return st, fmt.Errorf("%s: Tenant: %w", id, err)
	}
	created := time.Now()
	st.tenant = created.Sub(nonced)
	select {
	case <-accepted:
	case <-ctx.Done():
		return st, fmt.Errorf("%s: waiting for the Tenant's status: %w", id, ctx.Err())
	}
	st.accepted = time.Since(created)
	return st, nil
}

// waiter tells each consumer when its nonce is filled and its Tenant has
// a certificate, from one informer per kind, so that waiting costs the
// provider no request per consumer.
type waiter struct {
	mu      sync.Mutex
	nonces  map[string]chan any // by namespace
	tenants map[string]chan any
}

func newWaiter(ctx context.Context, s *side) (*waiter, error) {
	w := &waiter{nonces: map[string]chan any{}, tenants: map[string]chan any{}}
	c, err := cache.New(s.cluster.AdminConfig(), cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	secrets, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, err
	}
	tenants, err := c.GetInformer(ctx, &liqoauthv1beta1.Tenant{})
	if err != nil {
		return nil, err
	}
	notify := func(m map[string]chan any, ready func(any) bool) func(any) {
		return func(o any) {
			if !ready(o) {
				return
			}
			ns := o.(client.Object).GetNamespace()
			w.mu.Lock()
			ch, ok := m[ns]
			delete(m, ns)
			w.mu.Unlock()
			if ok {
				ch <- o
			}
		}
	}
	nonceFilled := func(o any) bool {
		s, ok := o.(*corev1.Secret)
		return ok && s.Labels[liqoconsts.NonceSecretLabelKey] == "true" && len(s.Data[liqoconsts.NonceSecretField]) > 0
	}
	tenantAccepted := func(o any) bool {
		t, ok := o.(*liqoauthv1beta1.Tenant)
		return ok && t.Status.AuthParams != nil && len(t.Status.AuthParams.SignedCRT) > 0
	}
	for _, reg := range []struct {
		inf   cache.Informer
		on    func(any)
		label string
	}{
		{secrets, notify(w.nonces, nonceFilled), "secrets"},
		{tenants, notify(w.tenants, tenantAccepted), "tenants"},
	} {
		on := reg.on
		if _, err := reg.inf.AddEventHandler(handlerFuncs{on}); err != nil {
			return nil, fmt.Errorf("%s: %w", reg.label, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the benchmark's caches did not sync")
	}
	return w, nil
}

// expect returns the channel that receives the first ready object of m's
// kind in namespace.
func (w *waiter) expect(m map[string]chan any, namespace string) <-chan any {
	ch := make(chan any, 1)
	w.mu.Lock()
	m[namespace] = ch
	w.mu.Unlock()
	return ch
}

// handlerFuncs calls on for every added or updated object.
type handlerFuncs struct{ on func(any) }

func (h handlerFuncs) OnAdd(o any, _ bool) { h.on(o) }
func (h handlerFuncs) OnUpdate(_, o any)   { h.on(o) }
func (h handlerFuncs) OnDelete(any)        {}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// requestCount returns how many API requests the provider's controller made
// so far: the sum of client-go's rest_client_requests_total on its metrics
// endpoint.
func (s *side) requestCount(ctx context.Context) (float64, error) {
	m, err := s.scrape(ctx)
	if err != nil {
		return 0, err
	}
	return m.sum("rest_client_requests_total"), nil
}

// metricsToken returns a token of a ServiceAccount bound to the metrics
// reader role config/ ships, as a Prometheus of the cluster would have.
func metricsToken(ctx context.Context, s *side) (string, error) {
	const ns, name = metav1.NamespaceDefault, "metrics-scraper"
	if _, err := s.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := s.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubepact-controller-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	tr, err := s.admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// auditOffset returns the size of s's audit log: where the next events
// start.
func auditOffset(s *side) (int64, error) {
	fi, err := os.Stat(s.cluster.AuditLogPath())
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// auditCounts counts the requests of s.auditUser in s's audit log from
// offset, by verb and resource ("create rolebindings"), followed by the
// status code for those the API server refused ("create rolebindings
// 409"), and returns where it stopped.
func auditCounts(s *side, offset int64) (map[string]int, int64, error) {
	return auditCountsUntil(s, offset, -1, time.Time{})
}

// auditCountsUntil is auditCounts of the events that start before the
// offset until, or of all of them if until is negative, and of requests
// received from since on.
func auditCountsUntil(s *side, offset, until int64, since time.Time) (map[string]int, int64, error) {
	f, err := os.Open(s.cluster.AuditLogPath())
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, 0, err
	}
	counts := map[string]int{}
	r := bufio.NewReader(f)
	for until < 0 || offset < until {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a partial last line is read next time
		}
		if err != nil {
			return nil, 0, err
		}
		offset += int64(len(line))
		var ev struct {
			Verb             string                     `json:"verb"`
			User             struct{ Username string }  `json:"user"`
			ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
			ObjectRef        *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, 0, err
		}
		who := ev.User.Username
		if ev.ImpersonatedUser != nil {
			who = ev.ImpersonatedUser.Username
		}
		if who != s.auditUser || ev.Received.Before(since) {
			continue
		}
		kind := ev.Verb
		if ev.ObjectRef != nil {
			kind += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				kind += "/" + ev.ObjectRef.Subresource
			}
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
			kind += " " + strconv.Itoa(ev.ResponseStatus.Code)
		}
		counts[kind]++
	}
	return counts, offset, nil
}

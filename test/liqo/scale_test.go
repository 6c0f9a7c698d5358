package liqo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testcluster"
)

// The flags of BenchmarkScale.
var (
	scaleTenants = flag.Int("tenants", 1000, "BenchmarkScale: how many Tenants each provider accepts")
	scaleIdle    = flag.Duration("idle", 10*time.Minute, "BenchmarkScale: how long both providers idle with every Tenant accepted, their requests counted")
)

// scaleParallel is how many consumers BenchmarkScale runs at once on each
// provider while it fills them with Tenants.
const scaleParallel = 16

// BenchmarkScale measures what it costs to run kubepact-controller (the
// shipped args, as its ServiceAccount) and Liqo's liqo-controller-manager
// (as this suite runs it) with many peers: -tenants Tenants (default 1,000)
// accepted through each controller and the CSR API, by consumers that play
// liqoctl's steps with Liqo's code as BenchmarkProviders' do.
//
// It starts two clusters of its own, whose CSR signer issues certificates
// for as long as they ask (up to its default year), so that no
// certificate is re-signed while it runs and the idle figures are those of
// a provider with nothing to do: the suite's clusters issue 5-minute
// certificates, which would have every Tenant re-signed every 100 seconds.
//
// Memory, at 0, a tenth of and all the Tenants: once each controller's
// workqueues are empty and its workers idle, the benchmark waits until the
// controller's Go runtime completes a garbage collection after that moment
// (go_memstats_last_gc_time_seconds; the runtime collects at least every 2
// minutes), then reads the heap that collection found live
// (go_gc_heap_live_bytes, the runtime's /gc/heap/live:bytes) and the
// process's resident memory (VmRSS of /proc/<pid>/status). Both
// controllers are measured that way at the same moments, so their figures
// compare: the live heap is what the controller holds, free of garbage not
// yet collected, and does not depend on GOGC or on when the last
// collection ran; the resident memory also holds what the runtime has not
// yet returned to the kernel. heap-KiB/tenant is kubepact's live heap at
// all the Tenants less the one at none, over -tenants.
//
// Restart, one controller at a time on a quiet machine: the controller is
// stopped (SIGTERM; both release their leadership, if any, on the way out)
// and started again with the same args. restart-settle-s is the time from
// its start until it is ready (its /readyz) and quiet: every workqueue
// empty, no worker busy, no workqueue's adds changing for 2 seconds, and
// some workqueue having taken at least one item per Tenant (its informers
// listed and queued every Tenant). The requests it made until then come
// from the API server's audit log (its user, by verb and resource), less
// the TokenReview and SubjectAccessReview with which kubepact-controller's
// metrics endpoint authenticates the benchmark's scrapes. The audit log
// records a watch when it ends, so the watches the controller opened (and
// the initial lists its informers make through them) are not among them:
// the log line beside gives its clients' own count, watches included.
// restart-writes are its creates, updates, patches and deletes the API
// server accepted, the Lease of its leader election and the reviews
// (which store nothing) aside; restart-csrs are the
// CertificateSigningRequests it created.
//
// Idle: both controllers then idle for -idle (default 10 minutes), their
// metrics unscraped, and their requests are counted from the audit log.
//
// Re-signing: resign-spread-fraction is the width of the window over which
// kubepact re-signs the certificates it issued, as a fraction of their
// lifetime: the largest less the smallest of (csr.RenewAt - NotBefore) /
// (NotAfter - NotBefore) over every Tenant's certificate.
//
// Liqo's figures are logged (-v), with the share of its requests that are
// about its ForeignClusters and Events; the -x-liqo metrics are kubepact's
// over Liqo's.
//
//	(cd test/liqo && go test -run '^$' -bench Scale -benchtime 1x -timeout 0 -v -tenants 1000 -idle 10m)
func BenchmarkScale(b *testing.B) {
	n := *scaleTenants
	if n < 1 {
		b.Fatalf("-tenants %d: want at least 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Hour)
	defer cancel()
	liqo, kp, err := startScale(ctx, b)
	if err != nil {
		b.Fatal(err)
	}
	type run struct {
		s *side
		c *consumers
		w *waiter
		// heap and rss are the live heap and resident memory in bytes at
		// each of marks.
		heap, rss []float64
		restart   restartResult
		idle      map[string]int
	}
	runs := []*run{{s: liqo}, {s: kp}}
	for _, r := range runs {
		if r.w, err = newWaiter(ctx, r.s); err != nil {
			b.Fatal(err)
		}
		if r.c, err = newConsumers(r.s); err != nil {
			b.Fatal(err)
		}
	}
	both := func(f func(ctx context.Context, r *run) error) error {
		g, ctx := errgroup.WithContext(ctx)
		for _, r := range runs {
			g.Go(func() error { return f(ctx, r) })
		}
		return g.Wait()
	}

	// Fill both providers together, measuring memory at each mark.
	marks := slices.Compact([]int{0, n / 10, n})
	accepted := 0
	for _, mark := range marks {
		added := mark - accepted
		start := time.Now()
		if err := both(func(ctx context.Context, r *run) error {
			return acceptTenants(ctx, r.c, r.w, accepted, mark)
		}); err != nil {
			b.Fatal(err)
		}
		filled := time.Since(start)
		accepted = mark
		if err := both(func(ctx context.Context, r *run) error {
			st, err := r.s.settle(ctx, time.Now(), mark)
			if err != nil {
				return err
			}
			heap, rss, err := r.s.memory(ctx, st.at)
			if err != nil {
				return err
			}
			r.heap, r.rss = append(r.heap, heap), append(r.rss, rss)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d Tenants (%v to accept the last %d on both providers at once): live heap and resident memory in KiB: liqo %.0f, %.0f; kubepact %.0f, %.0f",
			mark, filled.Round(time.Second), added,
			runs[0].heap[len(runs[0].heap)-1]/1024, runs[0].rss[len(runs[0].rss)-1]/1024,
			runs[1].heap[len(runs[1].heap)-1]/1024, runs[1].rss[len(runs[1].rss)-1]/1024)
	}

	lo, hi, certs, err := resignWindow(ctx, kp)
	if err != nil {
		b.Fatal(err)
	}
	if certs != n {
		b.Fatalf("kubepact's Tenants hold %d certificates, want %d", certs, n)
	}
	b.Logf("kubepact re-signs its %d certificates between %.4f and %.4f of their lifetime", certs, lo, hi)

	// Restart one at a time, kubepact first, each on a quiet machine.
	for _, r := range []*run{runs[1], runs[0]} {
		if err := waitQuiet(ctx); err != nil {
			b.Fatal(err)
		}
		if r.restart, err = r.s.restartController(ctx, n); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s restarted with %d Tenants: ready in %v, settled in %v, %d requests (%s), %d writes, %d CSRs created; its clients counted %.0f requests, watches included",
			r.s.name, n, r.restart.ready.Round(time.Millisecond), r.restart.settled.Round(time.Millisecond),
			total(r.restart.kinds), kindLine(r.restart.kinds), writes(r.restart.kinds), r.restart.kinds["create certificatesigningrequests"],
			r.restart.clientRequests)
	}

	// Idle, both at once, their metrics unscraped.
	idle := *scaleIdle
	if err := both(func(ctx context.Context, r *run) error {
		from, err := auditOffset(r.s)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(idle):
		}
		r.idle, _, err = auditCounts(r.s, from)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	perMinute := func(kinds map[string]int) float64 { return float64(total(kinds)) / idle.Minutes() }
	for _, r := range runs {
		b.Logf("%s idle for %v with %d Tenants: %.1f requests a minute (%s)", r.s.name, idle, n, perMinute(r.idle), kindLine(r.idle))
	}
	for _, w := range []struct {
		what  string
		kinds map[string]int
	}{{"restart", runs[0].restart.kinds}, {"idle", runs[0].idle}} {
		b.Logf("liqo, %s: ForeignClusters %.0f%% of its requests, Events %.0f%%, Tenants' status written %.0f%%: together %.0f%%",
			w.what, 100*share(w.kinds, isForeignCluster), 100*share(w.kinds, isEvent), 100*share(w.kinds, isTenantStatus),
			100*share(w.kinds, isLiqoBookkeeping))
	}

	l, k := runs[0], runs[1]
	perTenant := func(v []float64) float64 { return (v[len(v)-1] - v[0]) / float64(n) / 1024 }
	b.ReportMetric(perTenant(k.heap), "heap-KiB/tenant")
	b.ReportMetric(perTenant(k.rss), "rss-KiB/tenant")
	b.ReportMetric(float64(total(k.restart.kinds))/float64(n), "restart-requests/tenant")
	b.ReportMetric(float64(writes(k.restart.kinds)), "restart-writes")
	b.ReportMetric(float64(k.restart.kinds["create certificatesigningrequests"]), "restart-csrs")
	b.ReportMetric(k.restart.ready.Seconds(), "restart-ready-s")
	b.ReportMetric(k.restart.settled.Seconds(), "restart-settle-s")
	b.ReportMetric(perMinute(k.idle), "idle-requests/min")
	b.ReportMetric(hi-lo, "resign-spread-fraction")
	b.ReportMetric(perTenant(l.heap), "liqo-heap-KiB/tenant")
	b.ReportMetric(perTenant(l.rss), "liqo-rss-KiB/tenant")
	b.ReportMetric(float64(total(l.restart.kinds))/float64(n), "liqo-restart-requests/tenant")
	b.ReportMetric(l.restart.settled.Seconds(), "liqo-restart-settle-s")
	b.ReportMetric(perMinute(l.idle), "liqo-idle-requests/min")
	b.ReportMetric(ratio(float64(total(k.restart.kinds)), float64(total(l.restart.kinds))), "restart-requests-x-liqo")
	b.ReportMetric(ratio(k.restart.settled.Seconds(), l.restart.settled.Seconds()), "restart-settle-x-liqo")
	b.ReportMetric(ratio(perMinute(k.idle), perMinute(l.idle)), "idle-requests-x-liqo")
	// Liqo's controller manager, one replica as its chart runs it, elects no
	// leader; kubepact-controller's two replicas do, and renew a Lease every
	// RetryPeriod. Without the Lease, both idle on watch renewals alone.
	b.ReportMetric(perMinute(withoutLeases(k.idle)), "idle-nonlease-requests/min")
	b.ReportMetric(ratio(perMinute(withoutLeases(k.idle)), perMinute(withoutLeases(l.idle))), "idle-nonlease-requests-x-liqo")
}

// ratio is a over b: +Inf where only b is 0, NaN where both are.
func ratio(a, b float64) float64 {
	switch {
	case b != 0:
		return a / b
	case a == 0:
		return math.NaN()
	}
	return math.Inf(1)
}

// startScale starts two clusters for BenchmarkScale, their CSR signer at its
// default longest lifetime, then Liqo on one and kubepact on the other as
// the suite does. Everything stops when b ends.
func startScale(ctx context.Context, b *testing.B) (liqo, kp *side, err error) {
	dir, err := os.MkdirTemp("", "kubepact-liqo-scale-")
	if err != nil {
		return nil, nil, err
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{
		NoPeerRoles:          true,
		ControllerManagerQPS: 200,
		AuditLog:             true,
	}, "scale-liqo", "scale-kubepact")
	if err != nil {
		return nil, nil, err
	}
	b.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	liqo, kp = &side{name: "liqo", cluster: clusters[0]}, &side{name: "kubepact", cluster: clusters[1]}
	for _, s := range []*side{liqo, kp} {
		b.Cleanup(func() {
			if b.Failed() {
				for _, p := range s.procs {
					b.Logf("--- scale %s/%s, last lines:\n%s", s.name, p.name, p.tail(40))
				}
			}
			s.stop()
		})
		if err := s.connect(dir); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return startLiqo(gctx, liqo) })
	g.Go(func() error { return startKubepact(gctx, kp) })
	return liqo, kp, g.Wait()
}

// acceptTenants runs the handshakes of the consumers numbered from to to,
// scaleParallel at a time.
func acceptTenants(ctx context.Context, c *consumers, w *waiter, from, to int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(scaleParallel)
	for i := from; i < to; i++ {
		g.Go(func() error {
			_, err := handshake(ctx, c, w, fmt.Sprintf("cl-scale-%d", i))
			return err
		})
	}
	return g.Wait()
}

// settled is when a controller was found quiet.
type settled struct {
	at time.Time
	// ready is when /readyz first answered 200.
	ready time.Time
	// auditOffset is the size of the audit log then.
	auditOffset int64
	// clientRequests is the sum of the controller's
	// rest_client_requests_total then: every request its clients made,
	// the watches still open included.
	clientRequests float64
}

// quietScrapes is how many scrapes, 250ms apart, a controller's workqueues
// must stay still for it to count as settled.
const quietScrapes = 8

// settle returns once s's controller, running since start, is ready and
// quiet: every workqueue empty and no worker busy, with some workqueue that
// took at least tenants items, for quietScrapes scrapes in a row in which
// no workqueue took anything more. It returns the first of those scrapes.
func (s *side) settle(ctx context.Context, start time.Time, tenants int) (settled, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var st settled
	var prev map[string]float64
	quiet := 0
	var lastErr error
	for {
		now := time.Now()
		if st.ready.IsZero() && s.controller.ready(ctx) {
			st.ready = now
		}
		offset, err := auditOffset(s)
		if err != nil {
			return st, err
		}
		m, err := s.scrape(ctx)
		switch {
		case err != nil:
			lastErr, quiet = err, 0
		case !st.ready.IsZero():
			adds := m.byLabel("workqueue_adds_total", "name")
			still := m.sum("workqueue_depth") == 0 && m.sum("controller_runtime_active_workers") == 0 &&
				slices.Max(append(slices.Collect(maps.Values(adds)), 0)) >= float64(tenants) && maps.Equal(adds, prev)
			prev = adds
			if !still {
				quiet = 0
				break
			}
			if quiet == 0 {
				st.at, st.auditOffset, st.clientRequests = now, offset, m.sum("rest_client_requests_total")
			}
			if quiet++; quiet == quietScrapes {
				if st.at.Before(start) {
					st.at = start
				}
				return st, nil
			}
		}
		select {
		case <-s.controller.proc.done:
			return st, fmt.Errorf("%s exited (%v):\n%s", s.controller.proc.name, s.controller.proc.err, s.controller.proc.tail(40))
		case <-ctx.Done():
			return st, fmt.Errorf("%s did not settle: %w", s.controller.name, errors.Join(ctx.Err(), lastErr))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ready reports whether the controller's /readyz answers 200.
func (c *controllerRun) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.probe+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// memory returns the live heap and the resident memory of s's controller,
// in bytes, once its Go runtime completed a garbage collection after since.
func (s *side) memory(ctx context.Context, since time.Time) (heap, rss float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	after := float64(since.UnixNano()) / 1e9
	for {
		m, err := s.scrape(ctx)
		if err != nil {
			return 0, 0, err
		}
		if m.sum("go_memstats_last_gc_time_seconds") > after {
			if _, ok := m["go_gc_heap_live_bytes"]; !ok {
				return 0, 0, fmt.Errorf("%s exports no go_gc_heap_live_bytes", s.controller.name)
			}
			rss, err := residentBytes(s.controller.proc.cmd.Process.Pid)
			return m.sum("go_gc_heap_live_bytes"), rss, err
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("%s ran no garbage collection: %w", s.controller.name, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// residentBytes returns the resident memory of the process pid: VmRSS in
// /proc/<pid>/status.
func residentBytes(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kib * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// restartResult is what a restart of a controller cost.
type restartResult struct {
	// ready and settled are from its start until it was ready, and until
	// it was quiet (side.settle).
	ready, settled time.Duration
	// kinds are its requests until it was quiet, by verb and resource,
	// from the audit log, which records a watch once it ends: the watches
	// it opened, its informers' initial lists among them when they list
	// by watching, are not counted.
	kinds map[string]int
	// clientRequests are the requests its clients counted until then,
	// the watches opened included.
	clientRequests float64
}

// restartController stops s's controller, starts it again as it first ran,
// holding tenants Tenants, and measures it until it is quiet.
func (s *side) restartController(ctx context.Context, tenants int) (restartResult, error) {
	var r restartResult
	s.controller.proc.stop()
	from, err := auditOffset(s)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if err := s.controller.start(s); err != nil {
		return r, err
	}
	st, err := s.settle(ctx, start, tenants)
	if err != nil {
		return r, err
	}
	r.ready, r.settled, r.clientRequests = st.ready.Sub(start), st.at.Sub(start), st.clientRequests
	// The watches of the process stopped end as it exits, and may be
	// logged after from: they are not the new process's requests.
	if r.kinds, _, err = auditCountsUntil(s, from, st.auditOffset, start); err != nil {
		return r, err
	}
	if s.metricsToken != "" {
		lessScrapeAuthentication(r.kinds, r.settled)
	}
	return r, nil
}

// lessScrapeAuthentication removes from kinds the requests with which
// kubepact-controller's metrics endpoint authenticated the benchmark's
// scrapes over window: a TokenReview for the token, cached for a minute,
// and a SubjectAccessReview for the path, cached for 5 minutes
// (controller-runtime's filters.WithAuthenticationAndAuthorization). The
// controller makes no other TokenReview.
func lessScrapeAuthentication(kinds map[string]int, window time.Duration) {
	const tr, sar = "create tokenreviews", "create subjectaccessreviews"
	if kinds[tr] == 0 {
		return
	}
	delete(kinds, tr)
	kinds[sar] -= min(kinds[sar], int(window/(5*time.Minute))+1)
	if kinds[sar] == 0 {
		delete(kinds, sar)
	}
}

// total is the number of requests of kinds.
// withoutLeases returns kinds without the requests on Leases.
func withoutLeases(kinds map[string]int) map[string]int {
	out := make(map[string]int, len(kinds))
	for k, v := range kinds {
		if _, resource, _ := strings.Cut(k, " "); resource != "leases" && !strings.HasPrefix(resource, "leases ") {
			out[k] = v
		}
	}
	return out
}

func total(kinds map[string]int) int {
	n := 0
	for _, v := range kinds {
		n += v
	}
	return n
}

// writes is the number of requests of kinds that wrote an object: creates,
// updates, patches and deletes the API server did not refuse, but for
// those of the leader election's Lease and for reviews, which store
// nothing.
func writes(kinds map[string]int) int {
	n := 0
	for k, v := range kinds {
		verb, resource, _ := strings.Cut(k, " ")
		switch {
		case strings.Contains(resource, " "): // refused: "create rolebindings 409"
		case resource == "leases", strings.HasSuffix(resource, "reviews"):
		case verb == "create", verb == "update", verb == "patch", verb == "delete", verb == "deletecollection":
			n += v
		}
	}
	return n
}

// share is the share of kinds for which is holds, given a kind's verb,
// resource and subresource (its status code aside).
func share(kinds map[string]int, is func(verb, resource, subresource string) bool) float64 {
	n := 0
	for k, v := range kinds {
		verb, rest, _ := strings.Cut(k, " ")
		rest, _, _ = strings.Cut(rest, " ")
		resource, subresource, _ := strings.Cut(rest, "/")
		if is(verb, resource, subresource) {
			n += v
		}
	}
	return ratio(float64(n), float64(total(kinds)))
}

// What Liqo's provider does beyond the handshake, for share.
func isForeignCluster(_, resource, _ string) bool { return resource == "foreignclusters" }
func isEvent(_, resource, _ string) bool          { return resource == "events" }
func isTenantStatus(verb, resource, subresource string) bool {
	return resource == "tenants" && subresource == "status" && verb != "get"
}
func isLiqoBookkeeping(verb, resource, subresource string) bool {
	return isForeignCluster(verb, resource, subresource) || isEvent(verb, resource, subresource) || isTenantStatus(verb, resource, subresource)
}

// kindLine is kinds as "verb resource=n", sorted.
func kindLine(kinds map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, kinds[k]))
	}
	return strings.Join(parts, ", ")
}

// resignWindow returns the least and the greatest point of their lifetime
// at which kubepact re-signs the certificates of s's Tenants
// (csr.RenewAt), and how many certificates there are.
func resignWindow(ctx context.Context, s *side) (lo, hi float64, n int, err error) {
	var tenants liqoauthv1beta1.TenantList
	if err := s.client.List(ctx, &tenants); err != nil {
		return 0, 0, 0, err
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, t := range tenants.Items {
		if t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0 {
			continue
		}
		block, _ := pem.Decode(t.Status.AuthParams.SignedCRT)
		if block == nil {
			return 0, 0, 0, fmt.Errorf("Tenant %s/%s: its certificate is not PEM", t.Namespace, t.Name)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("Tenant %s/%s: %w", t.Namespace, t.Name, err)
		}
		f := float64(csr.RenewAt(cert).Sub(cert.NotBefore)) / float64(cert.NotAfter.Sub(cert.NotBefore))
		lo, hi, n = min(lo, f), max(hi, f), n+1
	}
	return lo, hi, n, nil
}

// controllerMetrics are the metric families of one scrape of a
// controller's metrics endpoint, by name.
type controllerMetrics map[string]*dto.MetricFamily

// scrape reads the metrics of s's provider controller, with its metrics
// token if it has one.
func (s *side) scrape(ctx context.Context) (controllerMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	if s.metricsToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.metricsToken)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", s.metricsURL, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	return controllerMetrics(families), err
}

// metricsClient scrapes the controllers. It keeps its connections, so that
// kubepact-controller's metrics endpoint sees one client.
var metricsClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the controller's self-signed serving certificate; only metrics are read

// sum is the sum of every sample of the counter or gauge name.
func (m controllerMetrics) sum(name string) float64 {
	var v float64
	for _, s := range m[name].GetMetric() {
		v += value(s)
	}
	return v
}

// byLabel is the samples of the counter or gauge name, summed by the value
// of their label.
func (m controllerMetrics) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m[name].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += value(s)
			}
		}
	}
	return out
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	}
	return s.GetUntyped().GetValue()
}

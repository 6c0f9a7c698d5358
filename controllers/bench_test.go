package controllers_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/floor"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// The benchmarks' own clients are not what is measured: their client-side
// limits are far above what they send. The managers keep the limits of
// testcluster's AdminConfig (QPS 100, burst 200), as the tests' do.
const benchQPS, benchBurst = 1000, 2000

// benchSeq numbers the cluster IDs the benchmarks make in one process.
var benchSeq atomic.Int64

// benchID returns a cluster ID no earlier run on these clusters used.
func benchID(prefix string) string {
	return fmt.Sprintf("%s-%x-%d", prefix, time.Now().UnixNano()%0xfffff, benchSeq.Add(1))
}

// benchClients are uncached admin clients with high client-side limits.
type benchClients struct {
	core   kubernetes.Interface
	client client.WithWatch
}

func newBenchClients(tb testing.TB, e *env) benchClients {
	tb.Helper()
	cfg := e.cluster.AdminConfig()
	cfg.QPS, cfg.Burst = benchQPS, benchBurst
	core, err := kubernetes.NewForConfig(cfg)
	require.NoError(tb, err)
	scheme, err := controllers.NewScheme()
	require.NoError(tb, err)
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(tb, err)
	return benchClients{core: core, client: cl}
}

// countingTransport counts the requests a manager sends.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// startBenchManager runs a manager against e as startManager does, counting
// its API requests in requests when it is not nil, and returns once the
// informers of kinds are synced, so that the measured handshake does not
// wait for a cache. With unlimited, the manager's clients have no
// client-side rate limit; else they keep AdminConfig's.
func startBenchManager(tb testing.TB, e *env, requests *atomic.Int64, unlimited bool, setup func(manager.Manager) error, kinds ...client.Object) (stop func()) {
	tb.Helper()
	cfg := e.cluster.AdminConfig()
	if unlimited {
		cfg.QPS = -1 // client-go: no client-side rate limiting
	}
	if requests != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: requests} })
	}
	return runManager(tb, cfg, setup, kinds...)
}

func providerSetup(providerID string, signer csr.Signer, workers int) func(manager.Manager) error {
	return func(mgr manager.Manager) error {
		return controllers.SetupProvider(mgr, controllers.ProviderConfig{
			ClusterID: providerID,
			Endpoint:  provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()},
			Signer:    signer,
			Workers:   workers,
		})
	}
}

var providerKinds = []client.Object{&corev1.Secret{}, &authv1beta1.Tenant{}, &certificatesv1.CertificateSigningRequest{}}

// benchSigner is one way the provider signs the consumers' CSRs.
type benchSigner struct {
	name   string
	signer csr.Signer
}

// benchSigners returns the CSR API (the default) and a local CA the
// provider cluster's API server trusts.
func benchSigners(b *testing.B) []benchSigner {
	ca, key := providerEnv.cluster.SecondClientCA()
	local, err := csr.NewLocalCA(ca, key, nil)
	require.NoError(b, err)
	return []benchSigner{{"CSRAPI", nil}, {"LocalCA", local}}
}

// benchEnsureNamespace creates the tenant namespace for remoteID.
func benchEnsureNamespace(ctx context.Context, tb testing.TB, cs kubernetes.Interface, remoteID string) {
	tb.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, tenant.Namespace(remoteID), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(tb, err)
	}
}

// benchRequestNonce is liqoctl's step 1 for one consumer: its tenant
// namespace and an empty liqo-nonce Secret on the provider.
func benchRequestNonce(ctx context.Context, tb testing.TB, pc benchClients, consumerID string) error {
	benchEnsureNamespace(ctx, tb, pc.core, consumerID)
	_, err := pc.core.CoreV1().Secrets(clusterid.TenantNamespace(consumerID)).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: consumerID}},
	}, metav1.CreateOptions{})
	return err
}

// benchIssueNonces issues the nonces of every consumer at once, as the
// provider providerID, with the library's kube adapters: a provider's
// controller lets only ProviderConfig.Workers handshakes have a nonce and
// no settled Tenant, so a benchmark that holds every nonce before it
// sends any Tenant gets them this way.
func benchIssueNonces(ctx context.Context, tb testing.TB, providerID string, consumerIDs []string) map[string]nonce.Nonce {
	tb.Helper()
	c, err := wire.Connect(providerEnv.cluster.AdminConfig(), nil)
	require.NoError(tb, err)
	p, err := c.Provider(providerID, nil)
	require.NoError(tb, err)
	var mu sync.Mutex
	nonces := make(map[string]nonce.Nonce, len(consumerIDs))
	parallel(tb, consumerIDs, func(id string) error {
		n, err := p.IssueNonce(ctx, id)
		mu.Lock()
		nonces[id] = n
		mu.Unlock()
		return err
	})
	return nonces
}

// benchRequestNonces is liqoctl's step 1 for every consumer at once: the
// tenant namespaces and empty liqo-nonce Secrets on the provider; then it
// waits for the nonce reconciler to fill them all.
func benchRequestNonces(ctx context.Context, tb testing.TB, pc benchClients, consumerIDs []string) map[string]nonce.Nonce {
	tb.Helper()
	parallel(tb, consumerIDs, func(id string) error { return benchRequestNonce(ctx, tb, pc, id) })
	want := make(map[string]bool, len(consumerIDs))
	for _, id := range consumerIDs {
		want[id] = true
	}
	nonces := make(map[string]nonce.Nonce, len(consumerIDs))
	require.Eventually(tb, func() bool {
		list, err := pc.core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: nonce.SecretLabel})
		require.NoError(tb, err)
		for _, s := range list.Items {
			id := s.Labels[clusterid.Label]
			if !want[id] || s.Name != nonce.SecretName || len(s.Data[nonce.SecretKey]) == 0 {
				continue
			}
			n, err := nonce.Parse(string(s.Data[nonce.SecretKey]))
			require.NoError(tb, err)
			nonces[id] = n
		}
		return len(nonces) == len(consumerIDs)
	}, 2*time.Minute, 50*time.Millisecond, "every nonce issued")
	return nonces
}

// benchSignNonce is liqoctl's step 2 on the consumer, answered by the
// signed-nonce reconciler.
func benchSignNonce(ctx context.Context, tb testing.TB, cc benchClients, providerID string, n nonce.Nonce) []byte {
	tb.Helper()
	benchEnsureNamespace(ctx, tb, cc.core, providerID)
	ns := clusterid.TenantNamespace(providerID)
	_, err := cc.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text())},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	var sig []byte
	require.Eventually(tb, func() bool {
		s, err := cc.core.CoreV1().Secrets(ns).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
		require.NoError(tb, err)
		sig = s.Data[nonce.SignedSecretKey]
		return len(sig) > 0
	}, 30*time.Second, 10*time.Millisecond, "the signed nonce")
	return sig
}

// parallel calls f for every id, twenty at a time, and fails tb on an error.
func parallel(tb testing.TB, ids []string, f func(id string) error) {
	tb.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(id); err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
}

// discardTenants removes, once the provider's manager is stopped, the
// consumers' Tenants (kubepact's finalizer stripped), their nonce Secrets and
// every CertificateSigningRequest kubepact made, so that the next manager
// does not reconcile them while it is measured.
func discardTenants(ctx context.Context, tb testing.TB, pc benchClients, consumerIDs []string) {
	tb.Helper()
	strip := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	parallel(tb, consumerIDs, func(id string) error {
		t := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: clusterid.TenantNamespace(id), Name: id}}
		if err := pc.client.Delete(ctx, t); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := pc.client.Patch(ctx, t, strip); client.IgnoreNotFound(err) != nil {
			return err
		}
		err := pc.core.CoreV1().Secrets(t.Namespace).Delete(ctx, nonce.SecretName, metav1.DeleteOptions{})
		return client.IgnoreNotFound(err)
	})
	err := pc.core.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: kube.CSRLabel})
	require.NoError(tb, err)
}

// filled reports whether the provider filled the Tenant's status.
func filled(t *authv1beta1.Tenant) bool {
	return t.Status.AuthParams != nil && len(t.Status.AuthParams.SignedCRT) > 0
}

// percentile returns the q-quantile of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[max(i, 0)].Microseconds()) / 1000
}

// BenchmarkTenantToKubeconfig measures, with the controllers running on
// both clusters, the latency of the handshake's object writes from the
// Tenant's creation on the provider to the kubeconfig Secret on the
// consumer: the Tenant reconciler fills the status, the Identity built from
// it is created on the consumer (what liqoctl does), and the Identity
// reconciler writes the kubeconfig Secret, confirming it on the provider.
// The nonce is issued and signed, and the Tenant built, beforehand; every
// iteration is a new pair of cluster IDs with new managers. It reports p50
// and p99 of that latency, p50 of the part until the Tenant's status, and,
// measured on the provider's API server in the same run, the floor of a
// handshake (package floor: 6 writes and 1 CSR round, one after another)
// with p50's ratio to it, p50-x-floor.
//
// The floor is 6 writes and a CSR round one after another, the nonce
// among them, which this benchmark issues beforehand. From the Tenant to
// the kubeconfig Secret, a handshake makes 7 round trips and the CSR round
// one after another, and passes three watches, for these reasons:
//
//   - the Tenant created (the floor's Tenant), then seen by the Tenant
//     reconciler's informer.
//   - the nonce's redemption, written on the nonce Secret as the manager's
//     cache holds it, so that a nonce serves one Tenant: 1 (the floor
//     counts none). Beside it go the admission's reads, from the API
//     server (the stored Tenant and the revocation record: a consumer
//     drained a moment ago is refused), the certificate cache (another
//     key holding the consumer ID is refused) and the 7
//     SubjectAccessReviews (a consumer ID that names a privileged user is
//     refused), asked at once since the Tenant verifies against the nonce
//     the cache holds: 11 requests at once, which on 2 cores cost about
//     three writes.
//   - the CSR created, then approved, then issued, as the manager's
//     informer learns: the floor's CSR round.
//   - the certificate cached, the Tenant recorded, the cluster-wide slice
//     role and the ControlPlane role bound, at once: 1 (the floor's
//     binding). Then the Tenant's status, which hands the certificate out
//     once it is bound: 1 (the floor's).
//   - the status seen through a watch, and the Identity created from it,
//     as liqoctl does (the floor's Identity), then seen by the Identity
//     reconciler's informer.
//   - the new kubeconfig confirmed on the provider, a SelfSubjectReview
//     over a new TLS connection, so that credentials the provider refuses
//     are never written: 1 (the floor counts none). The Identity's apply,
//     the same spec as liqoctl's, goes beside it.
//   - the kubeconfig Secret (the floor's), seen through a watch.
//
// Every write is a server-side apply, which costs the API server more than
// the floor's plain creates.
//
//	go test -run '^$' -bench TenantToKubeconfig -benchtime 20x ./controllers/
func BenchmarkTenantToKubeconfig(b *testing.B) {
	for _, s := range benchSigners(b) {
		b.Run(s.name, func(b *testing.B) { benchTenantToKubeconfig(b, s.signer) })
	}
}

func benchTenantToKubeconfig(b *testing.B, signer csr.Signer) {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	pc, cc := newBenchClients(b, providerEnv), newBenchClients(b, consumerEnv)
	var total, status []time.Duration
	for range b.N {
		providerID, consumerID := benchID("cl-bp"), benchID("cl-bc")
		keyNS := "liqo-" + consumerID
		stopProvider := startBenchManager(b, providerEnv, nil, false, providerSetup(providerID, signer, 0), providerKinds...)
		stopConsumer := startBenchManager(b, consumerEnv, nil, false, func(mgr manager.Manager) error {
			return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID, KeyNamespace: keyNS})
		}, &corev1.Secret{}, &authv1beta1.Identity{})

		n := benchRequestNonces(ctx, b, pc, []string{consumerID})[consumerID]
		sig := benchSignNonce(ctx, b, cc, providerID, n)
		key, err := kube.NewKeyStore(cc.core, keyNS).Get(ctx)
		require.NoError(b, err)
		tn, err := tenant.Build(consumerID, key, n, nil)
		require.NoError(b, err)
		tn.Spec.Signature = sig

		tenantNS, identityNS := clusterid.TenantNamespace(consumerID), clusterid.TenantNamespace(providerID)
		secretName := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
		tw, err := pc.client.Watch(ctx, &authv1beta1.TenantList{}, client.InNamespace(tenantNS),
			client.MatchingFields{"metadata.name": consumerID})
		require.NoError(b, err)
		sw, err := cc.core.CoreV1().Secrets(identityNS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + secretName})
		require.NoError(b, err)
		timeout := time.After(time.Minute)

		b.StartTimer()
		begin := time.Now()
		require.NoError(b, pc.client.Create(ctx, tn))
		var accepted *authv1beta1.Tenant
		for accepted == nil {
			select {
			case ev, ok := <-tw.ResultChan():
				require.True(b, ok, "the Tenant watch ended")
				if t, isTenant := ev.Object.(*authv1beta1.Tenant); isTenant && filled(t) {
					accepted = t
				}
			case <-timeout:
				b.Fatalf("Tenant %s/%s: no status within a minute", tenantNS, consumerID)
			}
		}
		status = append(status, time.Since(begin))
		id, err := identity.Build(providerID, *accepted.Status.AuthParams, &identity.BuildOptions{TenantNamespace: accepted.Status.TenantNamespace})
		require.NoError(b, err)
		require.NoError(b, cc.client.Create(ctx, id))
	waitSecret:
		for {
			select {
			case ev, ok := <-sw.ResultChan():
				require.True(b, ok, "the Secret watch ended")
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					break waitSecret
				}
			case <-timeout:
				b.Fatalf("Secret %s/%s: not written within a minute", identityNS, secretName)
			}
		}
		total = append(total, time.Since(begin))
		b.StopTimer()

		tw.Stop()
		sw.Stop()
		s, err := cc.core.CoreV1().Secrets(identityNS).Get(ctx, secretName, metav1.GetOptions{})
		require.NoError(b, err)
		kc, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
		require.NoError(b, err)
		require.Equal(b, consumerID, kc.User())
		awaitEvents(ctx, b, pc.core, contract.ReasonTenantAccepted, map[string]string{tenantNS: consumerID})
		awaitEvents(ctx, b, cc.core, contract.ReasonIdentityApplied, map[string]string{identityNS: providerID})
		stopConsumer()
		stopProvider()
		discardTenants(ctx, b, pc, []string{consumerID})
		require.NoError(b, client.IgnoreNotFound(cc.client.Delete(ctx, id)))
		for _, name := range []string{secretName, nonce.SignedSecretName} {
			require.NoError(b, client.IgnoreNotFound(cc.core.CoreV1().Secrets(identityNS).Delete(ctx, name, metav1.DeleteOptions{})))
		}
	}
	slices.Sort(total)
	slices.Sort(status)
	b.ReportMetric(percentile(total, 0.5), "p50-ms")
	b.ReportMetric(percentile(total, 0.99), "p99-ms")
	b.ReportMetric(percentile(status, 0.5), "status-p50-ms")
	// The floor of a handshake on the provider's API server, in this run:
	// 6 writes and 1 CSR round, one after another (package floor).
	cs, err := kubernetes.NewForConfig(providerEnv.cluster.AdminConfig())
	require.NoError(b, err)
	f, err := floor.Measure(ctx, cs, metav1.NamespaceDefault, 20)
	require.NoError(b, err)
	b.ReportMetric(float64(f.Handshake.Microseconds())/1000, "floor-ms")
	b.ReportMetric(percentile(total, 0.5)/(float64(f.Handshake.Microseconds())/1000), "p50-x-floor")
}

// atOnce is how many consumers BenchmarkTenantsAtOnce hands to one provider.
const atOnce = 200

// histogram is the running sum and count of a Prometheus histogram.
type histogram struct {
	sum   float64
	count uint64
}

// tenantController reads controller-runtime's metrics of the Tenant
// controller: the time spent in Reconcile and the time requests waited in
// its work queue.
func tenantController(tb testing.TB) (reconcile, queue histogram) {
	tb.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(tb, err)
	read := func(family, label string) histogram {
		var h histogram
		for _, f := range families {
			if f.GetName() != family {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == label && l.GetValue() == controllers.TenantControllerName {
						h.sum += m.GetHistogram().GetSampleSum()
						h.count += m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
		return h
	}
	return read("controller_runtime_reconcile_time_seconds", "controller"), read("workqueue_queue_duration_seconds", "name")
}

// BenchmarkTenantsAtOnce creates the Tenants of 200 consumers at once on one
// provider and waits until every one has its status. The nonces (issued by
// the library before the manager starts, see benchIssueNonces), the
// consumers' keys and the Tenants are made beforehand. Any failed create or
// Warning Event in the consumers' tenant namespaces fails the benchmark. It
// reports the wall time, the throughput, the provider manager's API
// requests per handshake, and, from controller-runtime's metrics, the
// Tenant controller's reconciles per handshake, its mean Reconcile time,
// how many of its workers were busy on average over the wall time, and
// the mean time a request waited in its queue. The provider's manager runs with AdminConfig's client-side limits
// (QPS 100, burst 200 for each of its clients: QPS100) and without any
// (NoClientLimit), to tell the workers' limit from the clients', with
// controllers.DefaultWorkers workers and, without client limits, with 8.
//
//	go test -run '^$' -bench TenantsAtOnce -benchtime 1x ./controllers/
func BenchmarkTenantsAtOnce(b *testing.B) {
	for _, s := range benchSigners(b) {
		b.Run(s.name, func(b *testing.B) {
			b.Run("QPS100", func(b *testing.B) { benchTenantsAtOnce(b, s.signer, false, controllers.DefaultWorkers) })
			b.Run("NoClientLimit", func(b *testing.B) { benchTenantsAtOnce(b, s.signer, true, controllers.DefaultWorkers) })
			b.Run("NoClientLimit/Workers8", func(b *testing.B) { benchTenantsAtOnce(b, s.signer, true, 8) })
		})
	}
}

func benchTenantsAtOnce(b *testing.B, signer csr.Signer, unlimited bool, workers int) {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pc := newBenchClients(b, providerEnv)
	var wall time.Duration
	var requests atomic.Int64
	var sent int64
	var restarts int
	var reconciles, queued histogram
	for range b.N {
		providerID := benchID("cl-bp")
		consumerIDs := make([]string, atOnce)
		namespaces := make(map[string]string, atOnce) // tenant namespace → consumer ID
		for i := range consumerIDs {
			consumerIDs[i] = benchID("cl-bc")
			namespaces[clusterid.TenantNamespace(consumerIDs[i])] = consumerIDs[i]
		}
		nonces := benchIssueNonces(ctx, b, providerID, consumerIDs)
		stop := startBenchManager(b, providerEnv, &requests, unlimited, providerSetup(providerID, signer, workers), providerKinds...)
		tenants := make([]*authv1beta1.Tenant, atOnce)
		for i, id := range consumerIDs {
			key, err := keys.Generate(rand.Reader, keys.Ed25519)
			require.NoError(b, err)
			tenants[i], err = tenant.Build(id, key, nonces[id], nil)
			require.NoError(b, err)
		}
		done := make(map[string]bool, atOnce)
		tw := &tenantWatch{cl: pc.client, seen: func(t *authv1beta1.Tenant) {
			if namespaces[t.Namespace] == t.Name && filled(t) {
				done[t.Name] = true
			}
		}}
		ew := &warningWatch{cs: pc.core, seen: func(e *corev1.Event) {
			if namespaces[e.Namespace] != "" {
				b.Fatalf("Warning Event %s about %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.Namespace, e.InvolvedObject.Name, e.Message)
			}
		}}
		tw.restart(ctx, b)
		ew.restart(ctx, b)
		tw.restarts, ew.restarts = 0, 0
		reconcileBefore, queueBefore := tenantController(b)
		requestsBefore := requests.Load()
		timeout := time.After(5 * time.Minute)

		b.StartTimer()
		begin := time.Now()
		created := make(chan error, atOnce)
		for _, tn := range tenants {
			go func() { created <- pc.client.Create(ctx, tn) }()
		}
		for ncreated := 0; ncreated < atOnce || len(done) < atOnce; {
			select {
			case err := <-created:
				require.NoError(b, err, "creating a Tenant")
				ncreated++
			case ev, ok := <-tw.w.ResultChan():
				tw.handle(ctx, b, ev, ok)
			case ev, ok := <-ew.w.ResultChan():
				ew.handle(ctx, b, ev, ok)
			case <-timeout:
				b.Fatalf("%d of %d Tenants have their status after five minutes", len(done), atOnce)
			}
		}
		elapsed := time.Since(begin)
		b.StopTimer()

		wall += elapsed
		sent += requests.Load() - requestsBefore
		reconcileAfter, queueAfter := tenantController(b)
		reconciles.sum += reconcileAfter.sum - reconcileBefore.sum
		reconciles.count += reconcileAfter.count - reconcileBefore.count
		queued.sum += queueAfter.sum - queueBefore.sum
		queued.count += queueAfter.count - queueBefore.count
		restarts += tw.restarts + ew.restarts
		tw.w.Stop()
		ew.w.Stop()
		awaitEvents(ctx, b, pc.core, contract.ReasonTenantAccepted, namespaces)
		stop()
		discardTenants(ctx, b, pc, consumerIDs)
	}
	handshakes := float64(b.N * atOnce)
	if restarts > 0 {
		b.Logf("the API server ended the benchmark's own watches %d times; they started again from a list", restarts)
	}
	b.ReportMetric(0, "failures")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms")
	b.ReportMetric(handshakes/wall.Seconds(), "handshakes/s")
	b.ReportMetric(float64(sent)/handshakes, "provider-requests/handshake")
	b.ReportMetric(float64(reconciles.count)/handshakes, "reconciles/handshake")
	if reconciles.count > 0 {
		b.ReportMetric(1000*reconciles.sum/float64(reconciles.count), "reconcile-ms")
	}
	b.ReportMetric(reconciles.sum/wall.Seconds(), "workers-busy")
	if queued.count > 0 {
		b.ReportMetric(1000*queued.sum/float64(queued.count), "queue-wait-ms")
	}
}

// tenantWatch follows every Tenant of the provider, calling seen for each
// version it sees. The API server ends a watch whose client falls behind, as
// this one may on a loaded machine: it then lists and watches again.
type tenantWatch struct {
	cl       client.WithWatch
	seen     func(*authv1beta1.Tenant)
	w        watch.Interface
	restarts int
}

func (tw *tenantWatch) restart(ctx context.Context, tb testing.TB) {
	tb.Helper()
	if tw.w != nil {
		tw.w.Stop()
	}
	tw.restarts++
	var list authv1beta1.TenantList
	require.NoError(tb, tw.cl.List(ctx, &list))
	for i := range list.Items {
		tw.seen(&list.Items[i])
	}
	var err error
	tw.w, err = tw.cl.Watch(ctx, &authv1beta1.TenantList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	require.NoError(tb, err)
}

func (tw *tenantWatch) handle(ctx context.Context, tb testing.TB, ev watch.Event, ok bool) {
	tb.Helper()
	if !ok || ev.Type == watch.Error {
		tw.restart(ctx, tb)
		return
	}
	if t, isTenant := ev.Object.(*authv1beta1.Tenant); isTenant {
		tw.seen(t)
	}
}

// warningWatch follows the Warning Events of the provider as tenantWatch
// follows its Tenants.
type warningWatch struct {
	cs       kubernetes.Interface
	seen     func(*corev1.Event)
	w        watch.Interface
	restarts int
}

func (ew *warningWatch) restart(ctx context.Context, tb testing.TB) {
	tb.Helper()
	if ew.w != nil {
		ew.w.Stop()
	}
	ew.restarts++
	opts := metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}
	list, err := ew.cs.CoreV1().Events("").List(ctx, opts)
	require.NoError(tb, err)
	for i := range list.Items {
		ew.seen(&list.Items[i])
	}
	opts.ResourceVersion = list.ResourceVersion
	ew.w, err = ew.cs.CoreV1().Events("").Watch(ctx, opts)
	require.NoError(tb, err)
}

func (ew *warningWatch) handle(ctx context.Context, tb testing.TB, ev watch.Event, ok bool) {
	tb.Helper()
	if !ok || ev.Type == watch.Error {
		ew.restart(ctx, tb)
		return
	}
	if e, isEvent := ev.Object.(*corev1.Event); isEvent {
		ew.seen(e)
	}
}

// awaitEvents waits, for at most ten seconds, until an Event of reason is
// written in each of namespaces (its keys), so that stopping a manager does
// not cut its Events off; it fails on none.
func awaitEvents(ctx context.Context, tb testing.TB, cs kubernetes.Interface, reason string, namespaces map[string]string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		require.NoError(tb, err)
		n := 0
		for _, e := range list.Items {
			if namespaces[e.Namespace] != "" {
				n++
			}
		}
		if n >= len(namespaces) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

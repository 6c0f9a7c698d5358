package controllers_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
)

// env is one real cluster and uncached admin clients.
type env struct {
	cluster *testcluster.Cluster
	core    kubernetes.Interface
	client  client.Client
}

var providerEnv, consumerEnv *env

// logger is where the managers log: nowhere, unless KUBEPACT_TEST_LOG is
// set.
var logger = logr.Discard()

// TestMain starts two independent control planes, the provider and the
// consumer, shared by every test of the package. Each test runs its own
// managers against them, one test at a time: a manager reconciles every
// object of its kind in its cluster.
func TestMain(m *testing.M) {
	if os.Getenv("KUBEPACT_TEST_LOG") != "" {
		logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1})
	}
	ctrl.SetLogger(logger)
	// The provider's controller-manager signs for 200 consumers at once in
	// BenchmarkTenantsAtOnce: its default client limit (20 QPS) would cap
	// the CSR API at about 20 signatures a second.
	opts := testcluster.Options{ControllerManagerQPS: 200}
	os.Exit(testcluster.Main(m, 30*time.Minute, opts, newEnv, &providerEnv, &consumerEnv))
}

func newEnv(ctx context.Context, c *testcluster.Cluster) (*env, error) {
	e := &env{cluster: c}
	cfg := c.AdminConfig()
	var err error
	if e.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := kube.InstallCRDs(ctx, cfg); err != nil {
		return nil, err
	}
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	if e.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	return e, nil
}

// startManager runs a manager against e with the reconcilers setup adds,
// until the returned stop is called or the test ends.
func startManager(t *testing.T, e *env, setup func(manager.Manager) error) (stop func()) {
	t.Helper()
	return runManager(t, e.cluster.AdminConfig(), setup)
}

// runManager runs a manager over cfg with the reconcilers setup adds, until
// the returned stop is called or the test ends. With kinds, it returns once
// the informers of kinds are synced.
func runManager(tb testing.TB, cfg *rest.Config, setup func(manager.Manager) error, kinds ...client.Object) (stop func()) {
	tb.Helper()
	scheme, err := controllers.NewScheme()
	require.NoError(tb, err)
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Tests start several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(tb, err)
	require.NoError(tb, setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	for _, k := range kinds {
		_, err := mgr.GetCache().GetInformer(ctx, k)
		require.NoError(tb, err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(tb, err)
		case <-time.After(time.Minute):
			tb.Error("the manager did not stop within a minute")
		}
	}
	tb.Cleanup(stop)
	if len(kinds) > 0 {
		syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
		defer syncCancel()
		require.True(tb, mgr.GetCache().WaitForCacheSync(syncCtx), "the manager's caches synced")
	}
	return stop
}

// ensureNamespace creates the tenant namespace for remoteID on e.
func ensureNamespace(ctx context.Context, t *testing.T, e *env, remoteID string) {
	t.Helper()
	_, err := e.core.CoreV1().Namespaces().Create(ctx, tenant.Namespace(remoteID), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// eventually polls cond every 50 ms until it holds or 30 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 50*time.Millisecond, what)
}

// waitEvent waits for an Event of type and reason about the object
// namespace/name, and returns its note.
func waitEvent(ctx context.Context, t *testing.T, e *env, namespace, name, eventType, reason string) string {
	t.Helper()
	var note string
	eventually(t, fmt.Sprintf("a %s Event %s about %s/%s", eventType, reason, namespace, name), func() bool {
		list, err := e.core.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Type == eventType && ev.Reason == reason {
				note = ev.Note
				return true
			}
		}
		return false
	})
	return note
}

// hasEvent reports whether an Event of reason about namespace/name exists.
func hasEvent(ctx context.Context, t *testing.T, e *env, namespace, name, reason string) bool {
	t.Helper()
	list, err := e.core.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ev := range list.Items {
		if ev.Regarding.Name == name && ev.Reason == reason {
			return true
		}
	}
	return false
}

// secret returns the Secret namespace/name of e, or nil when there is none.
func secret(ctx context.Context, t *testing.T, e *env, namespace, name string) *corev1.Secret {
	t.Helper()
	s, err := e.core.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return s
}

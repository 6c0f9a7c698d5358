package kube_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// TestREADMESnippet runs the README's real-cluster snippet,
// Example_realClusters, as written, on clusters of its own: two fresh ones
// (no CRDs, no peer roles, no cluster IDs) and two whose kubepact
// controllers run under the IDs they recorded, as kubepact-controller
// records them. Each time it prints the consumer's recorded ID and tenant
// namespace; where controllers run, they take the Tenant and the Identity
// the snippet wrote for their own.
func TestREADMESnippet(t *testing.T) {
	t.Run("fresh clusters", func(t *testing.T) {
		ctx := snippetContext(t)
		p, c := startPair(t, testcluster.Options{NoPeerRoles: true}, "fresh-provider", "fresh-consumer")
		// Liqo's chart installed one peer role already: Install creates the
		// others and leaves it as it is.
		liqoRole := rbac.ControlPlaneClusterRole()
		liqoRole.Labels["app.kubernetes.io/managed-by"] = "Helm"
		liqoRole, err := p.client.RbacV1().ClusterRoles().Create(ctx, liqoRole, metav1.CreateOptions{FieldManager: "helm"})
		require.NoError(t, err)

		out := runSnippet(t, p.cluster, c.cluster)
		consumerID := recordedID(t, c.client)
		providerID := recordedID(t, p.client)
		require.Equal(t, consumerID+" in "+clusterid.TenantNamespace(consumerID)+"\n", out)
		require.NotEqual(t, consumerID, providerID)
		for _, e := range []*freshCluster{p, c} {
			_, err := wire.Connect(e.cluster.AdminConfig(), nil)
			require.NoError(t, err, "%s serves the CRDs", e.cluster.Name())
			for _, name := range rbac.PeerRoleNames() {
				_, err := e.client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err, "%s has ClusterRole %s", e.cluster.Name(), name)
			}
		}
		role, err := p.client.RbacV1().ClusterRoles().Get(ctx, liqoRole.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, liqoRole.ResourceVersion, role.ResourceVersion, "Liqo's role is not written")

		// As written, again: the same peering.
		require.Equal(t, out, runSnippet(t, p.cluster, c.cluster))

		// No controller ran: the Tenant carries no finalizer, and the tenant
		// namespace goes when deleted.
		tenants := kube.NewTenantStore(p.typed)
		tn, err := tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		require.Empty(t, tn.Finalizers)
		requireNamespaceDeleted(t, ctx, p.client, clusterid.TenantNamespace(consumerID))
	})

	t.Run("clusters whose controllers run", func(t *testing.T) {
		ctx := snippetContext(t)
		p, c := startPair(t, testcluster.Options{}, "ctl-provider", "ctl-consumer")
		// As config/ installs kubepact: the CRDs and peer roles, then
		// kubepact-controller records a new cluster ID and runs its
		// reconcilers under it.
		var ids [2]string
		for i, e := range []*freshCluster{p, c} {
			require.NoError(t, kube.InstallCRDs(ctx, e.cluster.AdminConfig()))
			id, recorded, err := kube.EnsureClusterID(ctx, e.client, "", nil)
			require.NoError(t, err)
			require.True(t, recorded)
			ids[i] = id
		}
		providerID, consumerID := ids[0], ids[1]
		runControllers(t, p.cluster, func(mgr manager.Manager) error {
			return controllers.SetupProvider(mgr, controllers.ProviderConfig{ClusterID: providerID,
				Endpoint: provider.Endpoint{Server: p.cluster.Host(), CA: p.cluster.CA()}})
		})
		runControllers(t, c.cluster, func(mgr manager.Manager) error {
			return controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: consumerID})
		})

		out := runSnippet(t, p.cluster, c.cluster)
		require.Equal(t, consumerID+" in "+clusterid.TenantNamespace(consumerID)+"\n", out)
		// Each controller accepts what the snippet wrote under its own ID:
		// the provider's records the certificate of the consumer's Tenant,
		// the consumer's the kubeconfig of the provider's Identity, and
		// neither raises a Warning (the consumer's raised InvalidIdentity
		// when the snippet named the clusters itself).
		require.Eventually(t, func() bool {
			return expirationGauge(t, "provider", consumerID) && expirationGauge(t, "consumer", providerID)
		}, 30*time.Second, 100*time.Millisecond, "both controllers took the peering for theirs")
		requireNoWarning(t, ctx, c.client, clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID))
		requireNoWarning(t, ctx, p.client, clusterid.TenantNamespace(consumerID), consumerID)
		tn, err := kube.NewTenantStore(p.typed).Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		require.Contains(t, tn.Finalizers, tenant.Finalizer, "the provider's controller, which cleans up, holds the Tenant")
		// As written, again: the in-process writes keep the controller's
		// finalizer, although they apply the Tenant under the same field
		// manager.
		require.Equal(t, out, runSnippet(t, p.cluster, c.cluster))
		tn, err = kube.NewTenantStore(p.typed).Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		require.Contains(t, tn.Finalizers, tenant.Finalizer)
	})
}

// freshCluster is a cluster a test starts for itself, with admin clients.
type freshCluster struct {
	cluster *testcluster.Cluster
	client  kubernetes.Interface
	typed   client.Client
}

// startPair starts a provider and a consumer cluster with opts, stopped
// when t ends.
func startPair(t *testing.T, opts testcluster.Options, providerName, consumerName string) (p, c *freshCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clusters, err := testcluster.StartAllWith(ctx, opts, providerName, consumerName)
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	pair := make([]*freshCluster, 2)
	for i, cl := range clusters {
		e := &freshCluster{cluster: cl}
		e.client, err = kubernetes.NewForConfig(cl.AdminConfig())
		require.NoError(t, err)
		e.typed, err = kube.NewClient(cl.AdminConfig(), nil)
		require.NoError(t, err)
		pair[i] = e
	}
	return pair[0], pair[1]
}

func snippetContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// runSnippet runs Example_realClusters with PROVIDER_KUBECONFIG and
// CONSUMER_KUBECONFIG naming the admin kubeconfigs of p and c, and returns
// what it printed. It logs how long it took.
func runSnippet(t *testing.T, p, c *testcluster.Cluster) string {
	t.Helper()
	dir := t.TempDir()
	for name, cl := range map[string]*testcluster.Cluster{"PROVIDER_KUBECONFIG": p, "CONSUMER_KUBECONFIG": c} {
		path := filepath.Join(dir, cl.Name()+".kubeconfig")
		require.NoError(t, os.WriteFile(path, cl.AdminKubeconfig(), 0o600))
		t.Setenv(name, path)
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	printed := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		printed <- b
	}()
	start := time.Now()
	func() {
		defer func() { os.Stdout = stdout }()
		Example_realClusters()
	}()
	took := time.Since(start)
	require.NoError(t, w.Close())
	out := <-printed
	t.Logf("the snippet took %v and printed %q", took.Round(time.Millisecond), bytes.TrimSpace(out))
	return string(out)
}

// recordedID returns the cluster ID client's cluster records.
func recordedID(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	id, err := kube.RecordedClusterID(context.Background(), client, "")
	require.NoError(t, err)
	require.NoError(t, clusterid.Validate(id))
	return id
}

var setLogger sync.Once

// runControllers runs kubepact's reconcilers (setup) on cl until t ends.
func runControllers(t *testing.T, cl *testcluster.Cluster, setup func(manager.Manager) error) {
	t.Helper()
	// The manager's clients log through controller-runtime's logger, which
	// is the process's.
	setLogger.Do(func() { ctrl.SetLogger(logr.Discard()) })
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cl.AdminConfig(), manager.Options{
		Scheme:                 scheme,
		Logger:                 logr.Discard(),
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Error("the manager did not stop within a minute")
		}
	})
}

// expirationGauge reports whether the controllers' certificate expiration
// gauge has a series for role and peer: the provider's controller sets it
// when it accepts a Tenant, the consumer's when it applies an Identity.
func expirationGauge(t *testing.T, role, peer string) bool {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "kubepact_certificate_expiration_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["role"] == role && labels["peer"] == peer {
				return true
			}
		}
	}
	return false
}

// requireNoWarning checks that no Warning Event names the object
// namespace/name.
func requireNoWarning(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, name string) {
	t.Helper()
	events, err := client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Type == "Warning" {
			t.Errorf("Warning Event on %s/%s: %s: %s", namespace, name, e.Reason, e.Note)
		}
	}
}

// requireNamespaceDeleted deletes the namespace name, as kubectl delete
// namespace does, and waits for it to be gone, which the namespace
// controller does once every object in it is.
func requireNamespaceDeleted(t *testing.T, ctx context.Context, client kubernetes.Interface, name string) {
	t.Helper()
	start := time.Now()
	require.NoError(t, client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond, "namespace %s deleted", name)
	t.Logf("namespace %s deleted in %v", name, time.Since(start).Round(time.Millisecond))
}

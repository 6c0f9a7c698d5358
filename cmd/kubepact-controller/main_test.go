package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	kustomizepkg "github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// side is one real cluster with an admin client and the controller's
// ServiceAccount config.
type side struct {
	cluster *testcluster.Cluster
	admin   kubernetes.Interface
	dynamic dynamic.Interface
	typed   client.Client
	// sa is the admin config impersonating the ServiceAccount config/
	// grants, so the controllers run with exactly its permissions.
	sa *rest.Config
}

var providerEnv, consumerEnv *side

func TestMain(m *testing.M) {
	// Several controllers run in this one process: their controllers'
	// names repeat.
	tuneManager = func(o *manager.Options) { o.Controller.SkipNameValidation = ptr.To(true) }
	os.Exit(testcluster.Main(m, 10*time.Minute, testcluster.Options{}, newSide, &providerEnv, &consumerEnv, "ctl-provider", "ctl-consumer"))
}

func newSide(ctx context.Context, c *testcluster.Cluster) (*side, error) {
	s := &side{cluster: c}
	var err error
	if s.admin, err = kubernetes.NewForConfig(c.AdminConfig()); err != nil {
		return nil, err
	}
	if s.dynamic, err = dynamic.NewForConfig(c.AdminConfig()); err != nil {
		return nil, err
	}
	if s.typed, err = kube.NewClient(c.AdminConfig(), nil); err != nil {
		return nil, err
	}
	if err := applyKustomization(ctx, s, filepath.Join("..", "..", "config")); err != nil {
		return nil, err
	}
	s.sa = rest.CopyConfig(c.AdminConfig())
	s.sa.QPS, s.sa.Burst = 100, 200
	s.sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:kubepact-system:kubepact-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kubepact-system", "system:authenticated"},
	}
	return s, nil
}

// applyKustomization applies the kustomization in dir as kubectl apply -k
// does: kustomize renders it (kubectl kustomize, so replacements and
// namespaces come out as an operator gets them), and every object is applied
// with server-side apply. It then waits for CRDs to be served.
func applyKustomization(ctx context.Context, s *side, dir string) error {
	objects, err := kustomize(ctx, dir)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(s.admin.Discovery()))
	for _, u := range objects {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset()
			if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
			}
		}
		api := s.dynamic.Resource(m.Resource)
		var ri dynamic.ResourceInterface = api
		if m.Scope.Name() == "namespace" {
			ri = api.Namespace(u.GetNamespace())
		} else {
			u.SetNamespace("") // kustomize may not know a kind is cluster-scoped
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
		if gvk.Kind == "CustomResourceDefinition" {
			mapper.Reset()
		}
	}
	return waitForCRDs(ctx, s)
}

// kustomize renders the kustomization in dir as kubectl apply -k does.
func kustomize(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	return kustomizepkg.Render(ctx, dir)
}

func waitForCRDs(ctx context.Context, s *side) error {
	for {
		_, err := s.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the CRDs: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// replica is one running kubepact-controller.
type replica struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	mgr    manager.Manager
}

var hookMu sync.Mutex

// start runs the controller with args against s, as its ServiceAccount,
// and returns once its manager exists.
func start(t testing.TB, s *side, args ...string) *replica {
	t.Helper()
	forgetClusterID(t, s, args)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan error, 1)}
	created := make(chan manager.Manager, 1)
	hookMu.Lock()
	managerCreated = func(m manager.Manager) { created <- m }
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubepact-controller %v:\n%s", args, logs.String())
		}
	})
	go func() { r.done <- run(ctx, args, s.sa, logs, logs) }()
	select {
	case r.mgr = <-created:
	case err := <-r.done:
		hookMu.Unlock()
		cancel()
		t.Fatalf("kubepact-controller %v: %v", args, err)
	}
	managerCreated = nil
	hookMu.Unlock()
	t.Cleanup(r.stop)
	return r
}

// forgetClusterID deletes the cluster ID recorded on s unless it is the one
// args' --cluster-id names: the tests run controllers of several IDs on one
// cluster, each as a fresh install of its own.
func forgetClusterID(t testing.TB, s *side, args []string) {
	t.Helper()
	var want string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--cluster-id="); ok {
			want = v
		}
	}
	ctx := context.Background()
	cm, err := s.admin.CoreV1().ConfigMaps("liqo").Get(ctx, clusterid.RecordName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		t.Fatal(err)
	case cm.Data[clusterid.RecordKey] == want:
		return
	}
	if err := s.admin.CoreV1().ConfigMaps("liqo").Delete(ctx, cm.Name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

// stop stops the replica and waits for it to end.
func (r *replica) stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 90*time.Second, 50*time.Millisecond, what)
}

// handshake writes objects as liqoctl authenticate does (SPEC §7) and waits
// for the controllers' answers, then checks the kubeconfig on the provider.
func handshake(ctx context.Context, t *testing.T, providerID, consumerID string) {
	t.Helper()
	pns, cns := clusterid.TenantNamespace(consumerID), clusterid.TenantNamespace(providerID)
	for _, c := range []struct {
		s  *side
		ns *corev1.Namespace
	}{{providerEnv, tenant.Namespace(consumerID)}, {consumerEnv, tenant.Namespace(providerID)}} {
		_, err := c.s.admin.CoreV1().Namespaces().Create(ctx, c.ns, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	// 1. The provider's controller fills liqo-nonce.
	n := requestNonce(ctx, t, consumerID)
	// 2. The consumer's controller signs it.
	_, err := consumerEnv.admin.CoreV1().Secrets(cns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text())},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var sig []byte
	eventually(t, "the signed nonce", func() bool {
		s, err := consumerEnv.admin.CoreV1().Secrets(cns).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
		sig = s.Data[nonce.SignedSecretKey]
		return err == nil && len(sig) > 0
	})
	// 3. The Tenant, from the consumer's key, the signed nonce and a CSR.
	key, err := kube.NewKeyStore(consumerEnv.admin, keys.DefaultNamespace).Get(ctx)
	require.NoError(t, err)
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	tn.Spec.Signature = sig
	tenants := kube.NewTenantStore(providerEnv.typed)
	_, err = tenants.Apply(ctx, tn)
	require.NoError(t, err)
	eventually(t, "the Tenant's status", func() bool {
		tn, err = tenants.Get(ctx, pns, consumerID)
		return err == nil && tn.Status.AuthParams != nil
	})
	// 4. The Identity, from the Tenant's status.
	id, err := identity.Build(providerID, *tn.Status.AuthParams, &identity.BuildOptions{TenantNamespace: tn.Status.TenantNamespace})
	require.NoError(t, err)
	ids := kube.NewIdentityStore(consumerEnv.typed)
	_, err = ids.Apply(ctx, id)
	require.NoError(t, err)
	var secretName string
	eventually(t, "the Identity's status", func() bool {
		list, err := ids.List(ctx, cns)
		require.NoError(t, err)
		for _, got := range list {
			if got.Name == id.Name && got.Status.KubeconfigSecretRef != nil {
				secretName = got.Status.KubeconfigSecretRef.Name
				return true
			}
		}
		return false
	})
	s, err := consumerEnv.admin.CoreV1().Secrets(cns).Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	rc, err := cfg.RESTConfig()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	require.NoError(t, err)
	_, err = dyn.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)).Namespace(pns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the kubeconfig works on the provider")
}

// requestNonce creates the empty, labelled liqo-nonce Secret for
// consumerID in its tenant namespace on the provider, as liqoctl does, and
// waits for the provider's controller to fill it.
func requestNonce(ctx context.Context, t *testing.T, consumerID string) nonce.Nonce {
	t.Helper()
	ns := clusterid.TenantNamespace(consumerID)
	_, err := providerEnv.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: consumerID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var n nonce.Nonce
	eventually(t, "the nonce", func() bool {
		s, err := providerEnv.admin.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if err != nil || len(s.Data[nonce.SecretKey]) == 0 {
			return false
		}
		n, err = nonce.Parse(string(s.Data[nonce.SecretKey]))
		require.NoError(t, err)
		return true
	})
	return n
}

// TestController runs kubepact-controller on both clusters with the
// permissions config/ grants its ServiceAccount: two provider replicas
// elect one leader, which alone answers a handshake driven only by object
// writes (one CSR object, one Lease holder); when the leader stops, the
// other takes over and answers the next one. The probes answer.
func TestController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const providerID = "cl-ctl-provider"
	caFile := writeFile(t, providerEnv.cluster.CA())
	probe := freeAddr(t)
	providerArgs := func(probeAddr string) []string {
		return []string{
			"--cluster-id=" + providerID, "--roles=provider",
			"--api-server-url=" + providerEnv.cluster.Host(), "--api-server-ca-file=" + caFile,
			"--leader-election-namespace=kubepact-system",
			"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s",
			"--metrics-bind-address=0", "--health-probe-bind-address=" + probeAddr,
		}
	}
	replicas := []*replica{start(t, providerEnv, providerArgs(probe)...), start(t, providerEnv, providerArgs("0")...)}
	start(t, consumerEnv, "--cluster-id=cl-ctl-consumer", "--roles=consumer", "--leader-election-namespace=kubepact-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")

	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, path, func() bool {
			resp, err := http.Get("http://" + probe + path)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}

	eventually(t, "a leader", func() bool { return replicas[0].elected() || replicas[1].elected() })
	require.False(t, replicas[0].elected() && replicas[1].elected(), "two leaders")
	handshake(ctx, t, providerID, "cl-ctl-consumer")
	lease, err := providerEnv.admin.CoordinationV1().Leases("kubepact-system").Get(ctx, LeaderElectionID, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, *lease.Spec.HolderIdentity)
	csrs, err := providerEnv.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=cl-ctl-consumer"})
	require.NoError(t, err)
	require.Len(t, csrs.Items, 1, "one CSR object: no duplicate work")

	// The leader stops; the other replica takes over.
	leader, other := replicas[0], replicas[1]
	if !leader.elected() {
		leader, other = other, leader
	}
	leader.stop()
	eventually(t, "a new leader", other.elected)
	// A second consumer's Tenant, answered by the new leader: the consumer
	// side is done here, with a key of its own.
	providerHandshake(ctx, t, "cl-ctl-consumer-2")
}

// providerHandshake writes the provider's side of a handshake for
// consumerID, signing as that consumer, and waits for the provider
// controller's nonce and Tenant status.
func providerHandshake(ctx context.Context, t *testing.T, consumerID string) {
	t.Helper()
	ns := clusterid.TenantNamespace(consumerID)
	_, err := providerEnv.admin.CoreV1().Namespaces().Create(ctx, tenant.Namespace(consumerID), metav1.CreateOptions{})
	require.NoError(t, err)
	n := requestNonce(ctx, t, consumerID)
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	tenants := kube.NewTenantStore(providerEnv.typed)
	_, err = tenants.Apply(ctx, tn)
	require.NoError(t, err)
	eventually(t, "the Tenant's status", func() bool {
		tn, err = tenants.Get(ctx, ns, consumerID)
		return err == nil && tn.Status.AuthParams != nil
	})
}

// TestUsage checks the command line's refusals.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--cluster-id=Not_Valid"},
		{"--cluster-id=cl-a", "--roles=observer"},
		{"--cluster-id=cl-a", "--roles=consumer", "--policy=lax"},
		{"--cluster-id=cl-a", "--roles=consumer", "--local-ca-cert-file=ca.crt"},
		{"--cluster-id=cl-a", "--roles=consumer", "extra"},
		{"--cluster-id=cl-a", "--tenant-namespace-pod-security=open"},
		{"--no-such-flag"},
	} {
		err := run(context.Background(), args, &rest.Config{}, io.Discard, io.Discard)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}
	// --help and --version are answers, not errors (main exits 0).
	var stdout, stderr bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"--help"}, &rest.Config{}, &stdout, &stderr), pflag.ErrHelp)
	require.Contains(t, stderr.String(), "--api-server-url")
	require.NoError(t, run(context.Background(), []string{"--version"}, &rest.Config{}, &stdout, io.Discard))
	require.Equal(t, "kubepact-controller "+Version()+"\n", stdout.String())
}

// TestFlagsArePflag: the command line is pflag's, as controller-runtime's
// and Kubernetes' binaries: --help lists long flags with two dashes, zap's
// flags parse beside kubepact's, a bool flag needs no value, and a long
// flag with one dash is refused as a usage error, not read.
func TestFlagsArePflag(t *testing.T) {
	var stderr bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"-h"}, &rest.Config{}, io.Discard, &stderr), pflag.ErrHelp)
	for _, f := range []string{"--api-server-url string", "--leader-elect ", "--default-node-resources name=quantity,...", "--zap-log-level ", "--zap-encoder "} {
		require.Contains(t, stderr.String(), f)
	}
	require.NotContains(t, stderr.String(), "\n  -api-server-url")

	o, err := parse([]string{"--roles=consumer", "--zap-log-level=debug", "--leader-elect", "--workers", "3"}, io.Discard)
	require.NoError(t, err)
	require.NotNil(t, o.zap.Level, "--zap-log-level set the level")
	require.True(t, o.zap.Level.Enabled(-1), "debug (zapcore.DebugLevel, -1) is enabled")
	require.True(t, o.leaderElect)
	require.Equal(t, 3, o.workers)
	o, err = parse([]string{"--leader-elect=false"}, io.Discard)
	require.NoError(t, err)
	require.False(t, o.leaderElect)

	for _, args := range [][]string{{"-api-server-url=https://x"}, {"-roles=consumer"}, {"--zap-log-level=loud"}} {
		_, err := parse(args, io.Discard)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}
}

package helm

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// wait bounds each wait of the package's tests for the controller: to be
// ready, to answer a step of the handshake.
const wait = time.Minute

// controller is a kubepact-controller running, as its Deployment would, on
// the provider.
type controller struct {
	cmd    *exec.Cmd
	probe  string // the probe address
	exited chan error
	logs   *lockedBuffer
	done   bool
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// deploymentArgs returns the controller container's args of the Deployment
// in a release's manifest: what its pods run.
func deploymentArgs(t *testing.T, manifest string) []string {
	t.Helper()
	return deploymentOf(t, manifestObjects(t, manifest)).Spec.Template.Spec.Containers[0].Args
}

// startController runs kubepact-controller on e with exactly the args of
// a Deployment (deploymentArgs), listen ports aside (free loopback ones),
// as the Deployment's ServiceAccount in namespace (a kubeconfig that
// impersonates it, outside a pod, its context's namespace the pod's own),
// and returns it once it started serving its probes. It is stopped when t
// ends; its logs are printed if t failed.
func startController(t *testing.T, e *env, namespace string, deployed []string) *controller {
	t.Helper()
	return startBinary(t, e, controllerBin, namespace, deployed)
}

// startBinary is startController with the kubepact-controller binary bin,
// of another version.
func startBinary(t *testing.T, e *env, bin, namespace string, deployed []string) *controller {
	t.Helper()
	var args []string
	c := &controller{exited: make(chan error, 1), logs: &lockedBuffer{}}
	for _, a := range deployed {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address=") && a != "--metrics-bind-address=0":
			a = "--metrics-bind-address=" + freeAddr(t)
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			c.probe = freeAddr(t)
			a = "--health-probe-bind-address=" + c.probe
		}
		args = append(args, a)
	}
	require.NotEmpty(t, c.probe, "the Deployment's args set --health-probe-bind-address")
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: serviceAccountKubeconfig(t, e, namespace)})
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	require.NoError(t, c.cmd.Start())
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if !c.done {
			_ = c.cmd.Process.Kill()
			<-c.exited
			c.done = true
		}
		if t.Failed() {
			t.Logf("%s %s on %s:\n%s", bin, strings.Join(args, " "), e.cluster.Name(), c.logs.String())
		}
	})
	c.waitFor(t, "/healthz")
	return c
}

// waitReady waits until the controller answers /readyz.
func (c *controller) waitReady(t *testing.T) { t.Helper(); c.waitFor(t, "/readyz") }

// waitFor waits until the controller answers 200 on path of its probe port.
func (c *controller) waitFor(t *testing.T, path string) {
	t.Helper()
	deadline := time.After(wait)
	for c.get(path) != http.StatusOK {
		select {
		case err := <-c.exited:
			c.done = true
			t.Fatalf("kubepact-controller exited before it answered %s: %v\n%s", path, err, c.logs.String())
		case <-deadline:
			t.Fatalf("kubepact-controller did not answer %s within %s", path, wait)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// get returns the status of a GET of path on the probe port, 0 when none.
func (c *controller) get(path string) int {
	resp, err := http.Get("http://" + c.probe + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stop sends SIGTERM, as the kubelet does when the Deployment's pods go,
// and returns the exit: nil for exit code 0.
func (c *controller) stop(t *testing.T) error {
	t.Helper()
	if c.done {
		return nil
	}
	c.done = true
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.exited:
		return err
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return errors.New("no exit within 30 seconds of SIGTERM")
	}
}

// serviceAccountKubeconfig writes a kubeconfig of e that impersonates the
// controller's ServiceAccount in namespace, with that namespace as the
// context's, as a pod of the Deployment has it.
func serviceAccountKubeconfig(t *testing.T, e *env, namespace string) string {
	t.Helper()
	cfg, err := clientcmd.Load(e.cluster.AdminKubeconfig())
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + namespace + ":" + controllerName
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	for _, c := range cfg.Contexts {
		c.Namespace = namespace
	}
	path := filepath.Join(t.TempDir(), "kubepact-controller.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// publishClusterInfo writes kube-public/cluster-info as kubeadm does, so
// that the controller finds the URL peers reach its API server at without
// --api-server-url, as on a kubeadm cluster.
func publishClusterInfo(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: e.cluster.Host(), CertificateAuthorityData: e.cluster.CA()}
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	_, err = e.admin.CoreV1().ConfigMaps(wire.ClusterInfoNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: wire.ClusterInfoName, Namespace: wire.ClusterInfoNamespace},
		Data:       map[string]string{wire.ClusterInfoKey: string(b)},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// recordedID returns the cluster ID e records (Liqo's ConfigMap in the
// key namespace liqo), requiring exactly one record.
func recordedID(ctx context.Context, t *testing.T, e *env) string {
	t.Helper()
	cms, err := e.admin.CoreV1().ConfigMaps("liqo").List(ctx, metav1.ListOptions{
		LabelSelector: clusterid.RecordLabel + "=" + clusterid.RecordLabelValue})
	require.NoError(t, err)
	require.Len(t, cms.Items, 1, "the cluster's ID records")
	id := cms.Items[0].Data[clusterid.RecordKey]
	require.NoError(t, clusterid.Validate(id))
	return id
}

// peering is a consumer's identity on the provider, as the consumer holds
// it.
type peering struct {
	providerID, consumerID string
	done                   *kubepact.Authenticated
}

// handshake makes the package's consumer a consumer of the provider p,
// whose kubepact-controller answers: liqoctl's steps on the provider (the
// tenant namespace, the nonce Secret the controller fills, the Tenant whose
// status it writes) and the library's consumer on the consumer cluster
// (wire.Connect, Consumer.Tenant signs the nonce, Consumer.Apply stores the
// Identity's kubeconfig after checking it with the provider). The
// kubeconfig then authenticates on the provider as the consumer.
func handshake(ctx context.Context, t *testing.T, p *env) peering {
	t.Helper()
	_, c := clusters(t)
	providerID := recordedID(ctx, t, p)
	// Connect installs the CRDs on the consumer cluster the first time,
	// and waits for them to be established; the API server's discovery
	// may serve them a moment later (wire.ErrCRDNotServed meanwhile).
	var connected *wire.Cluster
	var err error
	eventually(t, "the consumer cluster connected", func() bool {
		connected, err = wire.Connect(c.cluster.AdminConfig(), &wire.ConnectOptions{Install: true})
		if errors.Is(err, wire.ErrCRDNotServed) {
			return false
		}
		require.NoError(t, err)
		return true
	})
	consumer, err := connected.Consumer("", nil)
	require.NoError(t, err)
	consumerID := consumer.ClusterID()
	ns := clusterid.TenantNamespace(consumerID)

	_, err = p.admin.CoreV1().Namespaces().Create(ctx, tenant.Namespace(consumerID), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = p.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: consumerID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var n nonce.Nonce
	eventually(t, "the provider's nonce for "+consumerID, func() bool {
		s, err := p.admin.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if err != nil || len(s.Data[nonce.SecretKey]) == 0 {
			return false
		}
		n, err = nonce.Parse(string(s.Data[nonce.SecretKey]))
		require.NoError(t, err)
		return true
	})
	tn, err := consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	tenants := kube.NewTenantStore(p.typed)
	_, err = tenants.Apply(ctx, tn)
	require.NoError(t, err)
	eventually(t, "the status of "+consumerID+"'s Tenant", func() bool {
		tn, err = tenants.Get(ctx, ns, consumerID)
		return err == nil && tn.Status.AuthParams != nil
	})
	id, err := identity.Build(providerID, *tn.Status.AuthParams, &identity.BuildOptions{TenantNamespace: tn.Status.TenantNamespace})
	require.NoError(t, err)
	done, err := consumer.Apply(ctx, providerID, id, nil)
	require.NoError(t, err)
	pr := peering{providerID: providerID, consumerID: consumerID, done: done}
	requireAuthenticates(ctx, t, p, pr)
	return pr
}

// requireAuthenticates checks that the consumer's kubeconfig authenticates
// on p as the consumer.
func requireAuthenticates(ctx context.Context, t *testing.T, p *env, pr peering) {
	t.Helper()
	cfg, err := pr.done.Kubeconfig.RESTConfig()
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "%s's kubeconfig authenticates on %s", pr.consumerID, p.cluster.Name())
	require.Equal(t, pr.consumerID, who.Status.UserInfo.Username)
}

// tenantOf reads the consumer's Tenant on p.
func tenantOf(ctx context.Context, t *testing.T, p *env, pr peering) *authv1beta1.Tenant {
	t.Helper()
	tn, err := kube.NewTenantStore(p.typed).Get(ctx, clusterid.TenantNamespace(pr.consumerID), pr.consumerID)
	require.NoError(t, err)
	return tn
}

// countCSRs counts the CertificateSigningRequests of tenant identities on
// e.
func countCSRs(ctx context.Context, t *testing.T, e *env) int {
	t.Helper()
	list, err := e.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRLabel})
	require.NoError(t, err)
	return len(list.Items)
}

// eventually polls cond every 100ms until it holds, and fails t with what
// when it does not within wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, wait, 100*time.Millisecond, "%s, within %s", what, wait)
}

package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/wire"
)

// shippedArgs returns the controller container's args of the Deployment in
// config/, as kustomize renders it.
func shippedArgs(ctx context.Context, t *testing.T) []string {
	t.Helper()
	return deploymentArgs(ctx, t, filepath.Join("..", "..", "config"))
}

// withPorts returns args with the values of the listen flags replaced by
// free loopback ports, and the probe and metrics addresses.
func withPorts(t *testing.T, args []string) ([]string, string, string) {
	t.Helper()
	out := make([]string, 0, len(args))
	var probe, metrics string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			metrics = freeAddr(t)
			a = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			probe = freeAddr(t)
			a = "--health-probe-bind-address=" + probe
		}
		out = append(out, a)
	}
	require.NotEmpty(t, probe, "the shipped args set --health-probe-bind-address")
	require.NotEmpty(t, metrics, "the shipped args set --metrics-bind-address")
	return out, probe, metrics
}

// TestShippedArgs runs the kubepact-controller binary with the args of the
// Deployment config/ ships, listen ports aside, on a cluster where config/
// is applied, as the controller's ServiceAccount (a kubeconfig that
// impersonates it, outside a pod): with the shipped roles and with each
// role alone, it becomes ready, is still running 15 seconds later, serves
// its metrics over HTTPS and refuses them to an anonymous client, and on
// SIGTERM exits 0 without logging an error or a stack trace. It discovers
// what the args leave out: the cluster ID (generated once and recorded),
// the API server URL (kube-public/cluster-info, as kubeadm publishes it)
// and the leader election namespace (the kubeconfig context's).
func TestShippedArgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "kubepact-controller")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Env = testenv.New(t, testenv.Options{Go: true})
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "go build ./cmd/kubepact-controller")

	c, err := testcluster.Start(ctx, testcluster.Options{Name: "shipped"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	s := &side{cluster: c}
	s.admin, err = kubernetes.NewForConfig(c.AdminConfig())
	require.NoError(t, err)
	s.dynamic, err = dynamic.NewForConfig(c.AdminConfig())
	require.NoError(t, err)
	require.NoError(t, applyKustomization(ctx, s, filepath.Join("..", "..", "config")))
	publishClusterInfo(ctx, t, s.admin, c)
	kubeconfig := serviceAccountKubeconfig(t, c)

	for _, roles := range []string{"", "--roles=provider", "--roles=consumer"} {
		name := "shipped"
		if roles != "" {
			name = strings.TrimPrefix(roles, "--roles=")
		}
		t.Run(name, func(t *testing.T) {
			args, probe, metrics := withPorts(t, shippedArgs(ctx, t))
			if roles != "" {
				for i, a := range args {
					if strings.HasPrefix(a, "--roles=") {
						args[i] = roles
					}
				}
			}
			runShipped(ctx, t, bin, kubeconfig, probe, metrics, args)
		})
	}

	// The ID was generated once, recorded where liqoctl reads it, and kept.
	cms, err := s.admin.CoreV1().ConfigMaps("liqo").List(ctx, metav1.ListOptions{LabelSelector: clusterid.RecordLabel + "=" + clusterid.RecordLabelValue})
	require.NoError(t, err)
	require.Len(t, cms.Items, 1)
	require.NoError(t, clusterid.Validate(cms.Items[0].Data[clusterid.RecordKey]))

	// A flag that disagrees with the record stops the start, with exit 1.
	cmd := exec.CommandContext(ctx, bin, "--cluster-id=cl-typo", "--roles=consumer", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: kubeconfig})
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, 1, exit.ExitCode(), "%s", out)
	require.Contains(t, string(out), clusterid.ErrConflict.Error())
}

// runShipped starts bin with args, waits for /readyz on probe, checks it is
// still up 15 seconds later, then stops it with SIGTERM.
func runShipped(ctx context.Context, t *testing.T, bin, kubeconfig, probe, metrics string, args []string) {
	t.Helper()
	var logs lockedBuffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: kubeconfig})
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("kubepact-controller %v:\n%s", args, logs.String())
		}
	})

	ready := func() bool {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	deadline := time.Now().Add(time.Minute)
	for !ready() {
		select {
		case err := <-exited:
			t.Fatalf("kubepact-controller exited before it was ready: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "kubepact-controller ready within a minute")
	}
	select {
	case err := <-exited:
		t.Fatalf("kubepact-controller exited while running: %v", err)
	case <-time.After(15 * time.Second):
	}
	require.True(t, ready(), "still ready 15 seconds later")
	// The metrics are served over HTTPS, and not to an anonymous client.
	anonymous := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving certificate; only the answer is checked
	resp, err := anonymous.Get("https://" + metrics + "/metrics")
	require.NoError(t, err, "metrics over HTTPS")
	resp.Body.Close()
	require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "an anonymous scrape")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit code 0 on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("kubepact-controller did not stop within 30 seconds of SIGTERM")
	}
	out := logs.String()
	require.NotContains(t, out, `"level":"error"`, "no error logged")
	require.NotContains(t, out, "stacktrace", "no stack trace")
	require.NotContains(t, out, "goroutine ", "no stack trace")
	require.Contains(t, out, `"msg":"starting"`)
}

// publishClusterInfo writes kube-public/cluster-info as kubeadm does: a
// kubeconfig naming the API server and its CA, readable by anyone.
func publishClusterInfo(ctx context.Context, t *testing.T, admin kubernetes.Interface, c *testcluster.Cluster) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: c.Host(), CertificateAuthorityData: c.CA()}
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	_, err = admin.CoreV1().ConfigMaps(wire.ClusterInfoNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: wire.ClusterInfoName, Namespace: wire.ClusterInfoNamespace},
		Data:       map[string]string{wire.ClusterInfoKey: string(b)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// serviceAccountKubeconfig writes a kubeconfig of c that impersonates the
// controller's ServiceAccount, with its namespace as the context's.
func serviceAccountKubeconfig(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	cfg, err := clientcmd.Load(c.AdminKubeconfig())
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:kubepact-system:kubepact-controller"
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kubepact-system", "system:authenticated"}
	}
	for _, ctx := range cfg.Contexts {
		ctx.Namespace = "kubepact-system"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

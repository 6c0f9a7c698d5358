package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
)

// testEnv is one real cluster, its admin kubeconfig file and admin clients.
type testEnv struct {
	cluster    *testcluster.Cluster
	kubeconfig string
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	typed      client.Client
}

var providerEnv, consumerEnv *testEnv

// TestMain starts two independent control planes, the provider and the
// consumer, with the CRDs installed, shared by the tests that need clusters.
func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubepact-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	newEnv := func(ctx context.Context, c *testcluster.Cluster) (*testEnv, error) {
		return newTestEnv(ctx, c, filepath.Join(dir, c.Name()+".kubeconfig"))
	}
	return testcluster.Main(m, 30*time.Minute, testcluster.Options{}, newEnv, &providerEnv, &consumerEnv)
}

func newTestEnv(ctx context.Context, c *testcluster.Cluster, kubeconfigPath string) (*testEnv, error) {
	e := &testEnv{cluster: c, kubeconfig: kubeconfigPath}
	if err := os.WriteFile(kubeconfigPath, c.AdminKubeconfig(), 0o600); err != nil {
		return e, err
	}
	var err error
	if e.client, err = kubernetes.NewForConfig(c.AdminConfig()); err != nil {
		return e, err
	}
	if e.dynamic, err = dynamic.NewForConfig(c.AdminConfig()); err != nil {
		return e, err
	}
	if e.typed, err = kube.NewClient(c.AdminConfig(), nil); err != nil {
		return e, err
	}
	return e, kube.InstallCRDs(ctx, c.AdminConfig())
}

// result is what one run of the CLI did.
type result struct {
	code           int
	stdout, stderr string
}

// neverPrinted are what no output may hold: private keys, in PEM or in the
// base64 of a PEM, and the credentials of a kubeconfig.
var neverPrinted = []string{
	"PRIVATE KEY",
	base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE KEY")),
	"client-key-data",
	"client-certificate-data",
}

// cli runs the CLI in-process with args and stdin, and fails t if any
// output carries a key or a kubeconfig.
func cli(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	for _, s := range neverPrinted {
		if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
			t.Fatalf("kubepact %s printed %q:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), s, r.stdout, r.stderr)
		}
	}
	return r
}

// ok fails t unless r succeeded.
func (r result) ok(t testing.TB) result {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// writeFile writes data to a new file name in dir and returns its path.
func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

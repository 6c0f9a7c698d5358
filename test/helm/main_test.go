package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
)

// root is the repository root, relative to this package.
var root = filepath.Join("..", "..")

// env is one of the package's clusters with an administrator's clients.
type env struct {
	cluster *testcluster.Cluster
	admin   kubernetes.Interface
	dynamic dynamic.Interface
	typed   client.Client
	// kubeconfig is the path of an administrator's kubeconfig, as Helm's
	// users pass it.
	kubeconfig string
	// dir holds this cluster's files: kubeconfigs, Helm's discovery cache.
	dir string
}

// The package's shared state: two clusters, started once by the first test
// that needs them (the chart's own tests need none) and stopped by
// TestMain, and the kubepact-controller binary built from the repository's
// root module.
var (
	startOnce          sync.Once
	startErr           error
	provider, consumer *env
	controllerBin      string
	workDir            string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "kubepact-helm-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	code := m.Run()
	if provider != nil {
		_ = testcluster.StopAll([]*testcluster.Cluster{provider.cluster, consumer.cluster})
	}
	return code
}

// clusters returns the package's provider and consumer clusters, starting
// them, and building kubepact-controller meanwhile, on the first call. The
// provider starts bare, as an operator's cluster: no CRDs, no peer roles.
// The consumer only consumes, through the library.
func clusters(t *testing.T) (*env, *env) {
	t.Helper()
	startOnce.Do(func() { startErr = start() })
	require.NoError(t, startErr, "starting the package's clusters")
	return provider, consumer
}

func start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	built := make(chan error, 1)
	go func() {
		controllerBin = filepath.Join(workDir, "kubepact-controller")
		home := filepath.Join(workDir, "go-home")
		if err := os.Mkdir(home, 0o700); err != nil {
			built <- err
			return
		}
		env, err := testenv.Build(testenv.Options{Home: home, Go: true})
		if err != nil {
			built <- err
			return
		}
		build := exec.CommandContext(ctx, "go", "build", "-o", controllerBin, "./cmd/kubepact-controller")
		build.Dir, build.Env = root, env
		out, err := build.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build ./cmd/kubepact-controller: %w\n%s", err, out)
		}
		built <- err
	}()
	cs, err := testcluster.StartAllWith(ctx, testcluster.Options{NoPeerRoles: true}, "helm-provider", "helm-consumer")
	if err != nil {
		<-built
		return err
	}
	envs := make([]*env, len(cs))
	for i, c := range cs {
		if envs[i], err = newEnv(c); err != nil {
			<-built
			return fmt.Errorf("%s: %w", c.Name(), errors.Join(err, testcluster.StopAll(cs)))
		}
	}
	if err := <-built; err != nil {
		_ = testcluster.StopAll(cs)
		return err
	}
	provider, consumer = envs[0], envs[1]
	return nil
}

func newEnv(c *testcluster.Cluster) (*env, error) {
	e := &env{cluster: c, dir: filepath.Join(workDir, c.Name())}
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return nil, err
	}
	e.kubeconfig = filepath.Join(e.dir, "admin.kubeconfig")
	if err := os.WriteFile(e.kubeconfig, c.AdminKubeconfig(), 0o600); err != nil {
		return nil, err
	}
	cfg := c.AdminConfig()
	cfg.QPS, cfg.Burst = 200, 400
	var err error
	if e.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.typed, err = kube.NewClient(cfg, nil); err != nil {
		return nil, err
	}
	return e, nil
}

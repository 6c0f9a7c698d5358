package liqo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
)

// certificateLifetime is the longest certificate either cluster's CSR signer
// issues. The signer backdates each certificate by 5 minutes, so a
// certificate issued now lives from 5 minutes ago to certificateLifetime
// from now, and both providers re-sign it by two thirds of that: Liqo's 100
// seconds after it was issued, kubepact's between then and the moment it was
// issued (from half the lifetime on). It is short so that renewal happens
// within the test.
const certificateLifetime = 5 * time.Minute

// side is one cluster of the suite and the components running on it.
type side struct {
	name       string // "liqo" or "kubepact"
	cluster    *testcluster.Cluster
	id         string // the cluster ID, as liqoctl reads it
	kubeconfig string // an admin kubeconfig file, as a liqoctl user has
	admin      kubernetes.Interface
	// client reads and writes with Liqo's own API types.
	client client.Client
	procs  []*proc
	// controller is the provider's controller: liqo-controller-manager or
	// kubepact-controller.
	controller *controllerRun
	// metricsURL serves the provider controller's metrics, to whom
	// metricsToken names, if set.
	metricsURL, metricsToken string
	// auditUser is who the provider's controller is in the API server's
	// audit log (the impersonated user, when it impersonates).
	auditUser string
}

var (
	liqoSide, kubepactSide *side
	bins                   binaries
	// home is the HOME of every program the suite runs, a directory of its
	// own: see programEnv.
	home string
)

// programEnv is the environment of a program the suite runs, built from
// nothing but o (see internal/testenv), with home as its HOME: nothing of
// the developer's set-up (a kubeconfig, kubectl plugins, a PATH) reaches
// liqoctl, the controllers or go.
func programEnv(o testenv.Options) ([]string, error) {
	o.Home = home
	return testenv.Build(o)
}

// binaries are the programs the suite runs, built once from the module
// graph of this module (Liqo's) and of kubepact's root module.
type binaries struct {
	liqoctl, controllerManager, crdReplicator string
	kubepactController, kubepact              string
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// The benchmark's caches log through controller-runtime: nowhere.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "kubepact-liqo-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	home = filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	// The binaries build while the control planes start.
	built := make(chan error, 1)
	go func() { built <- build(ctx, filepath.Join(dir, "bin")) }()
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{
		SigningDuration: certificateLifetime,
		NoPeerRoles:     true,
		// The CSR signer's client limit: at its default of 20 it would
		// bound both providers of BenchmarkProviders to about 20
		// signatures a second.
		ControllerManagerQPS: 200,
		// BenchmarkProviders counts each controller's requests by kind.
		AuditLog: true,
	}, "liqo", "kubepact")
	if err != nil {
		<-built
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testcluster.StopAll(clusters)
	if err := <-built; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	liqoSide, kubepactSide = &side{name: "liqo", cluster: clusters[0]}, &side{name: "kubepact", cluster: clusters[1]}
	for _, s := range []*side{liqoSide, kubepactSide} {
		defer s.stop()
		if err := s.connect(dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			return 1
		}
	}
	if err := startLiqo(ctx, liqoSide); err != nil {
		fmt.Fprintf(os.Stderr, "liqo: %v\n", err)
		return 1
	}
	if err := startKubepact(ctx, kubepactSide); err != nil {
		fmt.Fprintf(os.Stderr, "kubepact: %v\n", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		for _, s := range []*side{liqoSide, kubepactSide} {
			for _, p := range s.procs {
				fmt.Fprintf(os.Stderr, "--- %s/%s, last lines:\n%s\n", s.name, p.name, p.tail(60))
			}
		}
	}
	return code
}

// build builds liqoctl, liqo-controller-manager and crd-replicator from
// Liqo's module, as this module requires it, and kubepact-controller and the
// kubepact CLI from kubepact's own module, as they ship.
func build(ctx context.Context, dir string) error {
	env, err := programEnv(testenv.Options{Go: true})
	if err != nil {
		return err
	}
	bins = binaries{
		liqoctl:            filepath.Join(dir, "liqoctl"),
		controllerManager:  filepath.Join(dir, "liqo-controller-manager"),
		crdReplicator:      filepath.Join(dir, "crd-replicator"),
		kubepactController: filepath.Join(dir, "kubepact-controller"),
		kubepact:           filepath.Join(dir, "kubepact"),
	}
	liqo := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/liqotech/liqo/cmd/liqoctl",
		"github.com/liqotech/liqo/cmd/liqo-controller-manager",
		"github.com/liqotech/liqo/cmd/crd-replicator")
	liqo.Env = env
	if out, err := liqo.CombinedOutput(); err != nil {
		return fmt.Errorf("building Liqo's binaries: %w\n%s", err, out)
	}
	for bin, pkg := range map[string]string{bins.kubepactController: "./cmd/kubepact-controller", bins.kubepact: "./cmd/kubepact"} {
		kp := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		kp.Dir, kp.Env = filepath.Join("..", ".."), env
		if out, err := kp.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}

// scheme holds Liqo's API types, so that every object the suite reads is
// decoded as Liqo's code decodes it.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, liqoauthv1beta1.AddToScheme, liqov1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// connect makes s's clients and writes its admin kubeconfig to a file.
func (s *side) connect(dir string) error {
	s.kubeconfig = filepath.Join(dir, s.name+".kubeconfig")
	if err := os.WriteFile(s.kubeconfig, s.cluster.AdminKubeconfig(), 0o600); err != nil {
		return err
	}
	var err error
	if s.admin, err = kubernetes.NewForConfig(s.cluster.AdminConfig()); err != nil {
		return err
	}
	s.client, err = client.New(s.cluster.AdminConfig(), client.Options{Scheme: scheme})
	return err
}

func (s *side) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
}

// proc is one component running as a process, its output in a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs bin with args and the environment env (NAME=value pairs, on
// top of programEnv's), its output in a file of s's cluster directory.
func (s *side) start(name, bin string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(s.cluster.Dir(), name+".log"), done: make(chan struct{})}
	procEnv, err := programEnv(testenv.Options{Set: env})
	if err != nil {
		return nil, err
	}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = procEnv
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	s.procs = append(s.procs, p)
	return p, nil
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n lines of p's output.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady waits until p serves 200 on http://probe/readyz, failing if it
// exits first.
func (p *proc) waitReady(ctx context.Context, probe string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, p.err, p.tail(40))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w\n%s", p.name, ctx.Err(), p.tail(40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

var portsMu sync.Mutex

// freeAddr returns a loopback address with a port free at the time.
func freeAddr() (string, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// eventually polls cond every 250ms until it returns nil or timeout passes,
// and returns its last error.
func eventually(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

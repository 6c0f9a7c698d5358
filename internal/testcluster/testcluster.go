// Package testcluster starts real Kubernetes control planes for tests: etcd, kube-apiserver and
// kube-controller-manager, as child processes listening on 127.0.0.1, each cluster with its own
// freshly generated certificate authority. It is for tests that need what a fake clientset cannot
// give: authentication by client certificate, RBAC, CertificateSigningRequests signed by the
// controller-manager, namespace deletion and garbage collection. Several clusters can run at once
// and know nothing of each other, like the clusters of a peering.
//
// StopAPIServer and StartAPIServer (or RestartAPIServer) restart the API server alone, on the same
// etcd, port and certificates, for tests of how clients ride out its restart.
//
// There are no nodes, kubelets, schedulers or networking: pods are stored but never run. Each
// cluster starts with the peer ClusterRoles (rbac.PeerRoles) installed, as a provider has them
// once config/roles or Liqo's chart is applied, unless Options.NoPeerRoles.
//
// Costs: the binaries (kube-apiserver and kube-controller-manager v1.35.4, etcd v3.6.5) come from
// hack/controlplane.sh, which builds them once into a cache outside the repository; EnsureBinaries
// and StartT run it when they are missing. A cold build takes 5-7 minutes on 2 cores and fills
// about 3 GB of Go caches; afterwards the check is instant. A cluster takes about 3 seconds to
// start and 1 second to stop, and while it runs uses about 380 MB of memory and 120 MB of disk
// under os.TempDir. Cluster.Stop (which StartT registers as a cleanup) leaves no process or file
// behind. On Linux the components also die with the test process if it is killed, though their
// directory then stays.
package testcluster

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubepact/kubepact/rbac"
)

const (
	// AdminUser is the user name of the admin client certificate; its group is system:masters.
	AdminUser = "kubepact-admin"

	// ServiceClusterIPRange is the range of Service cluster IPs.
	ServiceClusterIPRange = "10.96.0.0/16"
	// kubernetesServiceIP is the first address of ServiceClusterIPRange, taken by the kubernetes
	// Service.
	kubernetesServiceIP = "10.96.0.1"

	// ServiceAccountIssuer is the issuer of service-account tokens.
	ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

	// startTimeout bounds Start when its context has no earlier deadline.
	startTimeout = 2 * time.Minute
	// stopGrace is how long Stop waits after SIGTERM before it kills a component.
	stopGrace = 10 * time.Second
	// startAttempts is how many times Start tries, with new ports, when a port it picked was
	// taken by someone else before a component could listen on it.
	startAttempts = 3
)

// controllers are the kube-controller-manager controllers a cluster runs: CSR signing, approval
// and cleanup, namespace deletion, garbage collection, service accounts and their tokens, the
// kube-root-ca.crt publisher, and the aggregation of the built-in admin, edit and view roles.
var controllers = []string{
	"certificatesigningrequest-signing-controller",
	"certificatesigningrequest-approving-controller",
	"certificatesigningrequest-cleaner-controller",
	"namespace-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
}

// Options configure Start.
type Options struct {
	// BinDir holds the etcd, kube-apiserver and kube-controller-manager binaries. The default is
	// DefaultBinDir(). Start does not build missing binaries; see EnsureBinaries.
	BinDir string

	// Name names the cluster in its directory, its kubeconfig and its log lines. The default is
	// "cluster".
	Name string

	// LogWriter, when set, receives the components' output, each line prefixed with
	// "[<name>/<component>] ". The output is also always written to files in the cluster's
	// directory: after a failed Start they are kept, and their last lines are in the error.
	LogWriter io.Writer

	// ControllerManagerQPS, when positive, is the kube-controller-manager's client rate limit
	// (--kube-api-qps, with a burst of twice as much); zero keeps its default, 20 QPS and a burst
	// of 30. Its CSR signer writes each issued certificate with one request of that budget, so
	// the default bounds the CSR API to about 20 signatures a second.
	ControllerManagerQPS float32

	// SigningDuration, when positive, is the longest certificate the CSR signer issues
	// (--cluster-signing-duration): a CSR asking for more, or for nothing, gets this. Zero keeps
	// the signer's default, one year.
	SigningDuration time.Duration

	// NoPeerRoles starts the cluster without the peer ClusterRoles, for a test that installs
	// them as an operator does (config/, or Liqo's chart).
	NoPeerRoles bool

	// AuditLog makes the API server write one JSON line per request, at the Metadata level, to
	// AuditLogPath: who asked what of which resource, to count a component's requests.
	AuditLog bool

	// Detach lets the components outlive the calling process, for a program that starts a
	// cluster and exits (hack/playground): each runs in a session and process group of its own
	// and leads them (its PID is the group's ID, see PIDs), with no parent-death signal. Stop still works
	// while the caller runs; after it exits, whoever stops the cluster signals the groups and
	// removes Dir. It requires a nil LogWriter, whose pipe would end with the caller.
	Detach bool

	// ParentDir is where the cluster's directory is made. The default is os.TempDir().
	ParentDir string
}

// Cluster is a running control plane. Its methods are safe for concurrent use.
type Cluster struct {
	name      string
	dir       string
	binDir    string
	logWriter io.Writer
	kcmQPS    float32
	signing   time.Duration
	noRoles   bool
	audit     bool
	detach    bool

	host       string
	ca         *authority
	clientCA   *authority // a second client CA, not the serving CA
	admin      keyPair
	kcm        keyPair
	etcdURL    string
	etcdPeer   string
	apiPort    int        // the API server's, kept when it restarts
	components []*process // in start order

	// mu guards components, which StopAPIServer and StartAPIServer change while the cluster runs;
	// apiMu makes each of those two calls whole.
	mu    sync.Mutex
	apiMu sync.Mutex

	stopOnce sync.Once
	stopErr  error
}

// Start starts a cluster and returns once the API server is ready and the controller-manager has
// begun its work (it has created the default service account). ctx bounds the start only; the
// cluster runs until Stop. If Start fails, nothing is left running, and the cluster's directory
// with the component logs is kept and named in the error.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	binDir := opts.BinDir
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	if err := checkBinaries(binDir); err != nil {
		return nil, err
	}
	if opts.Detach && opts.LogWriter != nil {
		return nil, errors.New("test cluster: Options.Detach takes no LogWriter")
	}
	name := sanitizeName(opts.Name)
	dir, err := os.MkdirTemp(opts.ParentDir, "kubepact-testcluster-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating cluster directory: %w", err)
	}
	c := &Cluster{name: name, dir: dir, binDir: binDir, logWriter: opts.LogWriter, kcmQPS: opts.ControllerManagerQPS, signing: opts.SigningDuration, noRoles: opts.NoPeerRoles, audit: opts.AuditLog, detach: opts.Detach}
	if err := c.writePKI(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("test cluster %s: %w", name, err)
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := c.launch(ctx)
		if err == nil {
			return c, nil
		}
		_ = c.stopComponents() // err already says which component failed
		c.mu.Lock()
		c.components = nil
		c.mu.Unlock()
		// Keep the logs and certificates for diagnosis, but not etcd's data (over 100 MB).
		if rmErr := os.RemoveAll(c.path("etcd-data")); rmErr != nil {
			err = errors.Join(err, rmErr)
		} else if errors.Is(err, errPortInUse) && attempt < startAttempts && ctx.Err() == nil {
			continue
		}
		return nil, fmt.Errorf("test cluster %s: %w\n(component logs kept in %s)", name, err, dir)
	}
}

// Host returns the API server URL, https://127.0.0.1:<port>.
func (c *Cluster) Host() string { return c.host }

// CA returns the PEM-encoded certificate of the cluster's CA. It signs the API server's serving
// certificate, is one of the client CAs (--client-ca-file) that authenticate client certificates,
// and is the signer of CertificateSigningRequests, so certificates issued through the CSR API
// authenticate.
func (c *Cluster) CA() []byte { return append([]byte(nil), c.ca.certPEM...) }

// SecondClientCA returns the PEM-encoded certificate and the key of a second client CA: the API
// server authenticates the client certificates it signs (it is in the --client-ca-file bundle),
// but it signs neither the serving certificate nor CertificateSigningRequests. It models a
// distribution whose client CA is not its serving CA, as k3s and RKE2.
func (c *Cluster) SecondClientCA() ([]byte, crypto.Signer) {
	return append([]byte(nil), c.clientCA.certPEM...), c.clientCA.key
}

// Name returns the cluster's name: Options.Name, made safe for a file name.
func (c *Cluster) Name() string { return c.name }

// Dir returns the cluster's temporary directory, holding its certificates, etcd data and logs.
// Stop removes it.
func (c *Cluster) Dir() string { return c.dir }

// AdminConfig returns a new client configuration that authenticates as AdminUser, a member of
// system:masters. Client-side rate limiting is loosened for tests.
func (c *Cluster) AdminConfig() *rest.Config {
	return &rest.Config{
		Host: c.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.CA(),
			CertData: append([]byte(nil), c.admin.certPEM...),
			KeyData:  append([]byte(nil), c.admin.keyPEM...),
		},
		QPS:   100,
		Burst: 200,
	}
}

// AdminKubeconfig returns a kubeconfig file with a single context, named after the cluster, that
// authenticates as AdminUser with embedded certificates.
func (c *Cluster) AdminKubeconfig() []byte {
	data, err := c.kubeconfig(AdminUser, c.admin)
	if err != nil {
		// Serializing a well-formed in-memory configuration does not fail.
		panic(fmt.Sprintf("testcluster: writing kubeconfig: %v", err))
	}
	return data
}

// PIDs returns the process ID of each running component, by component name ("etcd",
// "kube-apiserver", "kube-controller-manager"). With Options.Detach each is also the ID of the
// component's process group.
func (c *Cluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range c.running() {
		pids[p.name] = p.cmd.Process.Pid
	}
	return pids
}

// Stop stops the components, controller-manager first and etcd last, each with SIGTERM and after
// a grace period SIGKILL, waits for them to exit, and removes the cluster's directory. It returns
// an error if a component had exited on its own before, with the end of its log. Calling Stop
// again returns the same result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		err := c.stopComponents()
		if rmErr := os.RemoveAll(c.dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", c.dir, rmErr))
		}
		if err != nil {
			c.stopErr = fmt.Errorf("test cluster %s: %w", c.name, err)
		}
	})
	return c.stopErr
}

// stopComponents stops the running components in reverse start order.
func (c *Cluster) stopComponents() error {
	var errs []error
	components := c.running()
	for i := len(components) - 1; i >= 0; i-- {
		errs = append(errs, components[i].stop(stopGrace))
	}
	return errors.Join(errs...)
}

// running returns the components, in start order.
func (c *Cluster) running() []*process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.components)
}

// logTails returns the last lines of each component's log, keyed by component name. It is empty
// after Stop.
func (c *Cluster) logTails() map[string]string {
	tails := map[string]string{}
	for _, p := range c.running() {
		if fileExists(p.logPath) {
			tails[p.name] = p.logTail()
		}
	}
	return tails
}

func (c *Cluster) path(name string) string { return filepath.Join(c.dir, name) }

// writePKI generates the cluster's certificates and keys and writes those the components read.
func (c *Cluster) writePKI() error {
	ca, err := newAuthority("kubepact-testcluster-" + c.name + "-ca")
	if err != nil {
		return err
	}
	serving, err := ca.servingCert()
	if err != nil {
		return err
	}
	admin, err := ca.clientCert(AdminUser, "system:masters")
	if err != nil {
		return err
	}
	// The controller-manager's own role, system:kube-controller-manager, may not sign CSRs (the
	// signing controller uses the controller-manager's credentials), so it is a master too.
	kcm, err := ca.clientCert("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	clientCA, err := newAuthority("kubepact-testcluster-" + c.name + "-client-ca")
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKey()
	if err != nil {
		return err
	}
	c.ca, c.clientCA, c.admin, c.kcm = ca, clientCA, admin, kcm
	return writeFiles(c.dir, map[string][]byte{
		"ca.crt":            ca.certPEM,
		"client-ca.crt":     append(append([]byte(nil), ca.certPEM...), clientCA.certPEM...),
		"ca.key":            ca.keyPEM,
		"audit-policy.yaml": []byte(auditPolicy),
		"apiserver.crt":     serving.certPEM,
		"apiserver.key":     serving.keyPEM,
		"sa.key":            saKey,
		"sa.pub":            saPub,
	})
}

// kubeconfig returns a kubeconfig for the cluster that authenticates with the given certificate.
func (c *Cluster) kubeconfig(user string, creds keyPair) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.name] = &clientcmdapi.Cluster{
		Server:                   c.host,
		CertificateAuthorityData: c.CA(),
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: append([]byte(nil), creds.certPEM...),
		ClientKeyData:         append([]byte(nil), creds.keyPEM...),
	}
	cfg.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: user}
	cfg.CurrentContext = c.name
	return clientcmd.Write(*cfg)
}

// errPortInUse marks a start that failed because a picked port was taken in the meantime.
var errPortInUse = errors.New("port already in use")

// launch picks ports and starts etcd, kube-apiserver and kube-controller-manager in turn, each
// once the one before is ready.
func (c *Cluster) launch(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	c.etcdPeer = "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.apiPort = ports[2]
	c.host = "https://127.0.0.1:" + strconv.Itoa(c.apiPort)
	admin := c.AdminConfig()
	adminHTTP, err := rest.HTTPClientFor(admin)
	if err != nil {
		return err
	}
	defer adminHTTP.CloseIdleConnections()
	adminClient, err := kubernetes.NewForConfigAndClient(admin, adminHTTP)
	if err != nil {
		return err
	}
	etcdHTTP := &http.Client{}
	defer etcdHTTP.CloseIdleConnections()

	if err := c.start("etcd", c.etcdArgs()); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "etcd /health", func(ctx context.Context) error {
		return checkHealth(ctx, etcdHTTP, c.etcdURL+"/health")
	}); err != nil {
		return err
	}

	if err := c.start("kube-apiserver", c.apiserverArgs(c.apiPort)); err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx, adminHTTP); err != nil {
		return err
	}

	kubeconfig, err := c.kubeconfig("system:kube-controller-manager", c.kcm)
	if err != nil {
		return err
	}
	if err := writeFiles(c.dir, map[string][]byte{"kcm.kubeconfig": kubeconfig}); err != nil {
		return err
	}
	if err := c.start("kube-controller-manager", c.controllerManagerArgs()); err != nil {
		return err
	}
	// The service-account controller creating the default service account is a sign that the
	// controllers are running.
	if err := c.waitFor(ctx, "the controller-manager to create the default service account", func(ctx context.Context) error {
		_, err := adminClient.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	if c.noRoles {
		return nil
	}
	// The peer ClusterRoles, as an installed provider has them (config/roles, or Liqo's chart).
	for _, r := range rbac.PeerRoles() {
		if _, err := adminClient.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing ClusterRole %s: %w", r.Name, err)
		}
	}
	return nil
}

func (c *Cluster) etcdArgs() []string {
	return []string{
		"--name=" + c.name,
		"--data-dir=" + c.path("etcd-data"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + c.etcdPeer,
		"--initial-advertise-peer-urls=" + c.etcdPeer,
		"--initial-cluster=" + c.name + "=" + c.etcdPeer,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

func (c *Cluster) apiserverArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + c.dir,
		"--tls-cert-file=" + c.path("apiserver.crt"),
		"--tls-private-key-file=" + c.path("apiserver.key"),
		"--client-ca-file=" + c.path("client-ca.crt"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + c.path("sa.pub"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// With a loopback advertise address the default reconciler logs errors forever.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	if c.audit {
		args = append(args, "--audit-policy-file="+c.path("audit-policy.yaml"), "--audit-log-path="+c.AuditLogPath(),
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0")
	}
	return args
}

// auditPolicy logs every request once, when its response is complete, without its body.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
`

// AuditLogPath is where the API server of a cluster started with Options.AuditLog writes its
// audit events, one JSON object per line.
func (c *Cluster) AuditLogPath() string { return c.path("audit.log") }

// UserKubeconfig returns a kubeconfig for the cluster that authenticates as user in groups, with
// a client certificate from the cluster's CA: a component of its own, apart from the admin.
func (c *Cluster) UserKubeconfig(user string, groups ...string) ([]byte, error) {
	creds, err := c.ca.clientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	return c.kubeconfig(user, creds)
}

func (c *Cluster) controllerManagerArgs() []string {
	args := []string{
		"--kubeconfig=" + c.path("kcm.kubeconfig"),
		"--controllers=" + strings.Join(controllers, ","),
		"--cluster-signing-cert-file=" + c.path("ca.crt"),
		"--cluster-signing-key-file=" + c.path("ca.key"),
		"--root-ca-file=" + c.path("ca.crt"),
		"--service-account-private-key-file=" + c.path("sa.key"),
		"--leader-elect=false",
		"--secure-port=0",
		"--profiling=false",
	}
	if c.signing > 0 {
		args = append(args, "--cluster-signing-duration="+c.signing.String())
	}
	if c.kcmQPS > 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%g", c.kcmQPS), fmt.Sprintf("--kube-api-burst=%d", int(2*c.kcmQPS)))
	}
	return args
}

// start starts one component and records it for Stop.
func (c *Cluster) start(component string, args []string) error {
	var prefix string
	if c.logWriter != nil {
		prefix = "[" + c.name + "/" + component + "] "
	}
	p, err := startProcess(component, filepath.Join(c.binDir, component), args,
		c.path("home"), c.path(component+".log"), c.logWriter, prefix, c.detach)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.components = append(c.components, p)
	c.mu.Unlock()
	return nil
}

// waitFor calls check until it succeeds, a component exits, or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, what string, check func(ctx context.Context) error) error {
	const interval = 100 * time.Millisecond
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		for _, p := range c.running() {
			if p.exited() {
				err := p.exitError()
				if strings.Contains(p.logTail(), "address already in use") {
					err = fmt.Errorf("%w: %w", errPortInUse, err)
				}
				return err
			}
		}
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr := check(checkCtx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last check: %v)", what, ctx.Err(), lastErr)
		case <-ticker.C:
		}
	}
}

// checkHealth checks that a health endpoint answers 200 OK.
func checkHealth(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago. All n listeners are
// held open together so the kernel hands out distinct ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("picking a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var unsafeNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// sanitizeName turns a name such as a test name into one fit for a directory, a kubeconfig and
// an etcd member name.
func sanitizeName(name string) string {
	name = strings.Trim(unsafeNameChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		name = "cluster"
	}
	return name
}

// Command kubepact-controller runs kubepact's reconcilers (package
// controllers) for one cluster, so that the cluster answers Liqo v1.2's
// declarative handshake as a Liqo cluster does: a peer, or liqoctl, or a
// person with kubectl, only writes objects, and the controller answers them.
//
// Usage:
//
//	kubepact-controller [--roles provider,consumer] [flags]
//
// As a provider it fills the nonce of every liqo-nonce Secret in a tenant
// namespace and accepts Tenants (verify, sign, bind, status); as a consumer
// it signs the nonce of every liqo-signed-nonce Secret and turns Identities
// into kubeconfig Secrets. A cluster may be both, as Liqo clusters are.
//
// Flags:
//
//	--cluster-id ID                 this cluster's ID; default: the one the cluster records (Liqo's
//	                                ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in
//	                                --key-namespace), else a new one; the flag's or the new ID is
//	                                recorded there when the cluster has none, and a flag that
//	                                disagrees with the record stops the start

//	--roles provider,consumer       which reconcilers to run
//	--kubeconfig FILE               kubeconfig to use; default: in-cluster, else $KUBECONFIG or ~/.kube/config
//	--api-server-url URL            provider: the https URL consumers reach this API server at; default: the
//	                                one kube-public/cluster-info names (kubeadm); without either, Tenants
//	                                get an APIServerURLUnknown Event and the controller is not ready
//	--api-server-ca-file FILE       provider: the PEM CA of that server; default: the kubeconfig's or the in-cluster CA
//	--policy compatible|strict      provider: how strictly Tenants are checked (default compatible)
//	--certificate-lifetime DURATION provider: lifetime of issued certificates, re-signed between half and two thirds of it (default 7 days, 168h)
//	--local-ca-cert-file FILE       provider: sign with this CA certificate instead of the CSR API
//	--local-ca-key-file FILE        provider: the key of that CA (PEM PKCS#8)
//	--key-namespace NS              the Liqo namespace: cluster key Secret and cluster ID record (default liqo)
//	--strict                        consumer: a fresh TLS key per identity
//	--offline                       consumer: do not confirm new kubeconfigs with the provider
//	--root-ca-file FILE             consumer: extra roots for providers whose Identity has no CA
//	--default-node-resources LIST   provider: what a ResourceSlice is granted of each resource its spec
//	                                leaves out, as name=quantity,... (default: Liqo's Helm chart's,
//	                                cpu=4,ephemeral-storage=20Gi,memory=8Gi,pods=110; empty: none)
//	--enable-storage                provider: offer ResourceSlices the cluster's StorageClasses (default true,
//	                                as Liqo's chart; needs list on storageclasses)
//	--real-storage-class-name NAME  provider: the StorageClass offered as the default; default: the one
//	                                annotated storageclass.kubernetes.io/is-default-class: "true"
//	--ingress-classes LIST          provider: ingress classes offered to ResourceSlices, name[;default],...
//	--load-balancer-classes LIST    provider: load-balancer classes offered, name[;default],...
//	--cluster-labels LIST           provider: labels of the virtual node made for a ResourceSlice, key=value,...
//	--max-slices-per-consumer N     provider: live ResourceSlices of one consumer that get certificates, the
//	                                oldest first; the others get none, and a SliceLimitReached Event, until
//	                                older ones go (default 64; -1: no bound)
//	--slice-rekey-interval DURATION provider: shortest time from a ResourceSlice's certificate to one for
//	                                another CSR of it; sooner, a RekeyTooSoon Event (default 0: half the
//	                                lifetime of the certificate it holds; negative: no bound)
//	--slice-certificates-per-hour N provider: certificates for new ResourceSlice requests of one consumer
//	                                signed in any hour; beyond, a CertificateRateLimited Event (default 128;
//	                                -1: no bound)
//	--workers N                     provider: nonce Secrets and Tenants reconciled at once, and handshakes in flight (default 16)
//	--kube-api-qps QPS              client-side request rate to the API server (default 1000: about
//	                                21 requests a handshake, 30 handshakes a second and room to spare)
//	--kube-api-burst N              client-side burst (default 2000)
//	--leader-elect                  elect a leader among replicas (default true)
//	--leader-election-namespace NS  namespace of the Lease (default: the pod's, else the kubeconfig context's)
//	--enrolment-namespace NS        provider: where the enrolment key, its public record and the
//	                                enrolment endpoint's certificate are kept, for peering from Git
//	                                (default: the pod's, else the Lease's)
//	--metrics-bind-address ADDR     Prometheus metrics, over HTTPS for who may get /metrics (default :8443; 0 disables)
//	--metrics-secure                authenticate and authorize scrapes over HTTPS (default true)
//	--metrics-cert-dir DIR          tls.crt and tls.key of the metrics server (default: self-signed)
//	--health-probe-bind-address ADDR /healthz and /readyz, with /readyz/provider saying why the
//	                                provider is not ready (default :8081; 0 disables)
//	--tenant-namespace-pod-security LEVEL
//	                                pod-security.kubernetes.io/enforce of the tenant namespaces it creates,
//	                                at creation only (privileged for a Liqo network module beside it);
//	                                default none
//	--version                       print the version and exit
//	--help                          print the flags and exit
//
// plus the structured-logging flags of controller-runtime's zap options
// (--zap-log-level, --zap-encoder, ...). The command line is pflag's, as
// Kubernetes' own binaries': a long flag takes two dashes (a single dash
// starts shorthands, of which there is none but -h), and a bool flag needs
// no value (--leader-elect, --leader-elect=false). The permissions each role needs are
// in package controllers' documentation and config/controller. The replica
// that leads writes its version into the leader election Lease it holds
// (annotations kubepact.io/version and kubepact.io/version-holder, in each
// write of the Lease), which kubepact version reads. On SIGTERM
// it releases its lease, stops its workers and exits 0; --help and
// --version exit 0, a bad command line 2, a failure 1.
//
// It is ready (/readyz) once its caches are synced and, with the provider
// role, once it can accept Tenants: it knows the URL consumers reach its API
// server at, and the peer ClusterRoles it binds (liqo-remote-controlplane,
// liqo-virtual-kubelet-remote-clusterwide) are installed, which every
// replica watches by name and looks at every 5 seconds. Until then kubectl
// rollout status waits,
// /readyz/provider answers why and how to fix it, and each problem is
// logged once and recorded as a Warning Event (APIServerURLUnknown,
// PeerRoleMissing) on the controller's Pod, which the Deployment names in
// POD_NAME, POD_NAMESPACE and POD_UID. A consumer alone (--roles=consumer)
// needs neither.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// LeaderElectionID names the Lease replicas elect their leader with.
const LeaderElectionID = "kubepact-controller.kubepact.io"

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// For tests, which run several controllers in one process: tuneManager,
// when set, adjusts the manager's options, and managerCreated is given the
// manager run creates.
var (
	tuneManager    func(*manager.Options)
	managerCreated func(manager.Manager)
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], nil, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return // the usage is printed
		}
		fmt.Fprintln(os.Stderr, "kubepact-controller:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	clusterID                    string
	roles                        []string
	kubeconfig                   string
	apiServerURL, apiServerCA    string
	policy                       string
	lifetime                     time.Duration
	localCACert, localCAKey      string
	keyNamespace                 string
	strict, offline              bool
	rootCAFile                   string
	leaderElect                  bool
	leaderElectionNamespace      string
	enrolmentNamespace           string
	enrolmentKeyRotation         string
	clusterKeyRotation           string
	metricsAddr, probeAddr       string
	metrics                      metricsFlags
	zap                          zap.Options
	leaseDuration, renewDeadline time.Duration
	workers                      int
	qps                          float64
	burst                        int
	printVersion                 bool
	tenantPodSecurity            string
	offer                        sliceOffer
	bounds                       sliceBounds
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	// pflag, as controller-runtime's and Kubernetes' own binaries: long
	// flags take two dashes (--api-server-url); a single dash is a
	// shorthand, and the controller defines none.
	fs := pflag.NewFlagSet("kubepact-controller", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	roles := fs.String("roles", "provider,consumer", "which reconcilers to run: provider, consumer or both")
	fs.StringVar(&o.clusterID, "cluster-id", "", "this cluster's ID; default: the one the cluster records (ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in --key-namespace), else a new one; recorded there when the cluster has none")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to use; default: in-cluster, else $KUBECONFIG or ~/.kube/config")
	fs.StringVar(&o.apiServerURL, "api-server-url", "", "provider: the https URL consumers reach this cluster's API server at; default: the one kube-public/cluster-info names; without either the controller is not ready")
	fs.StringVar(&o.apiServerCA, "api-server-ca-file", "", "provider: the PEM CA of that server; default: the kubeconfig's or the in-cluster CA")
	fs.StringVar(&o.policy, "policy", "compatible", "provider: compatible (Liqo consumers) or strict (transcript required)")
	fs.DurationVar(&o.lifetime, "certificate-lifetime", provider.DefaultCertificateLifetime, "provider: lifetime of issued certificates, re-signed between half and two thirds of it")
	fs.StringVar(&o.localCACert, "local-ca-cert-file", "", "provider: sign with this PEM CA certificate instead of the CSR API")
	fs.StringVar(&o.localCAKey, "local-ca-key-file", "", "provider: the PEM PKCS#8 key of that CA")
	fs.StringVar(&o.keyNamespace, "key-namespace", keys.DefaultNamespace, "the Liqo namespace: the cluster key Secret and the cluster ID record")
	fs.BoolVar(&o.strict, "strict", false, "consumer: a fresh TLS key per identity")
	fs.BoolVar(&o.offline, "offline", false, "consumer: do not confirm new kubeconfigs with the provider")
	fs.StringVar(&o.rootCAFile, "root-ca-file", "", "consumer: extra PEM roots for providers whose Identity has no CA")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among replicas")
	fs.StringVar(&o.enrolmentNamespace, "enrolment-namespace", "", "provider: where the enrolment key, its public record and the enrolment endpoint's certificate are kept (peering from Git); default: the pod's, else the leader election's")
	fs.StringVar(&o.enrolmentKeyRotation, "enrolment-key-rotation", "", "provider: the step of a rotation of the enrolment key: prepare (make the next key and publish it beside the key, for consumers to commit) or switch (sign with the next key from now on); default: none")
	fs.StringVar(&o.clusterKeyRotation, "cluster-key-rotation", "", "consumer: the step of a rotation of the cluster key: prepare (make the next key, publish it beside the key for providers to commit, and hand the key over to it in enrolment requests) or switch (the next key becomes the cluster key); default: none")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease; default: the pod's, else the kubeconfig context's")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a leader's Lease lasts without renewal")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long a leader tries to renew before it gives up")
	fs.IntVar(&o.workers, "workers", controllers.DefaultWorkers, "provider: nonce Secrets and Tenants reconciled at once, and handshakes in flight")
	fs.Float64Var(&o.qps, "kube-api-qps", 1000, "client-side limit of requests per second to the API server (about 21 per handshake: 1000 is 30 handshakes a second and room to spare)")
	fs.IntVar(&o.burst, "kube-api-burst", 2000, "client-side burst of requests to the API server")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint (HTTPS unless --metrics-secure=false); 0 disables it")
	o.metrics.bind(fs)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables them")
	fs.StringVar(&o.tenantPodSecurity, "tenant-namespace-pod-security", "", "pod-security.kubernetes.io/enforce level of the tenant namespaces it creates (privileged for a Liqo network module beside it); default: none")
	fs.BoolVar(&o.printVersion, "version", false, "print the version and exit")
	o.offer.bindFlags(fs)
	o.bounds.bindFlags(fs)
	// controller-runtime's zap options bind to a stdlib FlagSet: they come
	// in through pflag's AddGoFlagSet, under the same names.
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if o.printVersion {
		return o, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if o.clusterID != "" {
		if err := clusterid.Validate(o.clusterID); err != nil {
			return nil, fmt.Errorf("%w: --cluster-id: %w", errUsage, err)
		}
	}
	for r := range strings.SplitSeq(*roles, ",") {
		switch r = strings.TrimSpace(r); r {
		case "provider", "consumer":
			if !slices.Contains(o.roles, r) {
				o.roles = append(o.roles, r)
			}
		default:
			return nil, fmt.Errorf("%w: --roles: unknown role %q (provider, consumer)", errUsage, r)
		}
	}
	if o.policy != "compatible" && o.policy != "strict" {
		return nil, fmt.Errorf("%w: --policy: %q is neither compatible nor strict", errUsage, o.policy)
	}
	for _, rotation := range []struct{ flag, step string }{
		{"enrolment-key-rotation", o.enrolmentKeyRotation}, {"cluster-key-rotation", o.clusterKeyRotation},
	} {
		switch rotation.step {
		case "", "prepare", "switch":
		default:
			return nil, fmt.Errorf("%w: --%s: %q is neither prepare nor switch", errUsage, rotation.flag, rotation.step)
		}
	}
	switch o.tenantPodSecurity {
	case "", "privileged", "baseline", "restricted":
	default:
		return nil, fmt.Errorf("%w: --tenant-namespace-pod-security: %q is not privileged, baseline or restricted", errUsage, o.tenantPodSecurity)
	}
	if (o.localCACert == "") != (o.localCAKey == "") {
		return nil, fmt.Errorf("%w: --local-ca-cert-file and --local-ca-key-file go together", errUsage)
	}
	if err := o.bounds.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return o, nil
}

// podNamespace is the namespace the controller's pod runs in, "" outside a
// pod.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// kubeconfigLoader loads --kubeconfig, else clientcmd's default rules.
func (o *options) kubeconfigLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil)
}

// restConfig loads the kubeconfig of --kubeconfig, else the in-cluster
// configuration, else clientcmd's default rules.
func (o *options) restConfig() (*rest.Config, error) {
	if o.kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	return o.kubeconfigLoader().ClientConfig()
}

// leaseNamespace is where replicas elect their leader: the flag's, else
// the pod's own namespace, else (outside a pod) the kubeconfig context's.
func (o *options) leaseNamespace() (string, error) {
	if o.leaderElectionNamespace != "" {
		return o.leaderElectionNamespace, nil
	}
	if ns := podNamespace(); ns != "" {
		return ns, nil
	}
	ns, _, err := o.kubeconfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("%w: the leader election namespace: pass --leader-election-namespace: %w", errUsage, err)
	}
	return ns, nil
}

// run runs the controller until ctx ends. cfg, when not nil, is used instead
// of the one the flags name. --version prints to stdout, everything else
// goes to stderr.
func run(ctx context.Context, args []string, cfg *rest.Config, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.printVersion {
		fmt.Fprintln(stdout, "kubepact-controller", Version())
		return nil
	}
	ownsProcess := cfg == nil // main's call, not a test's running several in one process
	if cfg, err = o.clientConfig(cfg); err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	// client-go's own packages log through klog: the same logger, so a
	// line says what it says once, in the chosen encoding. klog's logger
	// is the process's, set once by the process's own run.
	if ownsProcess {
		klog.SetLogger(withQuietStop(ctx, log))
	}

	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := o.ensureClusterID(ctx, client, log); err != nil {
		return err
	}
	mgr, err := o.newManager(ctx, cfg, client, log)
	if err != nil {
		return err
	}
	if slices.Contains(o.roles, "provider") {
		if err := o.setupProvider(ctx, mgr, cfg, client, log); err != nil {
			return err
		}
	}
	if slices.Contains(o.roles, "consumer") {
		if err := o.setupConsumer(mgr); err != nil {
			return err
		}
	}
	if err := addHealthChecks(mgr); err != nil {
		return err
	}
	log.Info("starting", "cluster", o.clusterID, "roles", o.roles, "leaderElection", o.leaderElect)
	return mgr.Start(ctx)
}

// clientConfig returns the configuration of the controller's clients: cfg
// when not nil, else the one the flags name, with the flags' rate limits.
// With leader election, it settles the Lease's namespace too.
func (o *options) clientConfig(cfg *rest.Config) (*rest.Config, error) {
	var err error
	if cfg == nil {
		if cfg, err = o.restConfig(); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	if o.leaderElect {
		if o.leaderElectionNamespace, err = o.leaseNamespace(); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	return cfg, nil
}

// ensureClusterID settles this cluster's ID: --cluster-id, else the one
// recorded, else a new one, recorded; it logs a recording.
func (o *options) ensureClusterID(ctx context.Context, client kubernetes.Interface, log logr.Logger) error {
	id, recorded, err := kube.EnsureClusterID(ctx, client, o.clusterID, &kube.ClusterIDOptions{Namespace: o.keyNamespace})
	if err != nil {
		return fmt.Errorf("the cluster ID: %w", err)
	}
	switch {
	case recorded && o.clusterID == "":
		log.Info("generated this cluster's ID and recorded it", "cluster", id,
			"configMap", o.keyNamespace+"/"+clusterid.RecordName)
	case recorded:
		log.Info("recorded this cluster's ID", "cluster", id,
			"configMap", o.keyNamespace+"/"+clusterid.RecordName)
	}
	o.clusterID = id
	return nil
}

// newManager builds the controller-runtime manager: kubepact's scheme and
// cache, the metrics server, the probes and leader election. Its cache
// reads Secrets only where the controller works (secretScope).
func (o *options) newManager(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, log logr.Logger) (manager.Manager, error) {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	scope, err := controllers.NewSecretScope(ctx, client, o.secretNamespaces()...)
	if err != nil {
		return nil, err
	}
	mopts := manager.Options{
		Scheme:                        scheme,
		Logger:                        withQuietStop(ctx, log),
		Cache:                         controllers.CacheOptions(),
		NewCache:                      scope.NewCache,
		Metrics:                       o.metricsServer(),
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
	}
	if o.leaderElect {
		if mopts.LeaderElectionResourceLockInterface, err = leaderLock(cfg, o.leaderElectionNamespace); err != nil {
			return nil, err
		}
	}
	if tuneManager != nil {
		tuneManager(&mopts)
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if managerCreated != nil {
		managerCreated(mgr)
	}
	return mgr, nil
}

// enrolmentNS is where a provider keeps its enrolment key and the
// endpoint's certificate: --enrolment-namespace, else the pod's, else the
// Lease's.
func (o *options) enrolmentNS() string {
	return cmp.Or(o.enrolmentNamespace, podNamespace(), o.leaderElectionNamespace)
}

// secretNamespaces are the namespaces besides the tenant namespaces where
// the controller reads Secrets: the key namespace, and a provider's
// enrolment namespace.
func (o *options) secretNamespaces() []string {
	ns := []string{o.keyNamespace}
	if slices.Contains(o.roles, "provider") && o.enrolmentNS() != "" && o.enrolmentNS() != o.keyNamespace {
		ns = append(ns, o.enrolmentNS())
	}
	return ns
}

// setupProvider adds the provider role to mgr: its reconcilers, and its
// readiness, which fails while Tenants would be refused.
func (o *options) setupProvider(ctx context.Context, mgr manager.Manager, cfg *rest.Config, client kubernetes.Interface, log logr.Logger) error {
	pc, err := o.providerConfig(ctx, cfg, client)
	if err != nil {
		return err
	}
	if err := controllers.SetupProvider(mgr, pc); err != nil {
		return err
	}
	// Not ready while Tenants would be refused (no API server URL, a
	// peer role it binds missing): the roles are the ones its RBAC
	// may bind, read from a watch of each.
	peerRoles := []string{rbac.ControlPlaneClusterRoleName, rbac.VirtualKubeletClusterWideRoleName}
	watched := newWatchedRoles(client, peerRoles)
	if err := mgr.Add(watched); err != nil {
		return err
	}
	ready := newProviderReadiness(pc, watched, peerRoles,
		mgr.GetEventRecorder("kubepact-controller"), podReference(), podNamespace(),
		log.WithName("readiness"), clock.RealClock{})
	if err := mgr.Add(ready); err != nil {
		return err
	}
	return mgr.AddReadyzCheck(providerCheck, ready.Check)
}

// setupConsumer adds the consumer role's reconcilers to mgr.
func (o *options) setupConsumer(mgr manager.Manager) error {
	cc, err := o.consumerConfig()
	if err != nil {
		return err
	}
	return controllers.SetupConsumer(mgr, cc)
}

// addHealthChecks adds the checks every role shares: liveness answers
// while the process runs, readiness once the informer caches are synced.
func addHealthChecks(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("the informer caches are not synced")
		}
		return nil
	})
}

// providerConfig configures the provider role. The API server's URL is
// --api-server-url, else the one kube-public/cluster-info names (with its
// CA), else none: the provider then refuses Tenants with an Event.
func (o *options) providerConfig(ctx context.Context, cfg *rest.Config, client kubernetes.Interface) (controllers.ProviderConfig, error) {
	pc := controllers.ProviderConfig{
		ClusterID:            o.clusterID,
		Endpoint:             provider.Endpoint{Server: o.apiServerURL},
		Policy:               tenant.Compatible,
		CertificateLifetime:  o.lifetime,
		Workers:              o.workers,
		TenantPodSecurity:    o.tenantPodSecurity,
		EnrolmentNamespace:   o.enrolmentNS(),
		EnrolmentKeyRotation: controllers.KeyRotation(o.enrolmentKeyRotation),
	}
	if o.policy == "strict" {
		pc.Policy = tenant.Strict
	}
	o.offer.configure(&pc)
	o.bounds.configure(&pc)
	if pc.Endpoint.Server == "" {
		e, err := wire.EndpointFromClusterInfo(ctx, client)
		switch {
		case errors.Is(err, wire.ErrNoClusterInfo):
			return pc, o.signer(&pc)
		case err != nil:
			return pc, fmt.Errorf("the API server URL from kube-public/cluster-info (pass --api-server-url instead): %w", err)
		}
		pc.Endpoint = e
		if o.apiServerCA == "" {
			return pc, o.signer(&pc)
		}
	}
	if o.apiServerCA != "" {
		ca, err := os.ReadFile(o.apiServerCA)
		if err != nil {
			return pc, fmt.Errorf("--api-server-ca-file: %w", err)
		}
		pc.Endpoint.CA = ca
	} else {
		tls := rest.CopyConfig(cfg)
		if err := rest.LoadTLSFiles(tls); err != nil {
			return pc, fmt.Errorf("reading the API server's CA: %w", err)
		}
		pc.Endpoint.CA = tls.CAData
	}
	if len(pc.Endpoint.CA) == 0 {
		return pc, fmt.Errorf("%w: no CA for %s: pass --api-server-ca-file", errUsage, o.apiServerURL)
	}
	return pc, o.signer(&pc)
}

// signer sets the local CA of --local-ca-cert-file and --local-ca-key-file
// as pc's signer, when given.
func (o *options) signer(pc *controllers.ProviderConfig) error {
	if o.localCACert != "" {
		certPEM, err := os.ReadFile(o.localCACert)
		if err != nil {
			return fmt.Errorf("--local-ca-cert-file: %w", err)
		}
		keyPEM, err := os.ReadFile(o.localCAKey)
		if err != nil {
			return fmt.Errorf("--local-ca-key-file: %w", err)
		}
		key, err := keys.ParsePrivateKey(keyPEM)
		if err != nil {
			return fmt.Errorf("--local-ca-key-file: %w", err)
		}
		if pc.Signer, err = csr.NewLocalCA(certPEM, key, nil); err != nil {
			return fmt.Errorf("--local-ca-cert-file: %w", err)
		}
	}
	return nil
}

func (o *options) consumerConfig() (controllers.ConsumerConfig, error) {
	cc := controllers.ConsumerConfig{
		ClusterID:          o.clusterID,
		KeyNamespace:       o.keyNamespace,
		Strict:             o.strict,
		Offline:            o.offline,
		TenantPodSecurity:  o.tenantPodSecurity,
		ClusterKeyRotation: controllers.KeyRotation(o.clusterKeyRotation),
	}
	if o.rootCAFile != "" {
		roots, err := os.ReadFile(o.rootCAFile)
		if err != nil {
			return cc, fmt.Errorf("--root-ca-file: %w", err)
		}
		cc.RootCAs = roots
	}
	return cc, nil
}

// leaderLock is the Lease replicas elect their leader with, held under the
// name of the controller's Pod (POD_NAME) when it runs in one, else under a
// name of the process's own (its host name and a random suffix, as
// controller-runtime names it). A container the kubelet restarts in the same
// Pod so finds the Lease its previous run held and leads again at once,
// instead of waiting a LeaseDuration for it to expire; no other live process
// holds that name, as a Pod runs one instance of its container at a time.
// The lock records no Events: a restart writes nothing but the Lease. Each
// write of the Lease carries the holder's version (versionedLeases).
func leaderLock(cfg *rest.Config, namespace string) (resourcelock.Interface, error) {
	id := os.Getenv("POD_NAME")
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("naming the leader election's holder: %w", err)
		}
		id = host + "_" + string(uuid.NewUUID())
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "leader-election"))
	if err != nil {
		return nil, err
	}
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: LeaderElectionID},
		Client:     versionedLeases{LeasesGetter: client.CoordinationV1(), identity: id, version: Version()},
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}, nil
}

// Command kubepact-enrolment is a provider's enrolment endpoint: it serves
// each consumer the grant the provider's controller signed for it with the
// provider's enrolment key (package enrolhttp), over HTTPS, and does
// nothing else.
//
// Usage:
//
//	kubepact-enrolment [flags]
//
// It watches AuthorizedConsumers cluster-wide and serves status.grant of
// the one named by the consumer ID in GET /v1alpha1/grants/<consumer
// ID>?csr=<SHA-256 of the request's CSR>, only while its Ready condition
// is True for its current generation (status.observedGeneration). It
// answers from its cache: a request, whoever sends it, causes no request
// to the API server and no write. An unknown consumer, a grant not yet
// signed or not Ready, and a request for another CSR all get the same 404
// "not authorized"; a client address past its budget gets 429.
//
// It holds no private key but its TLS key: it never reads the enrolment
// key, the cluster key or any Secret. Its permissions are list and watch
// on authorizedconsumers.peering.kubepact.io
// (config/enrolment/rbac/cluster_role.yaml). Its TLS key pair is the
// mounted kubernetes.io/tls Secret kubepact-enrolment-tls, whose
// certificate the provider's controller issues with the enrolment key
// (enrol.ServingCertificate) and renews: the endpoint re-reads the files
// when they change (checked at most once a second) and at least once a
// minute, and keeps the pair it has while the new one does not load.
//
// Flags:
//
//	--kubeconfig FILE      kubeconfig to use; default: in-cluster, else $KUBECONFIG or ~/.kube/config
//	--bind-address ADDR    the HTTPS listener of the grants, /healthz and /readyz (default :8443)
//	--tls-cert-file FILE   PEM certificate (default /etc/kubepact-enrolment/tls/tls.crt)
//	--tls-key-file FILE    PEM key (default /etc/kubepact-enrolment/tls/tls.key)
//	--rate R               requests per second per client address, an IPv6 client by its /64 (default 1)
//	--burst N              requests at once per client address (default 5)
//	--version              print the version and exit
//	--help                 print the flags and exit
//
// plus controller-runtime's zap logging flags (--zap-log-level, ...).
//
// The rate limits apply per replica and per client address as the replica
// sees it: behind a proxy or a load balancer that does not keep the
// client's address, every client shares the proxy's budget.
//
// It speaks HTTP/1.1 over TLS 1.3 only. /healthz answers 200 while the
// process serves; /readyz answers 200 once the AuthorizedConsumers are in
// the cache and a TLS key pair is loaded, 503 before. On SIGTERM it stops
// accepting, finishes the requests in flight and exits 0; --help and
// --version exit 0, a bad command line 2, a failure 1.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubepact/kubepact/enrolhttp"
)

// Defaults of the flags.
const (
	DefaultBindAddress = ":8443"
	DefaultCertFile    = "/etc/kubepact-enrolment/tls/tls.crt"
	DefaultKeyFile     = "/etc/kubepact-enrolment/tls/tls.key"
	DefaultRate        = 1
	DefaultBurst       = 5
)

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// listening, when set, is given the address the endpoint listens at: tests
// bind port 0.
var listening func(net.Addr)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], nil, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return // the usage is printed
		}
		fmt.Fprintln(os.Stderr, "kubepact-enrolment:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	kubeconfig        string
	bindAddress       string
	certFile, keyFile string
	rate              float64
	burst             int
	printVersion      bool
	zap               zap.Options
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("kubepact-enrolment", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to use; default: in-cluster, else $KUBECONFIG or ~/.kube/config")
	fs.StringVar(&o.bindAddress, "bind-address", DefaultBindAddress, "address of the HTTPS listener of the grants, /healthz and /readyz")
	fs.StringVar(&o.certFile, "tls-cert-file", DefaultCertFile, "PEM TLS certificate, issued by the enrolment key (the Secret kubepact-enrolment-tls); re-read when it changes")
	fs.StringVar(&o.keyFile, "tls-key-file", DefaultKeyFile, "PEM TLS key of that certificate")
	fs.Float64Var(&o.rate, "rate", DefaultRate, "requests per second each client address may make (an IPv6 client by its /64), per replica")
	fs.IntVar(&o.burst, "burst", DefaultBurst, "requests each client address may make at once, per replica")
	fs.BoolVar(&o.printVersion, "version", false, "print the version and exit")
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case o.printVersion:
		return o, nil
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case !(o.rate > 0):
		return nil, fmt.Errorf("%w: --rate must be positive", errUsage)
	case o.burst < 1:
		return nil, fmt.Errorf("%w: --burst must be at least 1", errUsage)
	case o.certFile == "" || o.keyFile == "":
		return nil, fmt.Errorf("%w: --tls-cert-file and --tls-key-file are required", errUsage)
	}
	return o, nil
}

// restConfig loads --kubeconfig, else the in-cluster configuration, else
// clientcmd's default rules.
func (o *options) restConfig() (*rest.Config, error) {
	if o.kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
}

// run runs the endpoint until ctx ends. cfg, when not nil, is used instead
// of the one the flags name. --version prints to stdout, everything else
// goes to stderr.
func run(ctx context.Context, args []string, cfg *rest.Config, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.printVersion {
		fmt.Fprintln(stdout, "kubepact-enrolment", Version())
		return nil
	}
	logger := zap.New(zap.UseFlagOptions(&o.zap), zap.WriteTo(stderr))
	if cfg == nil { // main's call: client-go logs through the same logger
		klog.SetLogger(logger)
		if cfg, err = o.restConfig(); err != nil {
			return fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	informer, err := newInformer(cfg)
	if err != nil {
		return err
	}
	pair := newKeyPair(o.certFile, o.keyFile, time.Now, logger)
	if _, err := pair.get(); err != nil {
		// The Secret may be written after the endpoint starts: it is not
		// ready until then, and every handshake tries again.
		logger.Error(err, "no TLS key pair yet: not ready until one loads", "cert", o.certFile, "key", o.keyFile)
	}
	ln, err := net.Listen("tcp", o.bindAddress)
	if err != nil {
		return err
	}
	if listening != nil {
		listening(ln.Addr())
	}
	grants := enrolhttp.NewHandler(servedGrants(informer.GetStore()), enrolhttp.Limits{PerClient: rate.Limit(o.rate), Burst: o.burst}).
		WithLog(func(client, consumerID, why string) {
			// What the caller is not told, for the provider's readers.
			logger.Info("not authorized", "client", client, "consumer", consumerID, "why", why)
		})
	srv := newServer(routes(grants, informer.HasSynced, pair.loaded), pair, logger)

	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	informerDone := make(chan struct{})
	go func() { defer close(informerDone); informer.Run(informerCtx.Done()) }()
	go func() {
		if cache.WaitForCacheSync(informerCtx.Done(), informer.HasSynced) {
			logger.Info("the AuthorizedConsumers are cached", "count", len(informer.GetStore().ListKeys()))
		}
	}()
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	logger.Info("serving grants", "address", ln.Addr().String(), "version", Version(), "rate", o.rate, "burst", o.burst)

	select {
	case err = <-served: // it stopped on its own: a failure
		stopInformer()
		<-informerDone
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	logger.Info("stopping")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	<-served
	stopInformer()
	<-informerDone
	if err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	return nil
}

// newServer is the HTTPS server of h, its key pair pair's, with bounds
// on what a client may hold open.
func newServer(h http.Handler, pair *keyPair, logger logr.Logger) *http.Server {
	return &http.Server{
		Handler: h,
		TLSConfig: &tls.Config{
			// Consumers speak TLS 1.3 only (enrolhttp.Client), and so do
			// the kubelet's probes.
			MinVersion:     tls.VersionTLS13,
			GetCertificate: pair.getCertificate,
		},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    8 << 10,
		// HTTP/1.1 only: what consumers and probes speak, and no HTTP/2
		// stream multiplexing for a client to spend a replica's budget on.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		// Failed handshakes from scanners are routine: logged at V(1).
		ErrorLog: log.New(logWriter{logger.V(1)}, "", 0),
	}
}

// logWriter writes the lines of the standard library's logger to a logr
// logger, one Info each.
type logWriter struct{ logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.Info(string(trimNewline(p)))
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	if n := len(p); n > 0 && p[n-1] == '\n' {
		return p[:n-1]
	}
	return p
}

// routes are the endpoint's paths: the probes, and everything else to the
// grants' handler, which answers any path it does not serve with the 404
// an unknown consumer gets.
func routes(grants http.Handler, synced, loaded func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Header().Set("Cache-Control", "no-store")
			_, _ = io.WriteString(w, "ok\n")
		case "/readyz":
			w.Header().Set("Cache-Control", "no-store")
			switch {
			case !synced():
				http.Error(w, "the AuthorizedConsumers are not in the cache yet", http.StatusServiceUnavailable)
			case !loaded():
				http.Error(w, "no TLS key pair loaded", http.StatusServiceUnavailable)
			default:
				_, _ = io.WriteString(w, "ok\n")
			}
		default:
			grants.ServeHTTP(w, r)
		}
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/step"
)

// Roles of a cluster, as messages name them.
const (
	providerRole = "provider"
	consumerRole = "consumer"
)

// errMissingCRDs reports a cluster without the authentication.liqo.io CRDs.
var errMissingCRDs = errors.New("CRDs not installed")

// clusterFlags select one cluster and the Liqo namespace on it.
type clusterFlags struct {
	prefix     string // "" for the local cluster, "remote-" for the other one
	config     *genericclioptions.ConfigFlags
	kubeconfig string
	context    string
	namespace  string
	clusterID  string
	env        *env
}

// newClusterFlags registers kubectl's connection flags (ConfigFlags but its
// namespace: -n here is the Liqo namespace, as liqoctl has it), with prefix
// before each name, and returns them.
func newClusterFlags(f *flags, prefix, role string) *clusterFlags {
	c := &clusterFlags{prefix: prefix, config: genericclioptions.NewConfigFlags(false), env: f.env}
	c.config.KubeConfig, c.config.Context, c.config.Namespace = &c.kubeconfig, &c.context, nil
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.config.AddFlags(fs)
	out := pflag.NewFlagSet(prefix+"connection", pflag.ContinueOnError)
	fs.VisitAll(func(fl *pflag.Flag) {
		fl.Usage = strings.TrimSuffix(fl.Usage, ".") + " (" + role + " cluster)"
		if prefix != "" {
			fl.Name, fl.Shorthand = prefix+fl.Name, ""
		}
		out.AddFlag(fl)
	})
	f.connection = append(f.connection, out)
	return c
}

// localFlags registers kubectl's connection flags (--kubeconfig, --context,
// --as, ...), -n/--namespace and --cluster-id; role is the local cluster's
// role in the command.
func localFlags(f *flags, role string) *clusterFlags {
	c := newClusterFlags(f, "", role)
	f.StringVar(&c.namespace, "namespace", keys.DefaultNamespace, "Liqo namespace of the "+role+" cluster, holding its key and cluster ID")
	f.alias("n", "namespace")
	f.StringVar(&c.clusterID, "cluster-id", "", "ID of the "+role+" cluster; must equal the one it records, if any (default CLUSTER_ID of the ConfigMap labelled "+
		clusterid.RecordLabel+"="+clusterid.RecordLabelValue+" in the Liqo namespace)")
	return c
}

// remoteFlags registers the same flags for the other cluster, prefixed
// with remote- as liqoctl names them: --remote-kubeconfig,
// --remote-context, --remote-namespace, --remote-cluster-id, ...
func remoteFlags(f *flags, role string) *clusterFlags {
	c := newClusterFlags(f, "remote-", role)
	f.StringVar(&c.namespace, "remote-namespace", keys.DefaultNamespace, "Liqo namespace of the "+role+" cluster, holding its cluster ID")
	f.StringVar(&c.clusterID, "remote-cluster-id", "", "ID of the "+role+" cluster; must equal the one it records, if any (default CLUSTER_ID of the ConfigMap labelled "+
		clusterid.RecordLabel+"="+clusterid.RecordLabelValue+" in its Liqo namespace)")
	return c
}

// timeoutFlag registers --timeout.
func timeoutFlag(f *flags) *time.Duration {
	return f.Duration("timeout", 2*time.Minute, "give up after this long")
}

// nonceTTLFlag registers --nonce-ttl, the lifetime of the nonces the
// provider issues. A nonce keeps the TTL it was issued with; the flag
// judges only a stored nonce that records none (one issued by Liqo).
func nonceTTLFlag(f *flags) *time.Duration {
	return f.Duration("nonce-ttl", nonce.DefaultTTL,
		"how long a nonce the provider issues stays valid; a nonce issued earlier keeps its own TTL, this one judges only a nonce that records none (issued by Liqo)")
}

// cluster is a connected cluster.
type cluster struct {
	role      string
	flags     *clusterFlags
	config    *rest.Config
	client    kubernetes.Interface
	dynamic   dynamic.Interface
	typed     client.Client
	namespace string // the Liqo namespace
}

// check reports flags that cannot work, before anything is loaded.
func (c *clusterFlags) check(role string) error {
	if c.prefix != "" && c.kubeconfig == "" && c.context == "" {
		return usagef("--%skubeconfig or --%scontext is required: the kubeconfig of the %s cluster", c.prefix, c.prefix, role)
	}
	if c.clusterID != "" {
		if err := clusterid.Validate(c.clusterID); err != nil {
			return usagef("--%scluster-id: %v", c.prefix, err)
		}
	}
	return nil
}

// restConfig loads the client configuration the flags select.
func (c *clusterFlags) restConfig(role string) (*rest.Config, error) {
	cfg, err := c.config.ToRawKubeConfigLoader().ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, usagef("no kubeconfig for the %s cluster: pass --%skubeconfig or set KUBECONFIG", role, c.prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of the %s cluster: %w", role, err)
	}
	cfg.QPS, cfg.Burst = 50, 300 // kubectl's defaults
	if c.env != nil && c.env.wrapTransport != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return c.env.wrapTransport(role, rt) })
	}
	return cfg, nil
}

// connect builds the clients of the cluster the flags select.
func (c *clusterFlags) connect(role string) (*cluster, error) {
	if err := c.check(role); err != nil {
		return nil, err
	}
	cfg, err := c.restConfig(role)
	if err != nil {
		return nil, err
	}
	return newCluster(role, c, cfg)
}

// newCluster builds the clients of a cluster over cfg.
func newCluster(role string, c *clusterFlags, cfg *rest.Config) (*cluster, error) {
	cl := &cluster{role: role, flags: c, config: cfg, namespace: c.namespace}
	var err error
	if cl.client, err = kube.NewClientset(cfg, nil); err != nil {
		return nil, fmt.Errorf("%s cluster: %w", role, err)
	}
	if cl.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("%s cluster: %w", role, err)
	}
	if cl.typed, err = kube.NewClient(cfg, nil); err != nil {
		return nil, fmt.Errorf("%s cluster: %w", role, err)
	}
	return cl, nil
}

// clusterID returns the cluster's own ID: the one it records (see
// recordedID), which the flag, when given, must equal (else a
// *clusterid.ConflictError, before anything is written); else the flag's.
func (c *cluster) clusterID(ctx context.Context) (string, error) {
	flag := "--" + c.flags.prefix + "cluster-id"
	recorded, where, err := c.recordedID(ctx)
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the ID of the %s cluster: %w", c.role, err)
	case recorded != "" && c.flags.clusterID != "" && recorded != c.flags.clusterID:
		return "", fmt.Errorf("%s of the %s cluster: %w", flag, c.role,
			&clusterid.ConflictError{Asked: c.flags.clusterID, Recorded: recorded, Where: where})
	case recorded != "":
		return recorded, nil
	case c.flags.clusterID != "":
		return c.flags.clusterID, nil
	}
	return "", usagef("cannot tell the ID of the %s cluster: it has no ConfigMap labelled %s=%s in %s; pass %s",
		c.role, clusterid.RecordLabel, clusterid.RecordLabelValue, c.namespace, flag)
}

// recordedID returns the ID the cluster records, as liqoctl reads it: the
// ConfigMap labelled clusterid.RecordLabel in the Liqo namespace (or, for a
// client that may get but not list ConfigMaps there, the one named
// clusterid.RecordName); "" when there is none. where names the record.
func (c *cluster) recordedID(ctx context.Context) (id, where string, err error) {
	where = fmt.Sprintf("the ConfigMap labelled %s=%s in %s", clusterid.RecordLabel, clusterid.RecordLabelValue, c.namespace)
	id, err = kube.RecordedClusterID(ctx, c.client, c.namespace)
	if !apierrors.IsForbidden(err) {
		return id, where, err
	}
	where = fmt.Sprintf("ConfigMap %s/%s", c.namespace, clusterid.RecordName)
	cm, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, clusterid.RecordName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", where, nil
	case err != nil:
		return "", where, fmt.Errorf("reading %s: %w", where, err)
	case cm.Labels[clusterid.RecordLabel] != clusterid.RecordLabelValue:
		return "", where, nil
	}
	id = cm.Data[clusterid.RecordKey]
	if err := clusterid.Validate(id); err != nil {
		return "", where, fmt.Errorf("%s, key %s: %w", where, clusterid.RecordKey, err)
	}
	return id, where, nil
}

// endpoint returns how consumers reach this cluster's API server: the
// kubeconfig's server, or serverURL when set, and the kubeconfig's CA.
func (c *cluster) endpoint(serverURL string) (provider.Endpoint, error) {
	cfg := rest.CopyConfig(c.config)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return provider.Endpoint{}, fmt.Errorf("reading the CA of the %s cluster: %w", c.role, err)
	}
	if len(cfg.CAData) == 0 {
		return provider.Endpoint{}, fmt.Errorf("the kubeconfig of the %s cluster has no certificate authority for its API server: "+
			"consumers need it to trust the server; use a kubeconfig with certificate-authority-data", c.role)
	}
	if serverURL == "" {
		serverURL = cfg.Host
	}
	return provider.Endpoint{Server: serverURL, CA: cfg.CAData}, nil
}

// ensureCRDs installs the authentication.liqo.io CRDs when install is set,
// and otherwise checks that the cluster serves the given resources.
func (c *cluster) ensureCRDs(ctx context.Context, install bool, resources ...string) error {
	if install {
		if err := kube.InstallCRDs(ctx, c.config); err != nil {
			return fmt.Errorf("installing the CRDs on the %s cluster: %w", c.role, err)
		}
		return nil
	}
	return requireCRDs(c.client.Discovery(), c.role, resources...)
}

// requireCRDs checks through discovery that a cluster serves resources of
// authentication.liqo.io/v1beta1.
func requireCRDs(d discovery.DiscoveryInterface, role string, resources ...string) error {
	gv := authv1beta1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discovering %s on the %s cluster: %w", gv, role, err)
	}
	var missing []string
	for _, r := range resources {
		if list == nil || !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r }) {
			missing = append(missing, r+"."+authv1beta1.GroupName)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the %s cluster does not serve %v: install Liqo there, or pass --install-crds to install the CRDs",
			errMissingCRDs, role, missing)
	}
	return nil
}

// provider returns the Provider of this cluster, whose ID is id.
func (c *cluster) provider(id string, endpoint provider.Endpoint, opts *provider.Options) (*provider.Provider, error) {
	nonces := kube.NewNonceStore(c.client)
	return provider.New(id, endpoint, provider.Ports{
		Core: provider.Core{
			Namespaces:   kube.NewNamespaces(c.client),
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(c.typed),
			Signer:       kube.NewCSRSigner(c.client, kube.NewApprover(c.client)),
			Certificates: kube.NewCertificateCache(c.client),
			RBAC:         kube.NewRBAC(c.client),
			Commitments:  kube.NewCommitments(c.typed),
		},
		SlicePorts: provider.SlicePorts{
			ClusterRBAC: kube.NewRBAC(c.client),
			Slices:      kube.NewSliceStore(c.typed),
		},
		Lifecycle: kube.NewLifecyclePorts(c.client, c.typed),
	}, opts)
}

// consumer returns the Consumer of this cluster, whose ID is id, keeping its
// cluster key and its identities' own keys in the Liqo namespace. With a
// reviewer it confirms Identities online with the provider; nil applies
// them offline.
func (c *cluster) consumer(id string, reviewer identity.Reviewer, opts *consumer.Options) (*consumer.Consumer, error) {
	var o consumer.Options
	if opts != nil {
		o = *opts
	}
	o.KeyNamespace = c.namespace // where the keys are, which their attestations name
	return consumer.New(id, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(c.client),
			Keys:       kube.NewKeyStore(c.client, c.namespace),
			Identities: kube.NewIdentityStore(c.typed),
			Secrets:    kube.NewSecretWriter(c.client),
		},
		IdentityKeys: kube.NewKeyring(c.client, c.namespace),
		Reviewer:     reviewer,
		Slices:       kube.NewSliceStore(c.typed),
	}, &o)
}

// printSteps returns an observer that prints each completed step as liqoctl
// does.
func printSteps(w io.Writer) func(step.Done) {
	return func(s step.Done) { fmt.Fprintf(w, " INFO  %s\n", s.Name) }
}

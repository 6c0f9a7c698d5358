package wire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/config/crd"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// Rate limits of Connect's clients when neither ConnectOptions nor the
// rest.Config sets them: kubectl's, which fit about two handshakes a second
// and ten at once on a provider (see Connect).
const (
	DefaultQPS   float32 = 50
	DefaultBurst int     = 300
)

// ErrCRDNotServed reports that a cluster does not serve an
// authentication.liqo.io resource kubepact reads or writes. The error is a
// *CRDNotServedError naming them.
var ErrCRDNotServed = errors.New("authentication.liqo.io CustomResourceDefinitions are not served")

// CRDNotServedError names the CustomResourceDefinitions of
// authentication.liqo.io/v1beta1 that a cluster does not serve: install
// Liqo, or call kube.InstallCRDs.
type CRDNotServedError struct {
	// Server is the host (and port) of the API server asked.
	Server string
	// CRDs are the names of the CRDs missing, sorted, for example
	// "tenants.authentication.liqo.io".
	CRDs []string
}

func (e *CRDNotServedError) Error() string {
	return fmt.Sprintf("%s does not serve authentication.liqo.io/v1beta1 %s: install Liqo, or kubepact's CRDs "+
		"(connect with wire.ConnectOptions{Install: true}, or kube.InstallCRDs)",
		e.Server, strings.Join(e.CRDs, ", "))
}

// Is makes errors.Is(err, ErrCRDNotServed) true.
func (e *CRDNotServedError) Is(target error) bool { return target == ErrCRDNotServed }

// ErrNoClusterID reports that Cluster.Provider or Cluster.Consumer was
// given no cluster ID while the cluster records none and
// ConnectOptions.Install, which would record one, was not set.
var ErrNoClusterID = errors.New("no cluster ID given, and the cluster records none")

// ClusterIDMismatchError reports a cluster ID given to Cluster.Provider or
// Cluster.Consumer that differs from the one the cluster records, which
// its controllers (kubepact's or Liqo's) and liqoctl use: a peer would be
// told one ID by this process and another by them, and refuse one of the
// two. It wraps clusterid.ErrConflict.
type ClusterIDMismatchError struct {
	// Role is "provider" or "consumer".
	Role string
	// Given is the ID asked for, Recorded the cluster's.
	Given, Recorded string
	// Where names the record, for example "the ConfigMap labelled
	// app.kubernetes.io/name=clusterid-configmap in liqo".
	Where string
}

func (e *ClusterIDMismatchError) Error() string {
	return fmt.Sprintf("%s %q: %v: %s records %q, which the cluster's controllers and liqoctl use: pass \"\" to use it",
		e.Role, e.Given, clusterid.ErrConflict, e.Where, e.Recorded)
}

// Unwrap returns clusterid.ErrConflict.
func (e *ClusterIDMismatchError) Unwrap() error { return clusterid.ErrConflict }

// setupTimeout bounds what Connect, Cluster.Provider and Cluster.Consumer
// do beyond their discovery request: reading and recording the cluster ID,
// and with ConnectOptions.Install, installing CRDs and peer roles.
const setupTimeout = time.Minute

// ConnectOptions tunes Connect. The zero value, like a nil pointer, takes
// the Endpoint from cfg (EndpointFromConfig), keeps cfg's rate limits or
// else uses DefaultQPS and DefaultBurst, signs through the CSR API, keeps
// keys in keys.DefaultNamespace and confirms Identities online.
type ConnectOptions struct {
	// Endpoint, when set, is how consumers reach this cluster's API server
	// (a load balancer's URL, say), instead of cfg's Host and CA.
	Endpoint *provider.Endpoint
	// QPS and Burst, when positive, replace cfg's QPS and Burst (and any
	// RateLimiter of cfg). Zero keeps cfg's own, and DefaultQPS and
	// DefaultBurst where cfg leaves them zero.
	QPS   float32
	Burst int
	// Signer, when set, signs consumers' certificates instead of the CSR
	// API, as ProviderPortsOptions.Signer.
	Signer csr.Signer
	// KeyNamespace, Offline and Reviewer configure the consumer's ports, as
	// in ConsumerPortsOptions. KeyNamespace, the Liqo namespace, also holds
	// the cluster's ID record (see kube.EnsureClusterID).
	KeyNamespace string
	Offline      bool
	Reviewer     *kube.IdentityReviewerOptions
	// Install makes the cluster ready for a handshake, creating only what
	// it lacks and changing nothing it has: the authentication.liqo.io
	// CRDs that are not served (kube.InstallCRDs), the peer ClusterRoles that
	// are missing (rbac.PeerRoles, applied as rbac.Install does), and,
	// when Provider or Consumer is called while the cluster records no
	// cluster ID, the record of the ID they use (kube.EnsureClusterID: the one
	// given, or a new one), where Liqo and kubepact-controller read it. It
	// needs a cluster administrator's rights. Each install step is bounded
	// by a minute.
	Install bool
}

// Cluster is one Kubernetes cluster connected with Connect: the ports of a
// provider and of a consumer over one clientset, one controller-runtime
// client, one HTTP client and one rate limiter, and the Endpoint consumers
// reach it at. It is safe for concurrent use, and one Cluster may be both a
// provider and a consumer.
type Cluster struct {
	client   kubernetes.Interface
	typed    client.Client
	endpoint provider.Endpoint
	// endpointErr is why cfg gives no Endpoint: it fails Provider only,
	// since a consumer needs none.
	endpointErr error
	provider    provider.Ports
	consumer    consumer.Ports

	// idNamespace holds the cluster's ID record; install is
	// ConnectOptions.Install.
	idNamespace string
	install     bool
	// mu guards id, the cluster's recorded ID once read or recorded.
	mu sync.Mutex
	id string
}

// Connect builds every port of kubepact over the API server of cfg and
// checks, with one discovery request, that the server serves the
// authentication.liqo.io CRDs kubepact uses (Tenant, Identity,
// ResourceSlice, Renew), so that a missing one fails here and not in the
// middle of a handshake: it returns a *CRDNotServedError (errors.Is
// ErrCRDNotServed) naming them, unless opts.Install is set, which installs
// them, and the missing peer ClusterRoles. cfg itself is not changed.
// Other errors are kube.ErrNoServer for a nil cfg, kube.ErrRootCAsNotPEM for a
// refused opts.Reviewer, client-go's for a cfg that cannot make a client,
// the discovery request's own (an unreachable server, say), and those of
// kube.InstallCRDs and of applying a ClusterRole; none quotes cfg's
// credentials.
//
// Connect reads nothing else: the cluster's ID is read, once, by the first
// call of Cluster.Provider or Cluster.Consumer.
//
// Rate limits: one handshake makes about 22 requests to the provider's API
// server when its certificate is signed through the CSR API (19 with a
// local signer) and 7 to 9 to the consumer's. Every request takes a token
// of the Cluster's limiter, so a provider serving many consumers needs
// about 22 QPS per handshake a second and a burst of 22 per concurrent
// handshake: DefaultQPS (50) and DefaultBurst (300) fit two handshakes a
// second and a dozen at once; client-go's own defaults (5 and 10) would
// make a lone handshake wait about 2 seconds for tokens.
func Connect(cfg *rest.Config, opts *ConnectOptions) (*Cluster, error) {
	var o ConnectOptions
	if opts != nil {
		o = *opts
	}
	if cfg == nil {
		return nil, fmt.Errorf("connect: %w: nil rest config", kube.ErrNoServer)
	}
	if o.QPS <= 0 && cfg.QPS == 0 && cfg.RateLimiter == nil {
		o.QPS = DefaultQPS
	}
	if o.Burst <= 0 && cfg.Burst <= 0 && cfg.RateLimiter == nil {
		o.Burst = DefaultBurst
	}
	cs, typed, err := newClients(cfg, o.QPS, o.Burst)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c := &Cluster{client: cs, typed: typed, idNamespace: o.KeyNamespace, install: o.Install}
	if c.idNamespace == "" {
		c.idNamespace = keys.DefaultNamespace
	}
	err = requireCRDs(cs.Discovery(), serverHost(cfg))
	if o.Install {
		err = install(cfg, cs, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if o.Endpoint != nil {
		c.endpoint = provider.Endpoint{Server: o.Endpoint.Server, CA: append([]byte(nil), o.Endpoint.CA...)}
	} else {
		c.endpoint, c.endpointErr = EndpointFromConfig(cfg)
	}
	c.provider = providerPorts(cs, typed, o.Signer)
	if c.consumer, err = consumerPorts(cs, typed, o.KeyNamespace, o.Offline, o.Reviewer); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// Endpoint returns how consumers reach this cluster's API server:
// ConnectOptions.Endpoint, else what EndpointFromConfig read from the
// rest.Config, else its error (kube.ErrNoServer, ErrNotHTTPS, ErrNoCA or a
// *fs.PathError).
func (c *Cluster) Endpoint() (provider.Endpoint, error) {
	if c.endpointErr != nil {
		return provider.Endpoint{}, c.endpointErr
	}
	return provider.Endpoint{Server: c.endpoint.Server, CA: append([]byte(nil), c.endpoint.CA...)}, nil
}

// ProviderPorts returns the ports of a provider.Provider over this cluster,
// as NewProviderPorts does: all but SlicePolicy and StorageClasses, which
// are policy (set them on a copy to offer StorageClasses with
// kube.NewStorageClasses). Each call returns the same ports.
func (c *Cluster) ProviderPorts() provider.Ports { return c.provider }

// ConsumerPorts returns every port of a consumer.Consumer over this
// cluster, as NewConsumerPorts does. Each call returns the same ports.
func (c *Cluster) ConsumerPorts() consumer.Ports { return c.consumer }

// Provider returns the provider.Provider of this cluster, reached by
// consumers at Endpoint, whose ID is the one the cluster records (see
// ClusterID). clusterID, when not empty, must be that ID, else a
// *ClusterIDMismatchError; on a cluster that records none it is used (and
// recorded with ConnectOptions.Install). It returns Endpoint's error when
// the cluster has no Endpoint, ClusterID's, and provider.New's.
func (c *Cluster) Provider(clusterID string, opts *provider.Options) (*provider.Provider, error) {
	endpoint, err := c.Endpoint()
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	id, err := c.clusterID("provider", clusterID)
	if err != nil {
		return nil, err
	}
	return provider.New(id, endpoint, c.provider, opts)
}

// Consumer returns the consumer.Consumer of this cluster, whose ID is the
// one the cluster records, or clusterID, as for Provider. It returns
// ClusterID's errors and consumer.New's.
func (c *Cluster) Consumer(clusterID string, opts *consumer.Options) (*consumer.Consumer, error) {
	id, err := c.clusterID("consumer", clusterID)
	if err != nil {
		return nil, err
	}
	var o consumer.Options
	if opts != nil {
		o = *opts
	}
	if o.KeyNamespace == "" {
		// The namespace of the keys, which their attestations name.
		o.KeyNamespace = c.idNamespace
	}
	return consumer.New(id, c.consumer, &o)
}

// ClusterID returns the ID the cluster records in ConnectOptions.KeyNamespace
// (kube.RecordedClusterID), which its controllers and liqoctl use, read with the
// first call and kept; "" when it records none. Errors are
// kube.RecordedClusterID's.
func (c *Cluster) ClusterID() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recorded()
}

// recorded is ClusterID, with c.mu held.
func (c *Cluster) recorded() (string, error) {
	if c.id != "" {
		return c.id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	id, err := kube.RecordedClusterID(ctx, c.client, c.idNamespace)
	if err != nil {
		return "", fmt.Errorf("reading the cluster ID: %w", err)
	}
	c.id = id
	return id, nil
}

// clusterID returns the ID role takes: the recorded one, which given, when
// set, must equal; else given, recorded when c installs; else, when c
// installs, a new one, recorded. A client forbidden to read the record
// gets given unchecked.
func (c *Cluster) clusterID(role, given string) (string, error) {
	if given != "" {
		if err := clusterid.Validate(given); err != nil {
			return "", fmt.Errorf("%s: %w", role, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	recorded, err := c.recorded()
	switch {
	case err != nil && given != "" && !c.install && apierrors.IsForbidden(err):
		return given, nil
	case err != nil:
		return "", fmt.Errorf("%s: %w", role, err)
	case recorded != "":
		return c.check(role, given, recorded)
	case given == "" && !c.install:
		return "", fmt.Errorf("%s: %w in the ConfigMap labelled %s=%s in %s: pass the cluster's ID, or connect with Install to record a new one",
			role, ErrNoClusterID, clusterid.RecordLabel, clusterid.RecordLabelValue, c.idNamespace)
	case !c.install:
		return given, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	id, _, err := kube.EnsureClusterID(ctx, c.client, given, &kube.ClusterIDOptions{Namespace: c.idNamespace})
	var conflict *clusterid.ConflictError
	if errors.As(err, &conflict) {
		// Recorded by another writer since it was read.
		c.id = conflict.Recorded
		return c.check(role, given, conflict.Recorded)
	}
	if err != nil {
		return "", fmt.Errorf("%s: recording the cluster ID: %w", role, err)
	}
	c.id = id
	return id, nil
}

// check returns recorded, or a *ClusterIDMismatchError when given is set
// and differs from it.
func (c *Cluster) check(role, given, recorded string) (string, error) {
	if given != "" && given != recorded {
		return "", &ClusterIDMismatchError{Role: role, Given: given, Recorded: recorded,
			Where: fmt.Sprintf("the ConfigMap labelled %s=%s in %s", clusterid.RecordLabel, clusterid.RecordLabelValue, c.idNamespace)}
	}
	return recorded, nil
}

// install completes a cluster for ConnectOptions.Install: given notServed,
// the result of requireCRDs, it installs the CRDs when some are missing
// and checks again, then creates the peer ClusterRoles that do not exist.
// It returns notServed when that is another error than a
// *CRDNotServedError, and changes nothing then.
func install(cfg *rest.Config, cs kubernetes.Interface, notServed error) error {
	var missing *CRDNotServedError
	if notServed != nil && !errors.As(notServed, &missing) {
		return notServed
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if missing != nil {
		if err := kube.InstallCRDs(ctx, cfg); err != nil {
			return err
		}
		// Established is not yet served: discovery may lag behind it by
		// a moment, so ask again until the CRDs are served or ctx ends.
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			switch err := requireCRDs(cs.Discovery(), serverHost(cfg)); {
			case errors.As(err, &missing):
				notServed = err
				return false, nil
			case err != nil:
				return false, err
			}
			return true, nil
		})
		if err != nil {
			if ctx.Err() != nil && notServed != nil {
				return notServed
			}
			return err
		}
	}
	roles := kube.NewRBAC(cs)
	for _, r := range rbac.PeerRoles() {
		switch ok, err := roles.HasClusterRole(ctx, r.Name); {
		case err != nil:
			return err
		case !ok:
			if err := roles.ApplyClusterRole(ctx, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Clientset returns the Cluster's clientset, for the ports Connect does not
// build (kube.NewRBAC for rbac.Install, kube.NewTokenStore, saidentity's); it shares
// the Cluster's rate limiter.
func (c *Cluster) Clientset() kubernetes.Interface { return c.client }

// Client returns the Cluster's controller-runtime client (kube.NewClient), which
// shares the Cluster's rate limiter.
func (c *Cluster) Client() client.Client { return c.typed }

// providerPorts returns the ports of a provider over one clientset and one
// controller-runtime client; a nil signer signs through the CSR API.
func providerPorts(cs kubernetes.Interface, typed client.Client, signer csr.Signer) provider.Ports {
	if signer == nil {
		signer = kube.NewCSRSigner(cs, kube.NewApprover(cs))
	}
	rbac := kube.NewRBAC(cs)
	nonces := kube.NewNonceStore(cs)
	return provider.Ports{
		Core: provider.Core{
			Namespaces:   kube.NewNamespaces(cs),
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(typed),
			Signer:       signer,
			Certificates: kube.NewCertificateCache(cs),
			RBAC:         rbac,
			Commitments:  kube.NewCommitments(typed),
		},
		SlicePorts: provider.SlicePorts{
			ClusterRBAC: rbac,
			Slices:      kube.NewSliceStore(typed),
		},
		Lifecycle: kube.NewLifecyclePorts(cs, typed),
	}
}

// consumerPorts returns the ports of a consumer over one clientset and one
// controller-runtime client, keeping keys in keyNamespace (empty:
// keys.DefaultNamespace), with a kube.IdentityReviewer unless offline.
func consumerPorts(cs kubernetes.Interface, typed client.Client, keyNamespace string, offline bool, reviewer *kube.IdentityReviewerOptions) (consumer.Ports, error) {
	if keyNamespace == "" {
		keyNamespace = keys.DefaultNamespace
	}
	ports := consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(cs),
			Keys:       kube.NewKeyStore(cs, keyNamespace),
			Identities: kube.NewIdentityStore(typed),
			Secrets:    kube.NewSecretWriter(cs),
		},
		IdentityKeys: kube.NewKeyring(cs, keyNamespace),
		Slices:       kube.NewSliceStore(typed),
	}
	if !offline {
		r, err := kube.NewIdentityReviewer(reviewer)
		if err != nil {
			return consumer.Ports{}, err
		}
		ports.Reviewer = r
	}
	return ports, nil
}

// requireCRDs asks d, in one request, which resources of
// authentication.liqo.io/v1beta1 the server serves, and returns a
// *CRDNotServedError naming the CRDs of crd.Manifests it does not.
func requireCRDs(d discovery.DiscoveryInterface, server string) error {
	gv := authv1beta1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discovering %s: %w", gv, err)
	}
	want, err := crdNames()
	if err != nil {
		return err
	}
	var missing []string
	for _, name := range want {
		plural, _, _ := strings.Cut(name, ".")
		if list == nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return &CRDNotServedError{Server: server, CRDs: missing}
	}
	return nil
}

// serverHost returns the host and port of cfg's API server, without any
// user info a password could hide in, or "the API server" when cfg.Host is
// not a URL.
func serverHost(cfg *rest.Config) string {
	u, _, err := rest.DefaultServerURL(cfg.Host, "", schema.GroupVersion{}, true)
	if err != nil || u.Host == "" {
		return "the API server"
	}
	return u.Host
}

// crdNames returns the names of the CRDs of crd.Manifests, such as
// "tenants.authentication.liqo.io", sorted.
func crdNames() ([]string, error) {
	var names []string
	for _, manifest := range crd.Manifests() {
		var m struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(manifest, &m); err != nil {
			return nil, fmt.Errorf("decoding CRD manifest: %w", err)
		}
		names = append(names, m.Metadata.Name)
	}
	sort.Strings(names)
	return names, nil
}

package controllers

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Names of the controllers, also the reporting controllers of their Events.
const (
	nonceControllerName       = "kubepact-nonce"
	tenantControllerName      = "kubepact-tenant"
	signedNonceControllerName = "kubepact-signed-nonce"
	identityControllerName    = "kubepact-identity"
)

// ProviderConfig configures SetupProvider. ClusterID is required; the zero
// value of every other field is a documented default.
type ProviderConfig struct {
	// ClusterID is the provider's cluster ID.
	ClusterID string
	// Endpoint is how consumers reach this cluster's API server: the https
	// URL and the PEM CA bundle of its serving certificate. It goes into
	// every Tenant's status. Without a Server the provider still issues
	// nonces, and refuses every Tenant and ResourceSlice with an
	// APIServerURLUnknown Event (provider.ErrNoEndpoint) until it is
	// configured; a Server needs its CA.
	Endpoint provider.Endpoint
	// Policy is how strictly Tenants are checked: tenant.Compatible (the
	// default) accepts Liqo consumers, tenant.Strict requires a transcript.
	Policy tenant.Policy
	// Signer signs the consumers' CSRs. Nil uses the Kubernetes CSR API
	// (kube.CSRSigner with NoWait and a Wait of CSRWait): the Tenant
	// reconciler submits and approves a CertificateSigningRequest, waits
	// up to CSRWait for it, else returns and is requeued by a watch on
	// CertificateSigningRequests when it is issued. A signer that
	// signs at once, such as a *csr.LocalCA, needs no watch. A
	// *kube.CSRSigner passed here must be made with NoWait, or it blocks a
	// worker until its certificate is issued; the watch is set up for it.
	Signer csr.Signer
	// CertificateLifetime is the lifetime requested for certificates; zero
	// means provider.DefaultCertificateLifetime.
	CertificateLifetime time.Duration
	// NonceTTL is how long a nonce the provider issues stays valid; zero
	// means nonce.DefaultTTL. A stored nonce keeps the TTL it was issued
	// with (provider.Options.NonceTTL).
	NonceTTL time.Duration
	// TenantPodSecurity, when set ("privileged", "baseline" or
	// "restricted"), is the pod-security.kubernetes.io/enforce label of the
	// tenant namespaces this reconciler creates, set at creation only and
	// never on a namespace that exists. Empty, the default, sets none: the
	// cluster's default applies. Liqo labels its tenant namespaces
	// "privileged" because its network gateways run there; set that only
	// when a Liqo network module runs beside kubepact.
	TenantPodSecurity string
	// Workers is how many nonce Secrets, and how many Tenants, are
	// reconciled at once (controller-runtime's MaxConcurrentReconciles),
	// and how many handshakes may be in flight, from the nonce issued to
	// the Tenant settled (see HandshakeHold); zero means DefaultWorkers. An
	// object is never reconciled by two workers at once.
	Workers int
	// Clock is the time certificates are judged and renewed at; nil means
	// the real clock.
	Clock clock.PassiveClock
	// SliceOffer is what a ResourceSlice whose resources are accepted is
	// offered in its status (default quantities, the local StorageClass,
	// ingress and load-balancer classes, node labels); nil means
	// resourceslice.DefaultOffer(), Liqo's Helm chart's defaults.
	SliceOffer *resourceslice.Offer
	// DisableStorage offers ResourceSlices no StorageClass, as Liqo with
	// --enable-storage=false. By default the cluster's StorageClasses are
	// listed at each acceptance (list on storageclasses.storage.k8s.io).
	DisableStorage bool
	// SlicePolicy, when set, caps or refuses the resources of ResourceSlices
	// (provider.Ports.SlicePolicy); nil grants what they ask.
	SlicePolicy resourceslice.Policy
	// EnrolmentNamespace is where the provider keeps its enrolment key
	// (kube.EnrolmentKeyName), publishes its public half
	// (kube.EnrolmentPublicKeyRecordName) and writes the enrolment
	// endpoint's serving certificate (kube.EnrolmentTLSSecretName): the
	// controller's own namespace. Empty, the provider grants no
	// AuthorizedConsumer; where the peering.kubepact.io CRDs are served,
	// AuthorizedConsumers still bind every flow to their keys.
	EnrolmentNamespace string
	// EnrolmentKeyRotation is the step of a rotation of the enrolment key
	// the provider is at (KeyRotationPrepare, KeyRotationSwitch), or none.
	EnrolmentKeyRotation KeyRotation
	// SliceBounds bounds, per consumer, the certificates signed for
	// ResourceSlices (provider.Options.SliceBounds): over a bound a
	// slice gets nothing signed and an Event names the bound
	// (SliceLimitReached, RekeyTooSoon, CertificateRateLimited). The zero
	// value uses resourceslice.Bounds' defaults.
	SliceBounds resourceslice.Bounds
}

// DefaultWorkers is the number of workers of the provider's reconcilers,
// and the bound on its handshakes in flight, when ProviderConfig.Workers is
// zero. A Tenant reconcile spends most of its time waiting for the API
// server and its signer (about 19 requests, in 4 round trips and a CSR
// round), so a few workers keep the API server busy. Beyond that, each
// place in flight adds to every consumer's wait under a burst: by Little's
// law, Workers over the provider's rate (16 places at 30 handshakes a
// second are half a second). With 200 consumers at once, on a 2-core
// machine where the API server's CPU is the limit (BenchmarkProviders in
// test/liqo, one figure per run), 16 gave a median wait of 0.46 to 0.55
// times Liqo's (3.5 to 4.5 s) at 25 to 34 handshakes a second over six
// runs, 32 gave 0.46 to 0.58 times (3.9 to 4.7 s) at 27 to 33 over four,
// 12 and 24 about as 16, and 8 gave 0.62 times (5.0 s) at 25 a second:
// too few, places wait on the consumers' own steps between the nonce and
// the Tenant. The Tenant phase alone, nonces issued beforehand, accepted
// 38 a second with 16 workers and 35 with 8 with the CSR API, 61 and 53
// with a local CA (BenchmarkTenantsAtOnce). Consumers far away hold a
// place for their round trips too: a provider needs about its target rate
// times a handshake's time, the consumer's part included.
const DefaultWorkers = 16

// CSRWait is how long a worker of the default signer waits for the API
// server's signer to issue a certificate it requested, before it leaves
// the Tenant to be requeued when the certificate comes (see
// kube.CSRSignerOptions.Wait). The kube-controller-manager issues one in
// milliseconds when it keeps up; waiting that long saves the second pass
// of a handshake (its reads, the nonce and the cache) and serves
// consumers in the order they came.
const CSRWait = 5 * time.Second

// cacheLag is when a reconciler that found the manager's cache behind an
// object looks at it again.
const cacheLag = 100 * time.Millisecond

// HandshakeHold is how long a handshake keeps its place among the
// provider's Workers handshakes in flight when its consumer does not
// finish it: from the nonce issued to a Tenant accepted or refused. A
// nonce request waits at most as long for a place, then is served anyway.
const HandshakeHold = 30 * time.Second

// SetupProvider adds the provider's reconcilers to mgr: the nonce
// reconciler (liqo-nonce Secrets), the Tenant reconciler, which also comes
// back when each certificate is due for re-signing (csr.RenewAt), the
// ResourceSlice reconciler (slices replicated into tenant namespaces) and
// the Renew reconciler (renew_provider.go). mgr's scheme
// must know the authentication.liqo.io/v1beta1 types (see NewScheme).
func SetupProvider(mgr manager.Manager, cfg ProviderConfig) error {
	if err := checkScheme(mgr); err != nil {
		return err
	}
	if err := RegisterMetrics(); err != nil {
		return err
	}
	if err := cfg.EnrolmentKeyRotation.check(); err != nil {
		return fmt.Errorf("controllers: provider %q: EnrolmentKeyRotation: %w", cfg.ClusterID, err)
	}
	if err := checkPodSecurity(cfg.TenantPodSecurity); err != nil {
		return fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}
	cs, uncached, err := clients(mgr)
	if err != nil {
		return err
	}
	signer, settled, err := providerSigner(mgr, cs, cfg)
	if err != nil {
		return err
	}
	// The redemption reads the nonce Secret from the manager's cache,
	// which watches nonce Secrets, and writes on what it read.
	nonces := newEmptyNonceStore(cs, mgr.GetClient())
	peering, err := servesPeering(mgr)
	if err != nil {
		return fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}
	// Accept reads the commitments from the API server; the restart's
	// Unchanged from the manager's cache, where the CRDs are served (a
	// cache of a kind not served cannot start).
	commitments, cachedCommitments := kube.NewCommitments(uncached), kube.NewCommitments(uncached)
	if peering {
		cachedCommitments = kube.NewCommitments(mgr.GetClient())
	} else {
		mgr.GetLogger().Info("the peering.kubepact.io CRDs are not served: no AuthorizedConsumer is granted; each is still read when a Tenant is accepted")
	}
	p, err := newProvider(mgr, cs, uncached, cfg, signer, nonces, commitments)
	if err != nil {
		return err
	}
	if peering && cfg.EnrolmentNamespace != "" {
		if err := setupEnrolment(mgr, cs, p, cfg); err != nil {
			return err
		}
	}

	if err := mgr.Add(&tenantNamespaceSliceGrants{client: cs, log: mgr.GetLogger().WithName("tenant-namespace-slice-grants")}); err != nil {
		return fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}

	workers := cfg.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	inFlight := newGate(workers, HandshakeHold, clock.RealClock{})
	if err := setupNonceReconciler(mgr, p, workers, inFlight); err != nil {
		return err
	}
	if err := indexGrantees(context.Background(), mgr); err != nil {
		return err
	}
	tr := &tenantReconciler{client: mgr.GetClient(), provider: p, events: mgr.GetEventRecorder(tenantControllerName), clock: realClock(cfg.Clock), gate: inFlight,
		// The provider's own records, as the manager's cache holds them
		// (CacheOptions), and the bindings that name a consumer, by
		// granteeIndex: Unchanged reads them instead of the API server.
		cached: provider.CachedRecords{
			Nonces:       nonces,
			Certificates: kube.NewCertificateCache(cs).WithReader(mgr.GetClient()),
			Revocations:  kube.NewRevocations(cs).WithReader(mgr.GetClient()),
			Bindings:     newBindingReader(mgr.GetClient()),
			Grants:       grantReader{cache: mgr.GetClient()},
			Commitments:  cachedCommitments,
		}}
	if err := setupTenantReconciler(mgr, tr, workers, settled, peering); err != nil {
		return err
	}
	if err := setupSliceProvider(mgr, p, workers, settled, cfg.Clock); err != nil {
		return err
	}
	return setupRenewProvider(mgr, p, kube.NewRenewStore(uncached), workers, settled, cfg.Clock)
}

// providerSigner returns the signer of the consumers' CSRs, cfg.Signer or
// by default the Kubernetes CSR API's, and, with a kube.CSRSigner, the
// predicate of the CertificateSigningRequests that settle while no Sign
// waits for them, which the reconcilers watch; nil otherwise.
func providerSigner(mgr manager.Manager, cs kubernetes.Interface, cfg ProviderConfig) (csr.Signer, predicate.Predicate, error) {
	switch s := cfg.Signer.(type) {
	case nil:
		// The signer learns of its certificates from the manager's informer
		// on CertificateSigningRequests, which the reconcilers watch anyway.
		updates := kube.NewCSRUpdates()
		inf, err := mgr.GetCache().GetInformer(context.Background(), &certificatesv1.CertificateSigningRequest{})
		if err != nil {
			return nil, nil, fmt.Errorf("controllers: provider %q: CertificateSigningRequest informer: %w", cfg.ClusterID, err)
		}
		if _, err := inf.AddEventHandler(updates); err != nil {
			return nil, nil, fmt.Errorf("controllers: provider %q: CertificateSigningRequest informer: %w", cfg.ClusterID, err)
		}
		ks := kube.NewCSRSignerWithOptions(cs, kube.NewApprover(cs), &kube.CSRSignerOptions{NoWait: true, Wait: CSRWait, Clock: cfg.Clock, Updates: updates})
		return ks, csrSettled(ks.Awaited), nil
	case *kube.CSRSigner:
		return s, csrSettled(s.Awaited), nil
	}
	return cfg.Signer, nil, nil
}

// newProvider returns the Provider the reconcilers call, over the
// adapters of every port.
func newProvider(mgr manager.Manager, cs kubernetes.Interface, uncached client.Client, cfg ProviderConfig, signer csr.Signer, nonces *emptyNonceStore,
	commitments enrol.Commitments) (*provider.Provider, error) {
	lifecyclePorts := kube.NewLifecyclePorts(cs, uncached)
	// The Tenant reconciler watches ResourceSlices, so it finds them in the
	// manager's cache: a slice the cache has yet to see requeues its Tenant
	// when it does.
	lifecyclePorts.Slices = kube.NewTenantSlices(mgr.GetClient())
	namespaces, err := tenantNamespaces(cs, mgr, cfg.TenantPodSecurity)
	if err != nil {
		return nil, err
	}
	ports := provider.Ports{
		Core: provider.Core{
			Namespaces:   namespaces,
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(uncached),
			Signer:       signer,
			Certificates: kube.NewCertificateCache(cs),
			RBAC:         kube.NewRBAC(cs),
			Commitments:  commitments,
		},
		SlicePorts: provider.SlicePorts{
			ClusterRBAC: kube.NewRBAC(cs),
			Slices:      kube.NewSliceStore(uncached),
			SlicePolicy: cfg.SlicePolicy,
		},
		Lifecycle: lifecyclePorts,
	}
	if !cfg.DisableStorage {
		ports.StorageClasses = kube.NewStorageClasses(cs)
	}
	p, err := provider.New(cfg.ClusterID, cfg.Endpoint, ports, &provider.Options{
		Clock:               cfg.Clock,
		Policy:              cfg.Policy,
		CertificateLifetime: cfg.CertificateLifetime,
		NonceTTL:            cfg.NonceTTL,
		SliceOffer:          cfg.SliceOffer,
		SliceBounds:         cfg.SliceBounds,
	})
	if err != nil {
		return nil, fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}
	if cfg.Endpoint.Server != "" && len(cfg.Endpoint.CA) == 0 {
		return nil, fmt.Errorf("controllers: provider %q: %w: the endpoint's CA is required with its server", cfg.ClusterID, peer.ErrInvalidConfig)
	}
	return p, nil
}

// setupNonceReconciler adds the provider's nonce reconciler to mgr.
func setupNonceReconciler(mgr manager.Manager, p *provider.Provider, workers int, inFlight *gate) error {
	nr := &nonceReconciler{client: mgr.GetClient(), provider: p, events: mgr.GetEventRecorder(nonceControllerName), gate: inFlight}
	if err := ctrl.NewControllerManagedBy(mgr).Named(nonceControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&corev1.Secret{}, builder.WithPredicates(hasLabel(nonce.SecretLabel))).
		Complete(nr); err != nil {
		return fmt.Errorf("controllers: %s: %w", nonceControllerName, err)
	}
	return nil
}

// setupTenantReconciler adds tr, the provider's Tenant reconciler, to mgr,
// with the watches that requeue a Tenant: its slices, its revocation
// records, the grants to its consumer, when peering is set (the
// peering.kubepact.io CRDs are served) its AuthorizedConsumer's policy
// changing and, when settled is not nil, its consumer's
// CertificateSigningRequests settling.
func setupTenantReconciler(mgr manager.Manager, tr *tenantReconciler, workers int, settled predicate.Predicate, peering bool) error {
	b := ctrl.NewControllerManagedBy(mgr).Named(tenantControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&authv1beta1.Tenant{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleting())))
	b = watchSlices(b, mgr.GetClient())
	b = watchRevocations(b)
	b = tr.watchGrants(b)
	if peering {
		b = watchPolicies(b)
	}
	if settled != nil {
		b = b.Watches(&certificatesv1.CertificateSigningRequest{},
			handler.EnqueueRequestsFromMapFunc(tenantOfCSR), builder.WithPredicates(settled))
	}
	if err := b.Complete(tr); err != nil {
		return fmt.Errorf("controllers: %s: %w", tenantControllerName, err)
	}
	return nil
}

// clients returns the clients the steps' adapters use, over mgr's
// configuration, HTTP client, scheme and REST mapper: a clientset and an
// uncached controller-runtime client, since the steps decide on what they
// read; with a SecretScope's cache, each waits until a namespace's
// Secrets may be read before it reads them (scopedClients).
func clients(mgr manager.Manager) (kubernetes.Interface, client.Client, error) {
	cs, err := kube.NewClientset(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("controllers: %w", err)
	}
	c, err := client.New(mgr.GetConfig(), client.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("controllers: %w", err)
	}
	scoped, c := scopedClients(mgr, cs, c)
	return scoped, c, nil
}

// hasLabel admits objects carrying the label key, whatever its value.
func hasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// labelTrue admits objects whose label key is "true", as Liqo selects them:
// its CRD replicator's copies keep liqo.io/replication, set to "false",
// beside liqo.io/replicated "true". Where two clusters peer both ways, one
// tenant namespace holds both a cluster's own objects and its peer's
// copies, and each reconciler must see only its side's.
func labelTrue(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[key] == "true"
	})
}

// deleting admits an update that marks an object for deletion.
func deleting() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
	}}
}

// csrSettled admits kubepact's CertificateSigningRequests that name their
// consumer once they are issued, denied or failed, when awaited reports
// that no Sign returned their outcome: one a Sign waited for was handled
// by the reconcile that called it.
func csrSettled(awaited func(name string) bool) predicate.Predicate {
	settled := func(o client.Object) bool {
		obj, ok := o.(*certificatesv1.CertificateSigningRequest)
		if !ok || obj.Labels[kube.CSRLabel] != "true" || consumerOfCSR(obj) == "" || !awaited(obj.Name) {
			return false
		}
		if len(obj.Status.Certificate) > 0 {
			return true
		}
		for _, c := range obj.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) {
				return true
			}
		}
		return false
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return settled(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return settled(e.ObjectNew) && !settled(e.ObjectOld) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// tenantOfCSR maps a CertificateSigningRequest to the Tenant of the
// consumer it names. What it names only says what to requeue: the Tenant
// reconciler trusts nothing of the object (kube.CSRSigner re-checks it).
func tenantOfCSR(_ context.Context, o client.Object) []reconcile.Request {
	obj, ok := o.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	id := consumerOfCSR(obj)
	if id == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: clusterid.TenantNamespace(id), Name: id}}}
}

// consumerOfCSR returns the consumer a CertificateSigningRequest is for:
// the cluster ID of its liqo.io/remote-cluster-id label or, for a request
// made before kubepact labelled them (or by Liqo), the common name of its
// request, which is the consumer's cluster ID for a ControlPlane identity.
// It returns "" when neither is a valid cluster ID.
func consumerOfCSR(obj *certificatesv1.CertificateSigningRequest) string {
	if id, ok := obj.Labels[clusterid.Label]; ok {
		if clusterid.Validate(id) != nil {
			return ""
		}
		return id
	}
	if len(obj.Spec.Request) > csr.MaxSize {
		return ""
	}
	block, _ := pem.Decode(obj.Spec.Request)
	if block == nil {
		return ""
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || clusterid.Validate(req.Subject.CommonName) != nil {
		return ""
	}
	return req.Subject.CommonName
}

// emptyNonceStore is a nonce.Store that takes a nonce Secret without
// data.nonce, as liqoctl creates it, for no nonce: Ensure then issues one
// into it. Its Peek is kube.NonceStore's, on the manager's cache, where
// such a Secret is no entry either.
//
// The nonce reconciler issues a nonce when the cache holds the Secret
// without one, so Get takes the cache's word for that, with no request,
// and the Put that follows writes on that copy (kube.NonceStore.PutOver):
// a copy gone stale, the Secret having changed since, is decided again on
// the Secret as stored. Any other Get reads the API server.
type emptyNonceStore struct {
	*kube.NonceStore
	client kubernetes.Interface
	cache  client.Reader

	// emptyAt is, by cluster ID, the resourceVersion of the cached
	// Secret the last Get found without a nonce.
	mu      sync.Mutex
	emptyAt map[string]string
}

var _ nonce.Peeker = (*emptyNonceStore)(nil)

func newEmptyNonceStore(cs kubernetes.Interface, cache client.Reader) *emptyNonceStore {
	return &emptyNonceStore{NonceStore: kube.NewNonceStore(cs).WithRedeemReader(cache), client: cs, cache: cache, emptyAt: map[string]string{}}
}

func (s *emptyNonceStore) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	var cached corev1.Secret
	empty := s.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: nonce.SecretName}, &cached) == nil &&
		len(cached.Data[nonce.SecretKey]) == 0
	s.mu.Lock()
	if empty {
		s.emptyAt[clusterID] = cached.ResourceVersion
	} else {
		delete(s.emptyAt, clusterID)
	}
	s.mu.Unlock()
	if empty {
		return nonce.Entry{}, noNonce(ns)
	}
	return s.read(ctx, clusterID)
}

// noNonce is the error of a nonce Secret in namespace that holds no nonce.
func noNonce(namespace string) error {
	return fmt.Errorf("%w: Secret %s/%s holds no %s", nonce.ErrNotFound, namespace, nonce.SecretName, nonce.SecretKey)
}

// read returns the nonce of clusterID as the API server stores it.
func (s *emptyNonceStore) read(ctx context.Context, clusterID string) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	sec, err := s.client.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
	switch {
	case err != nil:
		return s.NonceStore.Get(ctx, clusterID) // its errors, as the store words them
	case len(sec.Data[nonce.SecretKey]) == 0:
		return nonce.Entry{}, noNonce(ns)
	}
	return nonce.FromSecret(sec)
}

// Put stores e on the cached Secret the last Get found without a nonce
// or, when there is none or that copy is stale (its write conflicts), on
// the Secret as stored, provided it still holds no nonce: a nonce stored meanwhile stays, and
// Put fails with a conflict (apierrors.IsConflict), for the caller to
// decide again.
func (s *emptyNonceStore) Put(ctx context.Context, clusterID string, e nonce.Entry) error {
	s.mu.Lock()
	rv, cached := s.emptyAt[clusterID]
	delete(s.emptyAt, clusterID)
	s.mu.Unlock()
	if !cached {
		return s.NonceStore.Put(ctx, clusterID, e)
	}
	err := s.NonceStore.PutOver(ctx, clusterID, e, rv)
	if !apierrors.IsConflict(err) {
		return err
	}
	switch _, rerr := s.read(ctx, clusterID); {
	case rerr == nil:
		return apierrors.NewConflict(corev1.Resource("secrets"), nonce.SecretName, errors.New("a nonce was stored since the cached copy was read"))
	case !errors.Is(rerr, nonce.ErrNotFound):
		return rerr
	}
	return s.NonceStore.Put(ctx, clusterID, e)
}

// nonceReconciler gives a liqo-nonce Secret its nonce (SPEC §7, step 1).
type nonceReconciler struct {
	client   client.Client
	provider *provider.Provider
	events   events.EventRecorder
	gate     *gate // entered before a nonce is issued
}

func (r *nonceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s corev1.Secret
	if err := r.client.Get(ctx, req.NamespacedName, &s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if s.DeletionTimestamp != nil || len(s.Data[nonce.SecretKey]) > 0 {
		return reconcile.Result{}, nil
	}
	id := s.Labels[clusterid.Label]
	if err := clusterid.Validate(id); err != nil || s.Namespace != clusterid.TenantNamespace(id) || s.Name != nonce.SecretName {
		r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonInvalidNonceSecret, "IssueNonce",
			"a nonce Secret must be %q in the tenant namespace of the cluster ID of its %s label (%q): no nonce issued",
			nonce.SecretName, clusterid.Label, truncate(id))
		return reconcile.Result{}, metrics.failed(ctx, nonceControllerName, contract.ReasonInvalidNonceSecret, errInvalidObject, false)
	}
	if err := r.gate.enter(ctx, id); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := r.provider.IssueNonce(ctx, id); err != nil {
		r.gate.leave(id)
		if apierrors.IsConflict(err) {
			// The cache was behind the Secret, which holds a nonce: the
			// Secret's update, once cached, requeues it, and so does this.
			return reconcile.Result{RequeueAfter: cacheLag}, nil
		}
		r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonIssueNonceFailed, "IssueNonce", "issuing the nonce: %v", err)
		return reconcile.Result{}, metrics.failed(ctx, nonceControllerName, contract.ReasonIssueNonceFailed, err, true)
	}
	r.events.Eventf(&s, nil, corev1.EventTypeNormal, contract.ReasonNonceGenerated, "IssueNonce", "Nonce generated successfully")
	return reconcile.Result{}, nil
}

// tenantReconciler accepts Tenants (SPEC §7, step 3) and cleans up after
// deleted ones.
type tenantReconciler struct {
	client   client.Client
	provider *provider.Provider
	events   events.EventRecorder
	clock    clock.PassiveClock
	gate     *gate // left once a Tenant is accepted or refused
	// cached are the provider's records as the manager's cache holds
	// them, on which an accepted Tenant that changed in nothing is left
	// as it is (provider.Provider.Unchanged).
	cached provider.CachedRecords

	// conditions are the Tenants' conditions last enforced, by consumer
	// ID, to count transitions (kubepact_tenant_transitions_total);
	// reconciled are the Tenants reconciled since the process started,
	// by consumer ID (firstReconcile).
	mu         sync.Mutex
	conditions map[string]string
	reconciled map[string]bool
}

// firstReconcile reports whether consumerID's Tenant is reconciled for the
// first time since the process started, and notes that it is. Only then
// may an accepted Tenant be left as it is (Unchanged): a start, or a
// restart, goes over every Tenant, and that is what Unchanged saves. A
// Tenant reconciled again was requeued by a change (its spec, its
// revocation record, a slice, a CSR) or by its re-signing, which Accept
// decides on what the API server stores; so does a Tenant that another
// provider, such as kubepact's CLI in its own process, accepts or
// unpeers beside the controller while the cache catches up.
func (r *tenantReconciler) firstReconcile(consumerID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reconciled[consumerID] {
		return false
	}
	if r.reconciled == nil {
		r.reconciled = map[string]bool{}
	}
	r.reconciled[consumerID] = true
	return true
}

func (r *tenantReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var t authv1beta1.Tenant
	if err := r.client.Get(ctx, req.NamespacedName, &t); err != nil {
		if apierrors.IsNotFound(err) && req.Namespace == clusterid.TenantNamespace(req.Name) {
			r.gone(req.Name) // deleted without kubepact's finalizer
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if t.DeletionTimestamp != nil {
		return r.remove(ctx, &t)
	}
	id := t.Spec.ClusterID
	if err := clusterid.Validate(id); err != nil || t.Name != id || t.Namespace != clusterid.TenantNamespace(id) {
		r.events.Eventf(&t, nil, corev1.EventTypeWarning, contract.ReasonInvalidTenant, "Accept",
			"a Tenant must be named after its spec.clusterID (%q) and live in its tenant namespace", truncate(id))
		metrics.handshake(flowTenant, resultRefused, contract.ReasonInvalidTenant)
		return reconcile.Result{}, metrics.failed(ctx, tenantControllerName, contract.ReasonInvalidTenant, errInvalidObject, false)
	}
	if res, done, err := r.enforce(ctx, &t); done {
		r.gate.leave(id)
		return res, err
	}
	if lifecycle.FlowOf(&t) != lifecycle.FlowHandshake {
		// Recorded by another flow (the token server), with no signature
		// to verify: its condition is enforced, nothing is accepted.
		r.gate.leave(id)
		return reconcile.Result{}, nil
	}
	if res, ok := r.unchanged(ctx, &t); ok {
		return res, nil
	}
	return r.accept(ctx, &t)
}

// unchanged reports whether t, an accepted Tenant whose spec, key,
// certificate record, nonce and bindings are as Accept left them, needs no
// review, no CSR and no write, and returns the result of its reconcile if
// so. On a restart, every Tenant comes back this way, once
// (firstReconcile). What decides is read from the cache (see
// provider.Provider.Unchanged for why each step of Accept may be skipped).
func (r *tenantReconciler) unchanged(ctx context.Context, t *authv1beta1.Tenant) (reconcile.Result, bool) {
	id := t.Spec.ClusterID
	if !r.firstReconcile(id) {
		return reconcile.Result{}, false
	}
	issued, ok := r.provider.Unchanged(ctx, t, r.cached)
	if !ok {
		return reconcile.Result{}, false
	}
	r.gate.leave(id)
	metrics.expires(roleProvider, id, controlPlaneIdentity, issued.Spec.AuthParams.SignedCRT)
	return renewalResult(issued, r.clock.Now()), true
}

// accept runs Provider.Accept for t and records its outcome: it comes back
// at the renewal deadline of the certificate issued, when the CSR's signing
// requeues it, or as the failure asks.
func (r *tenantReconciler) accept(ctx context.Context, t *authv1beta1.Tenant) (reconcile.Result, error) {
	filled := t.Status.AuthParams != nil
	issued, err := r.provider.Accept(ctx, t)
	switch {
	case err == nil:
		return r.accepted(t, issued, filled), nil
	case errors.Is(err, csr.ErrPending):
		r.events.Eventf(t, nil, corev1.EventTypeNormal, contract.ReasonCertificatePending, "Accept", "%v", err)
		return reconcile.Result{}, nil
	}
	return r.refused(ctx, t, err)
}

// accepted records that Accept accepted t, whose status was filled before
// when filled, and issued, the Identity it returned: an Event and the
// handshake's duration the first time, a renewal when the certificate
// changed, and the certificate's expiry.
func (r *tenantReconciler) accepted(t *authv1beta1.Tenant, issued *authv1beta1.Identity, filled bool) reconcile.Result {
	id := t.Spec.ClusterID
	r.gate.leave(id)
	now := r.clock.Now()
	if !filled {
		r.events.Eventf(t, nil, corev1.EventTypeNormal, contract.ReasonTenantAccepted, "Accept", "Tenant status is filled")
		metrics.accepted(flowTenant, contract.ReasonTenantAccepted, t.CreationTimestamp.Time, now)
	}
	if issued != nil {
		if filled && !bytes.Equal(t.Status.AuthParams.SignedCRT, issued.Spec.AuthParams.SignedCRT) {
			metrics.renewal(roleProvider, resultRenewed) // re-signed at its renewal deadline
		}
		metrics.expires(roleProvider, id, controlPlaneIdentity, issued.Spec.AuthParams.SignedCRT)
	}
	return renewalResult(issued, now)
}

// refused records that Accept failed for t with err: a Warning Event with
// the refusal's reason and message, the handshake's result and, for a
// terminal refusal, the handshake's place given up. It returns what
// Reconcile returns for it.
func (r *tenantReconciler) refused(ctx context.Context, t *authv1beta1.Tenant, err error) (reconcile.Result, error) {
	reason, message, terminal := acceptRefusal(err, t.Status.AuthParams)
	r.events.Eventf(t, nil, corev1.EventTypeWarning, reason, "Accept", "%s", message)
	if terminal {
		r.gate.leave(t.Spec.ClusterID)
		metrics.handshake(flowTenant, resultRefused, reason)
	} else {
		metrics.handshake(flowTenant, resultFailed, reason)
	}
	if after := retryAfter(err, time.Now()); after > 0 {
		return reconcile.Result{RequeueAfter: after}, metrics.failed(ctx, tenantControllerName, reason, err, false)
	}
	return reconcile.Result{}, metrics.failed(ctx, tenantControllerName, reason, err, retried(err, reason, contract.ReasonAcceptFailed, terminal))
}

// gone deletes what the metrics hold of the consumer whose Tenant is gone.
func (r *tenantReconciler) gone(consumerID string) {
	metrics.forget(roleProvider, consumerID, "")
	r.mu.Lock()
	delete(r.conditions, consumerID)
	delete(r.reconciled, consumerID)
	r.mu.Unlock()
}

// remove cleans up after a deleted Tenant that carries kubepact's
// finalizer: the consumer's replicated Renews go (removeRenewCopies), then
// Provider.Forget unpeers the consumer (its binding goes, its nonce and
// cached certificate stay) or, for a drained Tenant or one annotated
// lifecycle.RevokeAnnotation, revokes it; then only kubepact's finalizer
// goes.
func (r *tenantReconciler) remove(ctx context.Context, t *authv1beta1.Tenant) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(t, tenant.Finalizer) || t.Namespace != clusterid.TenantNamespace(t.Name) {
		return reconcile.Result{}, nil
	}
	if err := r.removeRenewCopies(ctx, t.Name); err != nil {
		r.events.Eventf(t, nil, corev1.EventTypeWarning, contract.ReasonRemoveFailed, "Forget", "deleting the consumer's Renews: %v", err)
		return reconcile.Result{}, metrics.failed(ctx, tenantControllerName, contract.ReasonRemoveFailed, err, true)
	}
	if err := r.provider.Forget(ctx, t.Name); err != nil {
		if apierrors.IsNotFound(err) {
			r.gone(t.Name)
			return reconcile.Result{}, nil
		}
		r.events.Eventf(t, nil, corev1.EventTypeWarning, contract.ReasonRemoveFailed, "Forget", "%v", err)
		return reconcile.Result{}, metrics.failed(ctx, tenantControllerName, contract.ReasonRemoveFailed, err, true)
	}
	r.gone(t.Name)
	msg := "Tenant removed: consumer unpeered, binding and replicated Renews deleted; the same cluster key may peer again at once"
	if lifecycle.Condition(t.Spec.TenantCondition) == authv1beta1.TenantConditionDrained || t.Annotations[lifecycle.RevokeAnnotation] == "true" {
		msg = "Tenant removed: consumer revoked, binding, replicated Renews, cached certificate and nonce deleted; refused until its certificates expire or it is readmitted"
	}
	r.events.Eventf(t, nil, corev1.EventTypeNormal, contract.ReasonTenantRemoved, "Forget", "%s", msg)
	return reconcile.Result{}, nil
}

// removeRenewCopies deletes the Renews the CRD replicator of consumerID
// copied into its tenant namespace: those labelled as replicated from it
// (renewal.ReplicatedLabel "true", renewal.OriginIDLabel consumerID) that
// ask for it (spec.consumerClusterID). Once its Tenant is gone they ask
// for nothing the provider would sign, and their consumer may no longer
// reach them: liqoctl unauthenticate deletes the consumer's Identity, and
// with it its Renew, moments before the Tenant, while the kubeconfig its
// replicator would delete the copy with goes with the Identity too. The
// provider's own Renews, in a namespace it shares with a peer it is the
// consumer of, stay: they are not labelled replicated, and ask for the
// provider. Deleted before Forget, so a failure is retried while the
// Tenant still holds its finalizer.
func (r *tenantReconciler) removeRenewCopies(ctx context.Context, consumerID string) error {
	var copies authv1beta1.RenewList
	if err := r.client.List(ctx, &copies, client.InNamespace(clusterid.TenantNamespace(consumerID)),
		client.MatchingLabels{renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: consumerID}); err != nil {
		return err
	}
	for i := range copies.Items {
		rn := &copies.Items[i]
		if rn.Spec.ConsumerClusterID != consumerID {
			continue
		}
		if err := r.client.Delete(ctx, rn, client.Preconditions{UID: &rn.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// acceptRefusal returns the reason, the Event message and whether Accept's
// error err is final, for a Tenant whose status held was (nil before its
// first acceptance). A consumer refused as privileged after it was
// accepted gets contract.ReasonConsumerPrivileged, saying what became of its
// bindings and its certificate; one whose bindings Accept failed to delete
// (an API error joined to the refusal) is retried until they go.
func acceptRefusal(err error, held *authv1beta1.AuthParams) (reason, message string, terminal bool) {
	reason, terminal = reasonOf(err, contract.ReasonAcceptFailed)
	if reason != contract.ReasonPrivilegedUser {
		return reason, err.Error(), terminal
	}
	unbound := !transient(err)
	if held == nil {
		return reason, err.Error(), terminal && unbound
	}
	done := "its bindings are deleted"
	if !unbound {
		done = "deleting its bindings failed and is retried"
	}
	return contract.ReasonConsumerPrivileged, fmt.Sprintf("%v: %s and its certificate is not re-signed; the certificate issued %s",
		err, done, validUntil(held.SignedCRT)), terminal && unbound
}

// validUntil says until when the PEM certificate cert is valid, for an
// Event: "stays valid until <its notAfter>", or less when it does not
// parse.
func validUntil(cert []byte) string {
	leaf, err := csr.ParseCertificate(cert)
	if err != nil {
		return "stays valid until it expires"
	}
	return "stays valid until " + leaf.NotAfter.UTC().Format(time.RFC3339)
}

// errInvalidObject is logged for an object a reconciler refuses before
// calling a step: misnamed or misplaced.
var errInvalidObject = errors.New("the object is misnamed or misplaced; see its Events")

// truncate bounds a label value quoted in an Event.
func truncate(s string) string {
	if len(s) > 63 {
		return s[:63] + "…"
	}
	return s
}

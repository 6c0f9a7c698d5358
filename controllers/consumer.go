package controllers

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// ConsumerConfig configures SetupConsumer. ClusterID is required; the zero
// value of every other field is a documented default.
type ConsumerConfig struct {
	// ClusterID is the consumer's cluster ID.
	ClusterID string
	// KeyNamespace is where the cluster key Secret (authentication-keys)
	// and the identity keys of a Strict consumer live; empty means
	// keys.DefaultNamespace ("liqo").
	KeyNamespace string
	// KeyAlgorithm is the algorithm of the cluster key when the signed-nonce
	// reconciler has to create it; an existing key is always kept. The zero
	// value is Ed25519.
	KeyAlgorithm keys.Algorithm
	// Strict is consumer.Options.Strict: Identities are applied with
	// the identity's own TLS key, so only Identities answering Tenants that
	// a strict kubepact consumer built apply (a Tenant built by liqoctl asks
	// for the cluster key). Without it, the cluster key is the TLS key,
	// unless an identity key is held whose certificate the Identity carries.
	Strict bool
	// Offline skips the online confirmation: without it, the Identity
	// reconciler asks the provider's API server, with the new kubeconfig,
	// who it authenticates as (kube.IdentityReviewer) before writing
	// anything.
	Offline bool
	// RootCAs are PEM certificates trusted, besides the system roots, for
	// the serving certificate of a provider whose Identity has no CA (see
	// kube.IdentityReviewerOptions).
	RootCAs []byte
	// TenantPodSecurity, when set ("privileged", "baseline" or
	// "restricted"), is the pod-security.kubernetes.io/enforce label of the
	// tenant namespaces this reconciler creates, set at creation only and
	// never on a namespace that exists. Empty, the default, sets none: the
	// cluster's default applies. Liqo labels its tenant namespaces
	// "privileged" because its network gateways run there; set that only
	// when a Liqo network module runs beside kubepact.
	TenantPodSecurity string
	// ClusterKeyRotation is the step of a rotation of the cluster key the
	// consumer is at (KeyRotationPrepare: a next key is made and published
	// beside the key, and enrolment requests hand the key over to it;
	// KeyRotationSwitch: the next key becomes the cluster key), taken
	// when a replica starts leading; none by default.
	ClusterKeyRotation KeyRotation
	// ReplicationResync bounds how long a status the provider writes on a
	// replicated ResourceSlice or Renew takes to reach the consumer; zero
	// means DefaultReplicationResync.
	ReplicationResync time.Duration
	// Clock is the time certificates are judged and renewed at; nil means
	// the real clock.
	Clock clock.PassiveClock
}

// SetupConsumer adds the consumer's reconcilers to mgr: the signed-nonce
// reconciler (liqo-signed-nonce Secrets), the Identity reconciler, the
// ResourceSlice reconciler, the replicator of ResourceSlices and Renews,
// the renewal reconciler (renew_consumer.go) and, where the cluster serves
// the peering.kubepact.io CRDs, the TrustedProvider reconciler. mgr's
// scheme must know the authentication.liqo.io/v1beta1 types (see
// NewScheme).
func SetupConsumer(mgr manager.Manager, cfg ConsumerConfig) error {
	if err := checkScheme(mgr); err != nil {
		return err
	}
	if err := RegisterMetrics(); err != nil {
		return err
	}
	if err := checkPodSecurity(cfg.TenantPodSecurity); err != nil {
		return fmt.Errorf("controllers: consumer %q: %w", cfg.ClusterID, err)
	}
	if err := cfg.ClusterKeyRotation.check(); err != nil {
		return fmt.Errorf("controllers: consumer %q: ClusterKeyRotation: %w", cfg.ClusterID, err)
	}
	cs, uncached, err := clients(mgr)
	if err != nil {
		return err
	}
	keyNS := cfg.KeyNamespace
	if keyNS == "" {
		keyNS = keys.DefaultNamespace
	}
	namespaces, err := tenantNamespaces(cs, mgr, cfg.TenantPodSecurity)
	if err != nil {
		return err
	}
	ports := consumer.Ports{
		Core: consumer.Core{
			Namespaces: namespaces,
			Keys:       kube.NewKeyStore(cs, keyNS),
			Identities: kube.NewIdentityStore(uncached),
			Secrets:    kube.NewSecretWriter(cs),
		},
		IdentityKeys: kube.NewKeyring(cs, keyNS),
		Slices:       kube.NewSliceStore(uncached),
	}
	if !cfg.Offline {
		rev, err := kube.NewIdentityReviewer(&kube.IdentityReviewerOptions{RootCAs: cfg.RootCAs})
		if err != nil {
			return fmt.Errorf("controllers: consumer %q: %w", cfg.ClusterID, err)
		}
		ports.Reviewer = rev
	}
	c, err := consumer.New(cfg.ClusterID, ports, &consumer.Options{Strict: cfg.Strict, KeyAlgorithm: cfg.KeyAlgorithm, Clock: cfg.Clock, KeyNamespace: keyNS})
	if err != nil {
		return fmt.Errorf("controllers: consumer %q: %w", cfg.ClusterID, err)
	}
	publisher := &publicKeyPublisher{record: kube.NewPublicKeyRecord(cs, keyNS), next: c.NextClusterKey}
	peering, err := servesPeering(mgr)
	if err != nil {
		return fmt.Errorf("controllers: consumer %q: %w", cfg.ClusterID, err)
	}
	// The rotation's step, if any, is taken as soon as this replica
	// leads; the record is published then, and again before each Tenant
	// is built. Each TrustedProvider is then looked at again: its request
	// and keys follow the rotation.
	keysChanged := make(chan event.GenericEvent)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log := mgr.GetLogger().WithValues("controller", signedNonceControllerName)
		rotated := rotateClusterKey(ctx, c, cfg.ClusterKeyRotation, log)
		publisher.publishAtStart(ctx, ports.Keys, cfg.KeyAlgorithm, log)
		adoptKeysAtStart(ctx, uncached, c, mgr.GetLogger().WithValues("controller", identityControllerName))
		if rotated && peering {
			requeueTrustedProviders(ctx, uncached, keysChanged, log)
		}
		return nil
	})); err != nil {
		return fmt.Errorf("controllers: consumer %q: %w", cfg.ClusterID, err)
	}

	sr := &signedNonceReconciler{client: mgr.GetClient(), namespaces: cs.CoreV1().Namespaces(), keys: ports.Keys, alg: cfg.KeyAlgorithm,
		consumer: c, publisher: publisher, events: mgr.GetEventRecorder(signedNonceControllerName)}
	if err := ctrl.NewControllerManagedBy(mgr).Named(signedNonceControllerName).
		For(&corev1.Secret{}, builder.WithPredicates(hasLabel(nonce.SignedSecretLabel))).
		Complete(sr); err != nil {
		return fmt.Errorf("controllers: %s: %w", signedNonceControllerName, err)
	}

	ir := &identityReconciler{client: mgr.GetClient(), consumer: c, events: mgr.GetEventRecorder(identityControllerName)}
	if err := ctrl.NewControllerManagedBy(mgr).Named(identityControllerName).
		For(&authv1beta1.Identity{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(ir); err != nil {
		return fmt.Errorf("controllers: %s: %w", identityControllerName, err)
	}
	if err := setupSliceConsumer(mgr, c, cfg); err != nil {
		return err
	}
	if peering {
		tr := &trustedProviderReconciler{client: mgr.GetClient(), consumer: c, events: mgr.GetEventRecorder(trustedProviderControllerName), fetch: fetchGrant}
		if err := setupTrustedProviders(mgr, tr, keysChanged); err != nil {
			return err
		}
	}
	return setupRenewConsumer(mgr, c, kube.NewRenewStore(uncached), cfg.Clock)
}

// signedNonceReconciler signs the nonce of a liqo-signed-nonce Secret with
// the cluster key (SPEC §7, step 2), only in a tenant namespace made for a
// known peer (tenant.CheckNamespace), and writes beside the signature the
// Tenant that answers the nonce (contract.TenantKey), so that the tool that applies
// it on the provider never reads the cluster key.
type signedNonceReconciler struct {
	client client.Client
	// namespaces reads the Secret's namespace uncached, as it is now.
	namespaces corev1client.NamespaceInterface
	keys       keys.Store
	alg        keys.Algorithm
	// consumer builds the Tenant, with the consumer's policy (Strict or
	// not) and its keys; a request with contract.TenantOwnKeyKey asks for a key of
	// the identity's own (consumer.TenantOptions.OwnKey), which the
	// keyring keeps, so the Identity answering it is applied with it.
	consumer *consumer.Consumer
	// publisher publishes the cluster's public key whenever a Secret is
	// answered.
	publisher *publicKeyPublisher
	events    events.EventRecorder
}

func (r *signedNonceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s corev1.Secret
	if err := r.client.Get(ctx, req.NamespacedName, &s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if s.DeletionTimestamp != nil || len(s.Data[nonce.SecretKey]) == 0 {
		return reconcile.Result{}, nil // nothing to sign yet
	}
	sr, err := r.checkRequest(ctx, &s)
	if sr == nil {
		return reconcile.Result{}, err
	}
	key, err := keys.Ensure(ctx, r.keys, rand.Reader, r.alg)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, &s, contract.ReasonSigningNonceFailed, err, true, "reading the cluster key: %v", err)
	}
	held := s.Data[nonce.SignedSecretKey]
	var mismatch error
	if len(held) > 0 {
		mismatch = nonce.Verify(key.Public(), sr.nonce, held)
		if mismatch == nil && len(s.Data[contract.TenantKey]) > 0 {
			return reconcile.Result{}, nil // signed and built already
		}
	}
	// Published before the Tenant is written, or the Secret refused: a
	// tool that reads the Secret finds the key to check what it holds
	// with.
	if err := r.publisher.publish(ctx, key.Public()); err != nil {
		reason, fix := publishFailure(err)
		return reconcile.Result{}, r.fail(ctx, &s, reason, err, true, "publishing the cluster's public key: %v%s", err, fix)
	}
	if mismatch != nil {
		// Never overwritten: the Secret holds a signature for another
		// nonce or key.
		return reconcile.Result{}, r.fail(ctx, &s, contract.ReasonSignedNonceMismatch, mismatch, false,
			"%s is not this cluster's signature over %s; it is kept: delete the Secret to sign a new nonce", nonce.SignedSecretKey, nonce.SecretKey)
	}
	return reconcile.Result{}, r.answer(ctx, &s, sr, held)
}

// signRequest is what a signed-nonce Secret asks for.
type signRequest struct {
	// providerID is the provider the nonce is from.
	providerID string
	// nonce is the nonce to sign.
	nonce nonce.Nonce
	// ownKey asks for a Tenant whose CSR is for a key of the identity's own
	// (contract.TenantOwnKeyKey).
	ownKey bool
}

// checkRequest returns what s asks for, nil when it is refused: s is not
// the signed-nonce Secret of a tenant namespace made for a peer, or its
// nonce or request is malformed. A refusal is recorded on s, and the error
// is what Reconcile returns for it.
func (r *signedNonceReconciler) checkRequest(ctx context.Context, s *corev1.Secret) (*signRequest, error) {
	id := s.Labels[clusterid.Label]
	if err := clusterid.Validate(id); err != nil || s.Namespace != clusterid.TenantNamespace(id) || s.Name != nonce.SignedSecretName {
		return nil, r.fail(ctx, s, contract.ReasonInvalidSignedNonceSecret, errInvalidObject, false,
			"a signed-nonce Secret must be %q in the tenant namespace of the cluster ID of its %s label (%q): nothing signed",
			nonce.SignedSecretName, clusterid.Label, truncate(id))
	}
	// Only in a tenant namespace that kubepact, Liqo or an administrator
	// labelled for a peer: whoever may merely create a namespace of that
	// name and a Secret in it gets no signature.
	ns, err := r.namespaces.Get(ctx, s.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Namespace %s: %w", s.Namespace, err)
	}
	if err := tenant.CheckNamespace(ns, id); err != nil {
		return nil, r.fail(ctx, s, contract.ReasonNotTenantNamespace, err, false, "%v: nothing signed", err)
	}
	// Only a well-formed nonce is signed, never arbitrary bytes: the
	// cluster key must not sign what a writer of this Secret chooses.
	// Parse checks the length before it decodes anything.
	n, err := nonce.Parse(string(s.Data[nonce.SecretKey]))
	if err != nil {
		return nil, r.fail(ctx, s, contract.ReasonMalformedNonce, err, false, "%s: %v: nothing signed", nonce.SecretKey, err)
	}
	sr := &signRequest{providerID: id, nonce: n}
	switch v, ok := s.Data[contract.TenantOwnKeyKey]; {
	case ok && string(v) == contract.TenantOwnKey:
		sr.ownKey = true
	case ok:
		return nil, r.fail(ctx, s, contract.ReasonInvalidSignedNonceSecret, errInvalidObject, false,
			"%s may only be %q: nothing signed", contract.TenantOwnKeyKey, contract.TenantOwnKey)
	}
	return sr, nil
}

// answer writes into s the signature over sr's nonce, held when s holds it
// already, and the Tenant that answers the nonce.
func (r *signedNonceReconciler) answer(ctx context.Context, s *corev1.Secret, sr *signRequest, held []byte) error {
	// The Tenant's signature is the one the Secret holds, or becomes it:
	// one signature over the nonce, whoever reads it.
	t, err := r.consumer.BuildTenant(ctx, sr.providerID, sr.nonce, &consumer.TenantOptions{ProxyURL: string(s.Data[contract.TenantProxyURLKey]), OwnKey: sr.ownKey})
	if reason, message, ok := tenantRefusal(err); ok {
		return r.fail(ctx, s, reason, err, false, "%s", message)
	}
	if err != nil {
		return r.fail(ctx, s, contract.ReasonSigningNonceFailed, err, true, "building the Tenant: %v", err)
	}
	if len(held) > 0 {
		t.Spec.Signature = held
	}
	doc, err := yaml.Marshal(t)
	if err != nil {
		return fmt.Errorf("encoding the Tenant of Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	// kubepact applies data.signedNonce and the Tenant alone, held to the
	// Secret as read: if data.nonce or the request changed since, the
	// apply conflicts and the next reconcile judges the new one.
	ac := corev1ac.Secret(s.Name, s.Namespace).WithResourceVersion(s.ResourceVersion).
		WithData(map[string][]byte{nonce.SignedSecretKey: t.Spec.Signature, contract.TenantKey: doc})
	if err := r.client.Apply(ctx, ac, client.FieldOwner(kube.FieldManager)); err != nil {
		return fmt.Errorf("writing %s and %s of Secret %s/%s: %w", nonce.SignedSecretKey, contract.TenantKey, s.Namespace, s.Name, err)
	}
	if len(held) == 0 {
		r.events.Eventf(s, nil, corev1.EventTypeNormal, contract.ReasonNonceSigned, "SignNonce", "Nonce is signed")
	}
	return nil
}

// fail records a Warning Event of reason on s, whose note is format with
// args, and counts err: it returns what Reconcile returns for it, retried
// with backoff when retried.
func (r *signedNonceReconciler) fail(ctx context.Context, s *corev1.Secret, reason string, err error, retried bool, format string, args ...any) error {
	r.events.Eventf(s, nil, corev1.EventTypeWarning, reason, "SignNonce", format, args...)
	return metrics.failed(ctx, signedNonceControllerName, reason, err, retried)
}

// publicKeyPublisher publishes the cluster's public key in the record
// kubepact authenticate checks the Tenants it is handed with
// (kube.PublicKeyRecord). It publishes when the controller starts leading
// and whenever a signed-nonce Secret is answered, not once per process: a
// record deleted meanwhile (its namespace recreated) is back before the
// next Tenant is read, and an apply that changes nothing writes nothing.
type publicKeyPublisher struct {
	record *kube.PublicKeyRecord
	// next returns the next cluster key while it rotates, nil otherwise:
	// published beside the key.
	next func(context.Context) (crypto.PublicKey, error)
}

// publish publishes pub, and the next key while the cluster key rotates.
func (p *publicKeyPublisher) publish(ctx context.Context, pub crypto.PublicKey) error {
	next, err := p.next(ctx)
	if err != nil {
		return err
	}
	return p.record.PublishWithNext(ctx, pub, next)
}

// rotateClusterKey takes the step of rotation, if any, and reports
// whether it took one. A failure is logged; the next start takes the step
// again, and each step is safe to take again.
func rotateClusterKey(ctx context.Context, c *consumer.Consumer, rotation KeyRotation, log logr.Logger) bool {
	var err error
	switch rotation {
	case KeyRotationNone:
		return false
	case KeyRotationPrepare:
		_, err = c.PrepareClusterKeyRotation(ctx)
	case KeyRotationSwitch:
		_, err = c.SwitchClusterKey(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Error(err, "rotating the cluster key", "step", string(rotation), "reason", contract.ReasonClusterKeyRotationFailed)
		}
		return false
	}
	log.Info("rotating the cluster key", "step", string(rotation))
	return true
}

// requeueTrustedProviders hands every TrustedProvider to its reconciler
// through changed.
func requeueTrustedProviders(ctx context.Context, c client.Reader, changed chan<- event.GenericEvent, log logr.Logger) {
	var list peeringv1alpha1.TrustedProviderList
	if err := c.List(ctx, &list); err != nil {
		if ctx.Err() == nil {
			log.Error(err, "listing TrustedProviders after a step of the cluster key's rotation")
		}
		return
	}
	for i := range list.Items {
		select {
		case changed <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// publishAtStart ensures the cluster key, making it as the signed-nonce
// reconciler would when there is none, and publishes its public half, so
// that the record is there before the first nonce is signed: a tool that
// reads a signed-nonce Secret someone else answered still finds the key to
// check it with. A failure is logged; the next Tenant built publishes the
// key again.
func (p *publicKeyPublisher) publishAtStart(ctx context.Context, s keys.Store, alg keys.Algorithm, log logr.Logger) {
	key, err := keys.Ensure(ctx, s, rand.Reader, alg)
	if err != nil {
		if ctx.Err() == nil {
			log.Error(err, "reading the cluster key to publish its public half", "reason", contract.ReasonSigningNonceFailed)
		}
		return
	}
	if err := p.publish(ctx, key.Public()); err != nil && ctx.Err() == nil {
		reason, fix := publishFailure(err)
		log.Error(err, "publishing the cluster's public key"+fix, "reason", reason)
	}
}

// publishServiceAccountFix is what to do when the API server forbids the
// controller to publish the cluster's public key. config/ names the
// ServiceAccount kubepact-controller in kubepact-system; an installation
// that renames it knows its own.
const publishServiceAccountFix = "; run kubepact-controller as its ServiceAccount, which alone may write that record: " +
	"in the cluster as config/ deploys it, or outside with a kubeconfig for it (a token from " +
	"kubectl create token kubepact-controller -n kubepact-system, as hack/playground does, " +
	"or --as=system:serviceaccount:kubepact-system:kubepact-controller), not an administrator's; nothing is signed until then"

// publishFailure returns the reason of a failure to publish the cluster's
// public key, and the fix to add to its message: the API server forbade
// the write (the admission policy, or RBAC), which no retry cures
// (contract.ReasonPublishRefused, Blocking), or another failure, retried.
func publishFailure(err error) (reason, fix string) {
	if apierrors.IsForbidden(err) {
		return contract.ReasonPublishRefused, publishServiceAccountFix
	}
	return contract.ReasonSigningNonceFailed, ""
}

// tenantRefusal returns the reason and Event message of a final refusal to
// build the Tenant, one no retry ends: a bad proxy URL (the error never
// quotes the URL, which may hold a password), or a key planted under the
// identity's key name, never used and never replaced, which an
// administrator removes.
func tenantRefusal(err error) (reason, message string, ok bool) {
	switch {
	case errors.Is(err, tenant.ErrInvalidProxyURL):
		return contract.ReasonInvalidProxyURL, fmt.Sprintf("%s: %v: nothing signed", contract.TenantProxyURLKey, err), true
	case errors.Is(err, keys.ErrUnattested):
		return contract.ReasonKeyUnattested, fmt.Sprintf("building the Tenant: %v: nothing signed; delete that Secret of the key namespace, and find out who created it", err), true
	}
	return "", "", false
}

// adoptKeysAtStart attests the keys of its own that this consumer kept
// before it attested keys, for the Identities it holds, and moves slice
// keys to their per-provider names (consumer.Consumer.AdoptKeys). It runs
// once a replica leads; a failure is logged, and the next start tries
// again: until then an Identity whose key is not attested is not applied
// again, and the kubeconfig Secret already written stays as it is.
func adoptKeysAtStart(ctx context.Context, c client.Client, cons *consumer.Consumer, log logr.Logger) {
	var ids authv1beta1.IdentityList
	if err := c.List(ctx, &ids); err != nil {
		if ctx.Err() == nil {
			log.Error(err, "listing Identities to attest the keys they use", "reason", contract.ReasonKeysNotAdopted)
		}
		return
	}
	if err := cons.AdoptKeys(ctx, consumer.HeldIdentities(ids.Items)); err != nil && ctx.Err() == nil {
		log.Error(err, "attesting the keys the Identities held use", "reason", contract.ReasonKeysNotAdopted)
	}
}

// identityReconciler applies ControlPlane Identities (SPEC §7, step 4).
type identityReconciler struct {
	client   client.Client
	consumer *consumer.Consumer
	events   events.EventRecorder
}

func (r *identityReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var id authv1beta1.Identity
	if err := r.client.Get(ctx, req.NamespacedName, &id); err != nil {
		if apierrors.IsNotFound(err) {
			if providerID, ok := strings.CutPrefix(req.Namespace, clusterid.TenantNamespacePrefix); ok {
				metrics.forget(roleConsumer, providerID, req.Name)
			}
			return reconcile.Result{}, r.removeKubeconfig(ctx, req)
		}
		return reconcile.Result{}, err
	}
	if id.DeletionTimestamp != nil || id.Spec.Type != authv1beta1.ControlPlaneIdentityType {
		return reconcile.Result{}, nil // ResourceSlice Identities are not this reconciler's
	}
	providerID := id.Spec.ClusterID
	if err := clusterid.Validate(providerID); err != nil || id.Namespace != clusterid.TenantNamespace(providerID) {
		r.events.Eventf(&id, nil, corev1.EventTypeWarning, contract.ReasonInvalidIdentity, "Apply",
			"an Identity must live in the tenant namespace of its spec.clusterID (%q)", truncate(providerID))
		metrics.handshake(flowIdentity, resultRefused, contract.ReasonInvalidIdentity)
		return reconcile.Result{}, metrics.failed(ctx, identityControllerName, contract.ReasonInvalidIdentity, errInvalidObject, false)
	}
	applied := id.Status.KubeconfigSecretRef != nil
	// The provider named is the Identity's own: whoever may write
	// Identities in this cluster decides which provider it trusts.
	a, err := r.consumer.Apply(ctx, providerID, &id, nil)
	if err == nil {
		if !applied {
			r.events.Eventf(&id, nil, corev1.EventTypeNormal, contract.ReasonIdentityApplied, "Apply", "Identity status is filled")
			metrics.accepted(flowIdentity, contract.ReasonIdentityApplied, id.CreationTimestamp.Time, time.Now())
		}
		if a != nil && a.Identity != nil {
			metrics.expires(roleConsumer, providerID, id.Name, a.Identity.Spec.AuthParams.SignedCRT)
		}
		return reconcile.Result{}, nil
	}
	reason, terminal := reasonOf(err, contract.ReasonApplyFailed)
	switch {
	case reason == contract.ReasonInvalidTenant, errors.Is(err, keys.ErrNotFound):
		reason, terminal = contract.ReasonInvalidIdentity, true
	}
	r.events.Eventf(&id, nil, corev1.EventTypeWarning, reason, "Apply", "%v", err)
	if terminal {
		metrics.handshake(flowIdentity, resultRefused, reason)
	} else {
		metrics.handshake(flowIdentity, resultFailed, reason)
	}
	return reconcile.Result{}, metrics.failed(ctx, identityControllerName, reason, err, retried(err, reason, contract.ReasonApplyFailed, terminal))
}

// removeKubeconfig deletes the kubeconfig Secret of the deleted Identity
// req, if the Secret names an Identity of that name as its controller. The
// garbage collector would delete it too, through that owner reference, but
// only once it knows the Identity's resource and notices; this is at once.
func (r *identityReconciler) removeKubeconfig(ctx context.Context, req reconcile.Request) error {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: req.Namespace, Name: kubeconfig.SecretName(req.Name)}
	if err := r.client.Get(ctx, key, &s); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(&s)
	if owner == nil || owner.Kind != authv1beta1.IdentityKind || owner.Name != req.Name ||
		owner.APIVersion != authv1beta1.SchemeGroupVersion.String() {
		return nil
	}
	// Held to the Secret read: one rewritten since, for an Identity made
	// again, stays.
	err := r.client.Delete(ctx, &s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

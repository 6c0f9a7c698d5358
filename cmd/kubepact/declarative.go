package main

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// The controllers the CLI leaves the handshake to, and how it finds them.
const (
	// kubepactLease is the Lease kubepact-controller's replicas elect
	// their leader with (its LeaderElectionID).
	kubepactLease = "kubepact-controller.kubepact.io"
	// kubepactApp is the app.kubernetes.io/name of kubepact-controller's
	// Deployment (config/controller).
	kubepactApp = "kubepact-controller"
	// liqoLease is the Lease of Liqo's controller manager.
	liqoLease = "66cf253f.ctrlmgr.liqo.io"
	// liqoDeployment is the Deployment of Liqo's controller manager, in
	// the Liqo namespace.
	liqoDeployment = "liqo-controller-manager"
	appNameLabel   = "app.kubernetes.io/name"
	versionLabel   = "app.kubernetes.io/version"
)

var (
	// errNoController reports a cluster where no controller answers the
	// handshake's objects: nothing was written.
	errNoController = errors.New("no controller answers the handshake")
	// errNotPeered reports an unauthenticate of clusters with no peering
	// between them: nothing was changed.
	errNotPeered = errors.New("not peered")
	// errNonceMismatch reports a consumer that already holds a signed
	// nonce for the provider, other than the one the provider issued.
	errNonceMismatch = errors.New("the consumer holds a signed nonce for another nonce")
	// errTenantMismatch reports a Tenant built by the consumer's
	// controller for another consumer or another proxy URL than asked:
	// nothing was applied on the provider.
	errTenantMismatch = errors.New("the consumer's controller built a Tenant for another request")
	// errProviderNeedsClusterKey reports a provider that refused the CSR
	// of a key of the identity's own with Liqo's InvalidCSR: Liqo's
	// provider certifies only the cluster key (--send-cluster-key).
	errProviderNeedsClusterKey = errors.New("the provider refuses a certificate for a key of the identity's own, as Liqo's does")
	// errNotStrict reports a Tenant whose CSR is for the cluster key,
	// though the CLI asked the consumer's kubepact-controller for a key of
	// the identity's own (as it does unless --send-cluster-key): nothing was
	// applied on the provider.
	errNotStrict = errors.New("the consumer's controller gives identities no key of their own")
	// errUntrustedTenant reports a Tenant, read from the consumer's
	// signed-nonce Secret, that is not signed with the consumer cluster's
	// key as its kubepact-controller publishes it (kube.PublicKeyRecord):
	// anyone who may write Secrets in the consumer's tenant namespace can
	// put a Tenant there. Nothing was applied on the provider.
	errUntrustedTenant = errors.New("the Tenant is not signed with the consumer cluster's key")
	// errNoPublicKey reports a consumer whose kubepact-controller publishes
	// no cluster public key (kube.PublicKeyRecord), as versions before it
	// did not: the CLI has nothing trusted to check the Tenant against, and
	// applies nothing on the provider.
	errNoPublicKey = errors.New("the consumer's kubepact-controller publishes no cluster public key")
)

// controllerInfo is a running controller.
type controllerInfo struct {
	liqo  bool   // Liqo's controller manager, else kubepact-controller
	where string // "Deployment kubepact-system/kubepact-controller"
	// lease is the Lease the controller was found to hold, nil when none
	// was: a wait reads it again (watchControllers).
	lease *types.NamespacedName
	// deployment is the Deployment the controller was found by, nil when
	// found by its Lease alone.
	deployment *types.NamespacedName
}

// findController finds the controller that answers the handshake on a
// cluster: a ready Deployment of kubepact-controller (in any namespace) or
// of Liqo's controller manager (in liqoNamespace), else a Lease one of them
// holds and renews, judged by the API server's time: a controller that
// holds its Lease answers, however many of its Deployment's replicas are
// ready. A *NoControllerError when there is none, naming the Deployment
// that has no ready replica, if one does.
func findController(ctx context.Context, client kubernetes.Interface, liqoNamespace string) (*controllerInfo, error) {
	none := &NoControllerError{}
	deps, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: appNameLabel + "=" + kubepactApp})
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("looking for kubepact-controller's Deployment: %w", err)
	}
	if err == nil {
		for _, d := range deps.Items {
			none.see(&d)
			if d.Status.ReadyReplicas > 0 {
				return &controllerInfo{where: "Deployment " + d.Namespace + "/" + d.Name,
					deployment: &types.NamespacedName{Namespace: d.Namespace, Name: d.Name},
					lease:      heldLease(ctx, client, d.Namespace, kubepactLease)}, nil
			}
		}
	}
	d, err := client.AppsV1().Deployments(liqoNamespace).Get(ctx, liqoDeployment, metav1.GetOptions{})
	if err == nil {
		none.see(d)
	}
	switch {
	case err == nil && d.Status.ReadyReplicas > 0:
		return &controllerInfo{liqo: true, where: "Deployment " + d.Namespace + "/" + d.Name,
			deployment: &types.NamespacedName{Namespace: d.Namespace, Name: d.Name},
			lease:      heldLease(ctx, client, d.Namespace, liqoLease)}, nil
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("looking for Liqo's controller manager: %w", err)
	}
	for _, l := range []struct {
		name string
		liqo bool
	}{{kubepactLease, false}, {liqoLease, true}} {
		leases, err := client.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", l.name).String(),
		})
		if err != nil {
			return nil, fmt.Errorf("looking for the Lease %s: %w", l.name, err)
		}
		for _, lease := range leases.Items {
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
				continue
			}
			if ref := heldLease(ctx, client, lease.Namespace, lease.Name); ref != nil {
				return &controllerInfo{liqo: l.liqo, where: "Lease " + lease.Namespace + "/" + lease.Name, lease: ref}, nil
			}
		}
	}
	return nil, none
}

// NoControllerError reports a cluster where no controller answers the
// handshake: no Deployment of kubepact-controller or of Liqo's controller
// manager has a ready replica, and no Lease of theirs is held. It wraps
// errNoController.
type NoControllerError struct {
	// Deployment is the first such Deployment found, with none of its
	// pods ready; zero when there is none.
	Deployment types.NamespacedName
	// Ready and Replicas are its ready and desired pods.
	Ready, Replicas int32
}

// see records d, a Deployment of a controller, when it is the first seen.
func (e *NoControllerError) see(d *appsv1.Deployment) {
	if e.Deployment.Name != "" {
		return
	}
	e.Deployment = types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	e.Ready, e.Replicas = d.Status.ReadyReplicas, 1
	if d.Spec.Replicas != nil {
		e.Replicas = *d.Spec.Replicas
	}
}

func (e *NoControllerError) Error() string {
	if e.Deployment.Name == "" {
		return errNoController.Error()
	}
	return fmt.Sprintf("%v: deployment %s has %d/%d pods ready", errNoController, e.Deployment, e.Ready, e.Replicas)
}

func (e *NoControllerError) Unwrap() error { return errNoController }

// fix says what to do about it on the cluster of role, before "or pass
// --local".
func (e *NoControllerError) fix(role string) string {
	if e.Deployment.Name == "" {
		return "run kubepact-controller or Liqo there"
	}
	return fmt.Sprintf("see why with kubectl describe deployment %s -n %s on the %s cluster", e.Deployment.Name, e.Deployment.Namespace, role)
}

// heldLease returns the Lease namespace/name when it is held, judged by
// the API server's time (readLease), nil when it is not or cannot be read.
func heldLease(ctx context.Context, client kubernetes.Interface, namespace, name string) *types.NamespacedName {
	l, now, err := readLease(ctx, client, namespace, name)
	if err != nil || !held(l, now) {
		return nil
	}
	return &types.NamespacedName{Namespace: namespace, Name: name}
}

func deploymentVersion(d *appsv1.Deployment) string {
	if v := labelOr(d.Labels, versionLabel, ""); v != "" {
		return v
	}
	return labelOr(d.Spec.Template.Labels, versionLabel, "unknown")
}

func labelOr(labels map[string]string, key, def string) string {
	if v := labels[key]; v != "" {
		return v
	}
	return def
}

// clusters are a consumer and a provider, connected, with their IDs read
// and checked.
type clusters struct {
	consumer, provider     *cluster
	consumerID, providerID string
	// consumerCtl and providerCtl are the controllers that answer on each
	// cluster, once found (controllers).
	consumerCtl, providerCtl *controllerInfo
	// progress tells what the command waits for.
	progress *progress
	// left is what the command wrote, in order: what a command stopped
	// before its end leaves behind.
	left []string
	// tenantApplied tells that authenticate applied the Tenant.
	tenantApplied bool
}

// wrote records what the command wrote, for a command stopped before its
// end to say what it leaves behind.
func (c *clusters) wrote(format string, a ...any) {
	c.left = append(c.left, fmt.Sprintf(format, a...))
}

// controllerOf returns the controller found on cl, nil before controllers.
func (c *clusters) controllerOf(cl *cluster) *controllerInfo {
	if cl == c.provider {
		return c.providerCtl
	}
	return c.consumerCtl
}

// watchControllers returns a context that ends, with a
// *ControllerGoneError as its cause, when the controller of either
// cluster stops (see watchControllers).
func (c *clusters) watchControllers(ctx context.Context) (context.Context, context.CancelFunc) {
	return watchControllers(ctx, watched{c.provider, c.providerCtl}, watched{c.consumer, c.consumerCtl})
}

// connectClusters connects both clusters and reads their IDs, checking the
// flags against what the clusters record. It writes nothing.
func (p *pairFlags) connectClusters(ctx context.Context, e *env) (*clusters, error) {
	if err := p.consumer.check(consumerRole); err != nil {
		return nil, err
	}
	if err := p.provider.check(providerRole); err != nil {
		return nil, err
	}
	cons, err := p.consumer.connect(consumerRole)
	if err != nil {
		return nil, err
	}
	prov, err := p.provider.connect(providerRole)
	if err != nil {
		return nil, err
	}
	consumerID, err := cons.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	e.consumerID = consumerID
	providerID, err := prov.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	if consumerID == providerID {
		return nil, usagef("the consumer and the provider have the same cluster ID %q", consumerID)
	}
	return &clusters{consumer: cons, provider: prov, consumerID: consumerID, providerID: providerID, progress: newProgress(e.stderr)}, nil
}

// controllers finds the controllers of both clusters, or fails with
// errNoController naming the cluster without one.
func (c *clusters) controllers(ctx context.Context, e *env) (consumerCtl, providerCtl *controllerInfo, err error) {
	var none *NoControllerError
	if providerCtl, err = findController(ctx, c.provider.client, c.provider.namespace); errors.As(err, &none) {
		return nil, nil, fmt.Errorf("provider cluster: %w: %s, or pass --local to do the provider's steps from here with its admin kubeconfig", err, none.fix(providerRole))
	} else if err != nil {
		return nil, nil, fmt.Errorf("provider cluster: %w", err)
	}
	if consumerCtl, err = findController(ctx, c.consumer.client, c.consumer.namespace); errors.As(err, &none) {
		return nil, nil, fmt.Errorf("consumer cluster: %w: %s, or pass --local", err, none.fix(consumerRole))
	} else if err != nil {
		return nil, nil, fmt.Errorf("consumer cluster: %w", err)
	}
	fmt.Fprintf(e.stderr, " INFO  Provider controller: %s\n INFO  Consumer controller: %s\n", providerCtl.where, consumerCtl.where)
	c.consumerCtl, c.providerCtl = consumerCtl, providerCtl
	return consumerCtl, providerCtl, nil
}

// peered reports whether the consumer holds an Identity of the provider or
// the provider a Tenant of the consumer.
func (c *clusters) peered(ctx context.Context) (bool, error) {
	var id authv1beta1.Identity
	err := c.consumer.typed.Get(ctx, objectKey(clusterid.TenantNamespace(c.providerID), identity.ControlPlaneName(c.providerID)), &id)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading the consumer's Identity: %w", err)
	}
	var t authv1beta1.Tenant
	err = c.provider.typed.Get(ctx, objectKey(clusterid.TenantNamespace(c.consumerID), c.consumerID), &t)
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading the provider's Tenant: %w", err)
	}
	return false, nil
}

// notPeered is the error of an unauthenticate that found no peering.
func (c *clusters) notPeered() error {
	return fmt.Errorf("%w: consumer %s holds no Identity of provider %s, and the provider no Tenant of it: nothing was changed",
		errNotPeered, c.consumerID, c.providerID)
}

// unpeered handles an unauthenticate that finds neither the consumer's
// Identity of the provider nor the provider's Tenant of the consumer. When
// a tenant namespace of the peering is there (authenticate makes them,
// unauthenticate leaves them, as liqoctl does), the peering was removed
// already: it says so and returns nil, as liqoctl succeeds on an Identity
// and a Tenant already deleted, so that a script may run unauthenticate
// twice. When neither is, there never was a peering: errNotPeered, as
// liqoctl fails without a tenant namespace. With revoke, nothing is left
// to record the revocation on: errNotPeered.
func (c *clusters) unpeered(ctx context.Context, e *env, revoke bool) error {
	if revoke {
		return c.notPeered()
	}
	was := false
	for _, ns := range []struct {
		cl   *cluster
		name string
	}{{c.consumer, clusterid.TenantNamespace(c.providerID)}, {c.provider, clusterid.TenantNamespace(c.consumerID)}} {
		_, err := ns.cl.client.CoreV1().Namespaces().Get(ctx, ns.name, metav1.GetOptions{})
		switch {
		case err == nil:
			was = true
		case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
			return fmt.Errorf("%s cluster: reading namespace %s: %w", ns.cl.role, ns.name, err)
		}
	}
	if !was {
		return c.notPeered()
	}
	fmt.Fprintf(e.stderr, " INFO  Identity %s/%s already gone on the consumer\n INFO  Tenant %s/%s already gone on the provider\n",
		clusterid.TenantNamespace(c.providerID), identity.ControlPlaneName(c.providerID), clusterid.TenantNamespace(c.consumerID), c.consumerID)
	fmt.Fprintf(e.stdout, "Consumer %s is no longer authenticated on provider %s (its Identity and Tenant were already gone)\n", c.consumerID, c.providerID)
	return nil
}

// declarativeOptions tune authenticateDeclarative.
type declarativeOptions struct {
	proxyURL    string
	installCRDs bool
	strict      bool
	// sendClusterKey asks the certificate for the cluster key, as Liqo's
	// provider requires; by default the identity gets a key of its own,
	// whatever the provider shows of itself.
	sendClusterKey bool
	alg            algorithmFlag
	// algSet tells a --key-algorithm given from its default.
	algSet bool
}

// authenticateDeclarative runs the handshake as liqoctl does, leaving every
// step of the provider to its controller: it writes the nonce request on
// the provider and the signed-nonce request on the consumer, waiting for
// each controller to answer, then applies the Tenant on the provider and
// the Identity it gets back on the consumer. It never creates a CSR,
// approves one, or binds a role on the provider.
//
// Where the consumer runs kubepact-controller, that controller builds the
// Tenant too, beside the signature (contract.TenantKey): the CLI reads
// it from the signed-nonce Secret and never reads the cluster key, so its
// consumer credentials need no access to the key Secrets. Since whoever may
// write Secrets in the consumer's tenant namespace may write that Tenant,
// the CLI applies it only when it is signed with the cluster key that the
// controller publishes (kube.PublicKeyRecord, written by its ServiceAccount
// alone), and refuses a consumer whose controller publishes none
// (errNoPublicKey). The CLI asks for a CSR for a key of the identity's own
// (contract.TenantOwnKeyKey), so that the cluster key stays home, unless
// --send-cluster-key asks for the cluster key's CSR, which Liqo's provider
// requires: what the provider shows of itself never decides it. Liqo's
// provider refuses the former with InvalidCSR (errProviderNeedsClusterKey).
// With Liqo's controller on the consumer it builds the Tenant as liqoctl
// does, with the cluster key it reads.
//
// Every wait says what it waits for (progress), and ends at the first
// answer that needs a person (waiter: a refusal, or a controller that
// cannot go on without an administrator) or when a controller's Lease
// runs out (watchControllers). A signal ends it with an *InterruptedError
// that says what was left behind and how to go on.
func authenticateDeclarative(ctx context.Context, e *env, pf *pairFlags, o declarativeOptions) error {
	c, err := pf.connectClusters(ctx, e)
	if err != nil {
		return settle(ctx, err, nil, &InterruptedError{Command: "authenticate"})
	}
	if _, _, err := c.controllers(ctx, e); err != nil {
		return settle(ctx, err, c, &InterruptedError{Command: "authenticate"})
	}
	wctx, stop := c.watchControllers(ctx)
	defer stop()
	err = c.authenticate(wctx, e, o)
	ie := &InterruptedError{Command: "authenticate", Resume: "nothing was written: run authenticate again"}
	if len(c.left) > 0 {
		ie.Resume = "to resume, run the same authenticate command again: it goes on from what is left"
		ie.Clean = "the tenant namespaces and nonce Secrets may stay (liqoctl leaves them too; the next authenticate reuses them)"
		if c.tenantApplied {
			ie.Clean = "to remove the Tenant (and any Identity) instead, run unauthenticate with the same flags; " + ie.Clean
		}
	}
	return settle(wctx, err, c, ie)
}

// authenticate runs the steps of authenticateDeclarative, once both
// controllers are found.
func (c *clusters) authenticate(ctx context.Context, e *env, o declarativeOptions) error {
	consumerCtl := c.consumerCtl
	if !consumerCtl.liqo && o.algSet {
		return usagef("--key-algorithm: the consumer's kubepact-controller makes the cluster key (set its --key-algorithm), or pass --local")
	}
	if err := c.consumer.ensureCRDs(ctx, o.installCRDs, authv1beta1.IdentityResource); err != nil {
		return err
	}
	if err := c.provider.ensureCRDs(ctx, o.installCRDs, authv1beta1.TenantResource); err != nil {
		return err
	}
	info := func(format string, a ...any) { fmt.Fprintf(e.stderr, " INFO  "+format+"\n", a...) }

	// 1. The tenant namespaces, on both clusters.
	if err := kube.NewNamespaces(c.consumer.client).Ensure(ctx, tenant.Namespace(c.providerID)); err != nil {
		return fmt.Errorf("consumer cluster: %w", err)
	}
	c.wrote("tenant namespace %s on the consumer", clusterid.TenantNamespace(c.providerID))
	info("Tenant namespace %s ensured on the consumer", clusterid.TenantNamespace(c.providerID))
	if err := kube.NewNamespaces(c.provider.client).Ensure(ctx, tenant.Namespace(c.consumerID)); err != nil {
		return fmt.Errorf("provider cluster: %w", err)
	}
	c.wrote("tenant namespace %s on the provider", clusterid.TenantNamespace(c.consumerID))
	info("Tenant namespace %s ensured on the provider", clusterid.TenantNamespace(c.consumerID))

	// 2. The nonce, filled by the provider's controller.
	n, err := ensureNonce(ctx, c)
	if err != nil {
		return err
	}
	info("Nonce issued by the provider")

	// 3. The signed nonce, signed by the consumer's controller; kubepact's
	// builds the Tenant beside it.
	var t *authv1beta1.Tenant
	// A Liqo consumer's controller applies Identities with the cluster key,
	// as liqoctl's handshakes need: it gets no key of its own.
	ownKey := false
	if consumerCtl.liqo {
		if _, err := ensureSignedNonce(ctx, c, n, nil); err != nil {
			return err
		}
		info("Nonce signed by the consumer")
		// 4. The Tenant, built here with the consumer's cluster key, as
		// liqoctl builds it.
		cons, err := c.consumer.consumer(c.consumerID, nil, &consumer.Options{KeyAlgorithm: o.alg.alg, Strict: o.strict})
		if err != nil {
			return err
		}
		if t, err = cons.Tenant(ctx, c.providerID, n, &consumer.TenantOptions{ProxyURL: o.proxyURL}); err != nil {
			return err
		}
	} else {
		// The consumer decides where its cluster key goes, never the
		// provider: what a provider shows of itself (its Deployments, its
		// Leases) is the provider's to fake. The identity gets a key of its
		// own unless --send-cluster-key, which a Liqo provider needs: it
		// refuses any other CSR (InvalidCSR, errProviderNeedsClusterKey).
		ownKey = !o.sendClusterKey
		if o.sendClusterKey {
			fmt.Fprintf(e.stderr, " WARN  --send-cluster-key: the certificate is for the consumer's cluster key, whose private half then lands in the kubeconfig Secret %s/%s\n",
				clusterid.TenantNamespace(c.providerID), kubeconfig.SecretName(identity.ControlPlaneName(c.providerID)))
		}
		s, err := ensureSignedNonce(ctx, c, n, &tenantRequest{proxyURL: o.proxyURL, ownKey: ownKey})
		if err != nil {
			return err
		}
		info("Nonce signed by the consumer")
		clusterKey, err := publishedKey(ctx, c.consumer)
		if err != nil {
			return err
		}
		want := tenantWant{consumerID: c.consumerID, providerID: c.providerID, clusterKey: clusterKey, proxyURL: o.proxyURL, ownKey: ownKey}
		if t, err = controllerTenant(s, n, want, time.Now()); err != nil {
			return fmt.Errorf("consumer cluster: Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		info("Tenant built by the consumer's controller")
	}
	// 4. The Tenant, applied on the provider; its controller verifies,
	// signs and binds.
	want, err := cleanTenant(t)
	if err != nil {
		return err
	}
	store := kube.NewTenantStore(c.provider.typed)
	// Keep the finalizers of a stored Tenant: the provider's controller
	// applies them under the same field manager.
	cur, err := store.Get(ctx, want.Namespace, want.Name)
	switch {
	case err == nil:
		want.Finalizers = cur.Finalizers
	case !errors.Is(err, tenant.ErrNotFound):
		return fmt.Errorf("provider cluster: %w", err)
	}
	tw := c.startWait(ctx, c.provider, tenantsResource, want.Namespace, want.Name, "the provider's controller to accept the Tenant")
	defer tw.stop()
	if _, err := store.Apply(ctx, want); err != nil {
		return fmt.Errorf("provider cluster: %w", err)
	}
	c.wrote("Tenant %s/%s on the provider", want.Namespace, want.Name)
	c.tenantApplied = true
	info("Tenant %s/%s applied on the provider", want.Namespace, want.Name)
	// The certificate must be for the key this Tenant's CSR is for: a
	// status an earlier handshake left holds another one, and the
	// provider may still refuse this Tenant (Liqo's InvalidCSR).
	asked, err := csr.Check(want.Spec.CSR, csr.ControlPlanePolicy(c.consumerID, nil))
	if err != nil {
		return err
	}
	accepted, err := waitTenant(c, tw, asked.PublicKey())
	var refused *RefusedError
	if ownKey && errors.As(err, &refused) && refused.Reason == liqoInvalidCSR {
		return fmt.Errorf("%w: %w", errProviderNeedsClusterKey, err)
	}
	if err != nil {
		return err
	}
	info("Tenant accepted by the provider's controller")

	// 5. The Identity, applied on the consumer; its controller writes the
	// kubeconfig Secret.
	id, err := identity.Build(c.providerID, *accepted.Status.AuthParams, &identity.BuildOptions{TenantNamespace: accepted.Status.TenantNamespace})
	if err != nil {
		return err
	}
	iw := c.startWait(ctx, c.consumer, identitiesResource, id.Namespace, id.Name, "the consumer's controller to write the kubeconfig Secret")
	defer iw.stop()
	if _, err := kube.NewIdentityStore(c.consumer.typed).Apply(ctx, id); err != nil {
		return fmt.Errorf("consumer cluster: %w", err)
	}
	c.wrote("Identity %s/%s on the consumer", id.Namespace, id.Name)
	info("Identity %s/%s applied on the consumer", id.Namespace, id.Name)
	applied, err := waitIdentity(c, iw)
	if err != nil {
		return err
	}
	info("Kubeconfig Secret written by the consumer's controller")
	fmt.Fprintf(e.stdout, "Kubeconfig Secret %s/%s\n  server:    %s\n  user:      %s\n  namespace: %s\n",
		applied.Namespace, applied.Status.KubeconfigSecretRef.Name, applied.Spec.AuthParams.APIServer, c.consumerID, accepted.Status.TenantNamespace)
	return nil
}

// ensureNonce writes the nonce request (the Secret liqo-nonce without data)
// on the provider, unless there is one, and waits for its nonce.
func ensureNonce(ctx context.Context, c *clusters) (nonce.Nonce, error) {
	req := nonce.Secret(c.consumerID, nonce.Entry{})
	req.Data, req.Annotations = nil, nil
	secrets := c.provider.client.CoreV1().Secrets(req.Namespace)
	w := c.startWait(ctx, c.provider, secretsResource, req.Namespace, req.Name, "the provider's controller to issue the nonce")
	defer w.stop()
	if _, err := secrets.Create(ctx, req, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nonce.Nonce{}, fmt.Errorf("provider cluster: creating Secret %s/%s: %w", req.Namespace, req.Name, err)
	}
	c.wrote("nonce Secret %s/%s on the provider", req.Namespace, req.Name)
	var n nonce.Nonce
	err := waitSecret(c, w, func(s *corev1.Secret) (bool, error) {
		if len(s.Data[nonce.SecretKey]) == 0 {
			return false, nil
		}
		entry, err := nonce.FromSecret(s)
		n = entry.Nonce
		return err == nil, err
	})
	return n, err
}

// tenantRequest asks the consumer's kubepact-controller for the Tenant
// answering the nonce, beside its signature (contract.TenantKey).
type tenantRequest struct {
	proxyURL string // contract.TenantProxyURLKey; empty for none
	// ownKey asks for a CSR for a key of the identity's own
	// (contract.TenantOwnKeyKey).
	ownKey bool
}

// ensureSignedNonce writes the signed-nonce request (the Secret
// liqo-signed-nonce with the nonce) on the consumer and waits for its
// signature. A request already there must hold the same nonce. With tr,
// it also asks for a fresh Tenant and waits for it: a Tenant already there
// is removed, so that the controller builds one with a transcript that has
// not run down and for this proxy URL. It returns the Secret as answered.
func ensureSignedNonce(ctx context.Context, c *clusters, n nonce.Nonce, tr *tenantRequest) (*corev1.Secret, error) {
	req := nonce.SignedSecret(c.providerID, n, nil)
	delete(req.Data, nonce.SignedSecretKey)
	if tr != nil && tr.proxyURL != "" {
		req.Data[contract.TenantProxyURLKey] = []byte(tr.proxyURL)
	}
	if tr != nil && tr.ownKey {
		req.Data[contract.TenantOwnKeyKey] = []byte(contract.TenantOwnKey)
	}
	what := "the consumer's controller to sign the nonce"
	if tr != nil {
		what = "the consumer's controller to sign the nonce and build the Tenant"
	}
	secrets := c.consumer.client.CoreV1().Secrets(req.Namespace)
	w := c.startWait(ctx, c.consumer, secretsResource, req.Namespace, req.Name, what)
	defer w.stop()
	_, err := secrets.Create(ctx, req, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		cur, err := secrets.Get(ctx, req.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("consumer cluster: reading Secret %s/%s: %w", req.Namespace, req.Name, err)
		}
		if string(cur.Data[nonce.SecretKey]) != n.Text() {
			return nil, fmt.Errorf("%w: Secret %s/%s on the consumer; delete it to answer the provider's nonce", errNonceMismatch, req.Namespace, req.Name)
		}
		if tr != nil {
			if err := requestTenant(ctx, secrets, cur, tr); err != nil {
				return nil, fmt.Errorf("consumer cluster: asking for a Tenant in Secret %s/%s: %w", req.Namespace, req.Name, err)
			}
		}
	} else if err != nil {
		return nil, fmt.Errorf("consumer cluster: creating Secret %s/%s: %w", req.Namespace, req.Name, err)
	}
	c.wrote("signed-nonce Secret %s/%s on the consumer", req.Namespace, req.Name)
	var answered *corev1.Secret
	err = waitSecret(c, w, func(s *corev1.Secret) (bool, error) {
		answered = s
		return len(s.Data[nonce.SignedSecretKey]) > 0 && (tr == nil || len(s.Data[contract.TenantKey]) > 0), nil
	})
	return answered, err
}

// requestTenant turns the signed-nonce Secret cur into a request for a
// fresh Tenant: it removes the Tenant it holds and sets the proxy URL and
// the request for a key of the identity's own. Liqo's keys stay as they
// are. It is not held to cur's resourceVersion: a write of the controller
// in between would only fail it, and the Tenant that answers is checked
// anyway (controllerTenant).
func requestTenant(ctx context.Context, secrets corev1client.SecretInterface, cur *corev1.Secret, tr *tenantRequest) error {
	var proxy any // null removes it
	if tr.proxyURL != "" {
		proxy = []byte(tr.proxyURL)
	}
	var own any // null removes it
	if tr.ownKey {
		own = []byte(contract.TenantOwnKey)
	}
	patch, err := json.Marshal(map[string]any{
		"data": map[string]any{contract.TenantKey: nil, contract.TenantProxyURLKey: proxy, contract.TenantOwnKeyKey: own},
	})
	if err != nil {
		return err
	}
	_, err = secrets.Patch(ctx, cur.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager})
	return err
}

// publishedKey reads the consumer cluster's public key from the record its
// kubepact-controller publishes in the key namespace (kube.PublicKeyRecord),
// which only that controller's ServiceAccount may write (the admission
// policy kubepact-cluster-public-key): the key the Tenant it hands over must
// be signed with. The CLI never reads the private key. No record is
// errNoPublicKey.
func publishedKey(ctx context.Context, cl *cluster) (crypto.PublicKey, error) {
	pub, err := kube.NewPublicKeyRecord(cl.client, cl.namespace).Get(ctx)
	if errors.Is(err, keys.ErrNotFound) {
		return nil, fmt.Errorf("consumer cluster: %w (ConfigMap %s/%s): upgrade the consumer's kubepact-controller, which publishes it, or pass --local",
			errNoPublicKey, cl.namespace, kube.PublicKeyRecordName)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer cluster: reading the cluster's public key: %w", err)
	}
	return pub, nil
}

// tenantWant is what the Tenant that the consumer's controller built must
// be: from consumerID, for providerID, signed with clusterKey (the key the
// controller publishes), with proxyURL, and, with ownKey, asking a
// certificate for a key other than the cluster key.
type tenantWant struct {
	consumerID, providerID string
	clusterKey             crypto.PublicKey
	proxyURL               string
	ownKey                 bool
}

// controllerTenant reads the Tenant that the consumer's kubepact-controller
// built beside the signature in the signed-nonce Secret s, and checks it
// before it is applied on the provider: that it answers n for
// want.providerID (tenant.Verify, its transcript included, at now), that
// its key, which signed the nonce, is want.clusterKey, that it comes from
// want.consumerID with want.proxyURL, and, with want.ownKey, that it asks a
// certificate for a key other than the cluster key. Its errors wrap
// tenant.ErrMalformed, a *tenant.FieldError, errUntrustedTenant,
// errTenantMismatch or errNotStrict.
//
// Whoever may write Secrets in the consumer's tenant namespace may write
// s: the Tenant is input, trusted only for the key that signed it.
func controllerTenant(s *corev1.Secret, n nonce.Nonce, want tenantWant, now time.Time) (*authv1beta1.Tenant, error) {
	t, err := tenant.Decode(s.Data[contract.TenantKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", contract.TenantKey, err)
	}
	v, err := tenant.Verify(t, n, &tenant.VerifyOptions{ProviderID: want.providerID, Policy: tenant.Strict, Now: now})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", contract.TenantKey, err)
	}
	if want.clusterKey == nil || !keys.Equal(v.PublicKey, want.clusterKey) {
		return nil, fmt.Errorf("%w: %s is signed with key %s, the consumer cluster's is %s: someone who may write Secrets in namespace %s wrote it; nothing was applied",
			errUntrustedTenant, contract.TenantKey, keys.Fingerprint(v.PublicKey), fingerprintOf(want.clusterKey), s.Namespace)
	}
	if v.ClusterID != want.consumerID {
		return nil, fmt.Errorf("%w: %s is of consumer %q, not %q", errTenantMismatch, contract.TenantKey, v.ClusterID, want.consumerID)
	}
	if got := ptr.Deref(v.ProxyURL, ""); got != want.proxyURL {
		// Neither URL is quoted: either may hold a password.
		return nil, fmt.Errorf("%w: %s has another proxy URL than --proxy-url", errTenantMismatch, contract.TenantKey)
	}
	if want.ownKey && keys.Equal(v.CSR.PublicKey(), v.PublicKey) {
		return nil, fmt.Errorf("%w: its CSR is for the cluster key, though the request (%s) asked a key of the identity's own",
			errNotStrict, contract.TenantOwnKeyKey)
	}
	return t, nil
}

// fingerprintOf is keys.Fingerprint, "none" for no key.
func fingerprintOf(pub crypto.PublicKey) string {
	if pub == nil {
		return "none"
	}
	return keys.Fingerprint(pub)
}

// waitSecret waits, through w, for cond to hold for the Secret.
func waitSecret(c *clusters, w *waiter, cond func(*corev1.Secret) (bool, error)) error {
	return w.until(c, func(u *unstructured.Unstructured) (bool, error) {
		var s corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return false, err
		}
		return cond(&s)
	})
}

// waitTenant waits, through w, for the provider's controller to fill a
// Tenant's status with a certificate for pub, the key the Tenant's CSR is
// for: a status left by an earlier handshake, for another key, is not an
// answer to this one.
func waitTenant(c *clusters, w *waiter, pub crypto.PublicKey) (*authv1beta1.Tenant, error) {
	var t authv1beta1.Tenant
	err := w.until(c, func(u *unstructured.Unstructured) (bool, error) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &t); err != nil {
			return false, err
		}
		if t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0 {
			return false, nil
		}
		cert, err := csr.ParseCertificate(t.Status.AuthParams.SignedCRT)
		return err == nil && keys.Equal(cert.PublicKey, pub), nil
	})
	return &t, err
}

// waitIdentity waits, through w, for the consumer's controller to write an
// Identity's kubeconfig Secret.
func waitIdentity(c *clusters, w *waiter) (*authv1beta1.Identity, error) {
	var id authv1beta1.Identity
	err := w.until(c, func(u *unstructured.Unstructured) (bool, error) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &id); err != nil {
			return false, err
		}
		return id.Status.KubeconfigSecretRef != nil, nil
	})
	return &id, err
}

// unauthenticateDeclarative removes a peering as liqoctl does: it deletes
// the consumer's ControlPlane Identity (whose controller deletes the
// kubeconfig Secret) and the provider's Tenant (whose controller unbinds it,
// or, with revoke, records its certificates as revoked). Either already
// gone is skipped, and both gone is a success that says so (unpeered). Its
// waits end as authenticate's do.
func unauthenticateDeclarative(ctx context.Context, e *env, pf *pairFlags, revoke bool) error {
	ie := &InterruptedError{Command: "unauthenticate", Resume: "run unauthenticate again to finish: it skips what is already gone"}
	c, err := pf.connectClusters(ctx, e)
	if err != nil {
		return settle(ctx, err, nil, ie)
	}
	peered, err := c.peered(ctx)
	if err != nil {
		return settle(ctx, err, nil, ie)
	}
	if !peered {
		return settle(ctx, c.unpeered(ctx, e, revoke), nil, ie)
	}
	if _, _, err := c.controllers(ctx, e); err != nil {
		return settle(ctx, err, nil, ie)
	}
	wctx, stop := c.watchControllers(ctx)
	defer stop()
	return settle(wctx, c.unauthenticate(wctx, e, revoke), nil, ie)
}

// unauthenticate runs the steps of unauthenticateDeclarative, once both
// controllers are found.
func (c *clusters) unauthenticate(ctx context.Context, e *env, revoke bool) error {
	idNS, idName := clusterid.TenantNamespace(c.providerID), identity.ControlPlaneName(c.providerID)
	// As in-process: the ControlPlane identity outlives the slices, which
	// the consumer's controller replicates through it.
	held, err := kube.NewSliceStore(c.consumer.typed).List(ctx, idNS)
	if err != nil {
		return fmt.Errorf("consumer cluster: %w", err)
	}
	if len(held) > 0 {
		return fmt.Errorf("%w: ResourceSlice %s/%s still exists on the consumer", consumer.ErrInUse, idNS, held[0].Name)
	}
	info := func(format string, a ...any) { fmt.Fprintf(e.stderr, " INFO  "+format+"\n", a...) }

	err = c.consumer.typed.Get(ctx, objectKey(idNS, idName), &authv1beta1.Identity{})
	idGone := apierrors.IsNotFound(err)
	switch {
	case err != nil && !idGone:
		return fmt.Errorf("consumer cluster: reading Identity %s/%s: %w", idNS, idName, err)
	case !idGone:
		if err := kube.NewIdentityStore(c.consumer.typed).Delete(ctx, idNS, idName); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("consumer cluster: %w", err)
		}
	}
	if err := c.waitGone(ctx, c.consumer, secretsResource, idNS, kubeconfig.SecretName(idName), "the consumer's controller to delete the kubeconfig Secret"); err != nil {
		return err
	}
	if idGone {
		info("Identity %s/%s already gone on the consumer", idNS, idName)
	} else {
		info("Identity %s/%s and its kubeconfig Secret deleted on the consumer", idNS, idName)
	}

	if revoke {
		// The provider deletes the nonce of a revoked consumer: the next
		// handshake signs a new one.
		err := c.consumer.client.CoreV1().Secrets(idNS).Delete(ctx, nonce.SignedSecretName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("consumer cluster: deleting Secret %s/%s: %w", idNS, nonce.SignedSecretName, err)
		}
	}
	tNS := clusterid.TenantNamespace(c.consumerID)
	tenants := c.provider.dynamic.Resource(tenantsResource).Namespace(tNS)
	if revoke {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{lifecycle.RevokeAnnotation: "true"}}})
		if err != nil {
			return err
		}
		if _, err := tenants.Patch(ctx, c.consumerID, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("provider cluster: annotating Tenant %s/%s: %w", tNS, c.consumerID, err)
		}
	}
	err = tenants.Delete(ctx, c.consumerID, metav1.DeleteOptions{})
	tenantGone := apierrors.IsNotFound(err)
	if err != nil && !tenantGone {
		return fmt.Errorf("provider cluster: deleting Tenant %s/%s: %w", tNS, c.consumerID, err)
	}
	if err := c.waitGone(ctx, c.provider, tenantsResource, tNS, c.consumerID, "the provider's controller to remove the Tenant"); err != nil {
		return err
	}
	if tenantGone {
		info("Tenant %s/%s already gone on the provider", tNS, c.consumerID)
	} else {
		info("Tenant %s/%s removed by the provider's controller", tNS, c.consumerID)
	}
	if revoke {
		fmt.Fprintf(e.stdout, "Consumer %s is no longer authenticated on provider %s, and its certificates are recorded as revoked\n", c.consumerID, c.providerID)
		return nil
	}
	fmt.Fprintf(e.stdout, "Consumer %s is no longer authenticated on provider %s\n", c.consumerID, c.providerID)
	return nil
}

func objectKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

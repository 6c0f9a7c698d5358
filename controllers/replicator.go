package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
)

// DefaultReplicationResync is how often, unless ConsumerConfig says
// otherwise, the replicator reads the provider's copy of each replicated
// object to bring its status back: a status the provider writes reaches
// the consumer within this bound (plus one request).
const DefaultReplicationResync = 5 * time.Second

// replicatedKind is what the replicator needs of one kind.
type replicatedKind[T client.Object] struct {
	name     string
	resource schema.GroupVersionResource
	kind     string
	new      func() T
	// spec and status point into an object.
	spec, status func(T) any
	// setStatus copies the status of from into to.
	setStatus func(to, from T)
	// ready reports whether a local object is complete enough to copy.
	ready func(T) bool
}

var (
	sliceKind = replicatedKind[*authv1beta1.ResourceSlice]{
		name: replicatorControllerName + "-resourceslice", kind: authv1beta1.ResourceSliceKind,
		resource:  authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource),
		new:       func() *authv1beta1.ResourceSlice { return &authv1beta1.ResourceSlice{} },
		spec:      func(s *authv1beta1.ResourceSlice) any { return &s.Spec },
		status:    func(s *authv1beta1.ResourceSlice) any { return &s.Status },
		setStatus: func(to, from *authv1beta1.ResourceSlice) { to.Status = *from.Status.DeepCopy() },
		ready: func(s *authv1beta1.ResourceSlice) bool {
			return len(s.Spec.CSR) > 0 && s.Spec.ConsumerClusterID != nil && s.Spec.ProviderClusterID != nil
		},
	}
	renewKind = replicatedKind[*authv1beta1.Renew]{
		name: replicatorControllerName + "-renew", kind: authv1beta1.RenewKind,
		resource:  authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.RenewResource),
		new:       func() *authv1beta1.Renew { return &authv1beta1.Renew{} },
		spec:      func(r *authv1beta1.Renew) any { return &r.Spec },
		status:    func(r *authv1beta1.Renew) any { return &r.Status },
		setStatus: func(to, from *authv1beta1.Renew) { to.Status = *from.Status.DeepCopy() },
		ready:     func(r *authv1beta1.Renew) bool { return r.Spec.ConsumerClusterID != "" },
	}
)

// setupReplicator adds the replicator for ResourceSlices and Renews.
func setupReplicator(mgr manager.Manager, cfg ConsumerConfig) error {
	resync := cfg.ReplicationResync
	if resync <= 0 {
		resync = DefaultReplicationResync
	}
	remotes := &remotes{client: mgr.GetClient()}
	if err := addReplicator(mgr, sliceKind, cfg.ClusterID, resync, remotes); err != nil {
		return err
	}
	return addReplicator(mgr, renewKind, cfg.ClusterID, resync, remotes)
}

func addReplicator[T client.Object](mgr manager.Manager, k replicatedKind[T], consumerID string, resync time.Duration, remotes *remotes) error {
	r := &replicator[T]{kind: k, consumerID: consumerID, resync: resync, client: mgr.GetClient(), remotes: remotes,
		events: mgr.GetEventRecorder(replicatorControllerName)}
	if err := ctrl.NewControllerManagedBy(mgr).Named(k.name).
		For(k.new(), builder.WithPredicates(labelTrue(resourceslice.ReplicationLabel))).
		Complete(r); err != nil {
		return fmt.Errorf("controllers: %s: %w", k.name, err)
	}
	return nil
}

// replicator copies the spec of local objects labelled
// liqo.io/replication=true to the provider named by their liqo.io/remoteID
// label, into that provider's tenant namespace for this consumer, through
// the consumer's ControlPlane kubeconfig for the provider; it copies the
// status of the provider's copy back, and deletes that copy when the local
// object is deleted. Nothing but the status is read from the provider.
type replicator[T client.Object] struct {
	kind       replicatedKind[T]
	consumerID string
	resync     time.Duration
	client     client.Client
	remotes    *remotes
	events     events.EventRecorder
}

func (r *replicator[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	local := r.kind.new()
	if err := r.client.Get(ctx, req.NamespacedName, local); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	providerID := local.GetLabels()[resourceslice.RemoteIDLabel]
	if clusterid.Validate(providerID) != nil || local.GetNamespace() != clusterid.TenantNamespace(providerID) {
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate",
			"a replicated %s must live in the tenant namespace of the provider of its %s label (%q): not replicated",
			r.kind.kind, resourceslice.RemoteIDLabel, truncate(providerID))
		return reconcile.Result{}, metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, errInvalidObject, false)
	}
	if local.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.remove(ctx, local, providerID)
	}
	if !r.kind.ready(local) {
		return reconcile.Result{}, nil // its own reconciler completes it, and the update requeues
	}
	if !controllerutil.ContainsFinalizer(local, resourceslice.ReplicationFinalizer) {
		patch := client.MergeFromWithOptions(local.DeepCopyObject().(T), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(local, resourceslice.ReplicationFinalizer)
		if err := r.client.Patch(ctx, local, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	remote, err := r.remotes.get(ctx, providerID)
	if err != nil {
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate", "%v", err)
		return reconcile.Result{RequeueAfter: r.resync}, metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, err, false)
	}
	api := remote.Resource(r.kind.resource).Namespace(clusterid.TenantNamespace(r.consumerID))
	want, err := r.remoteObject(local)
	if err != nil {
		return reconcile.Result{}, err
	}
	got, err := api.Apply(ctx, local.GetName(), want, metav1.ApplyOptions{FieldManager: kube.FieldManager, Force: true})
	if err != nil {
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate", "copying to provider %s: %v", providerID, err)
		return reconcile.Result{RequeueAfter: r.resync}, metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, err, false)
	}
	theirs := r.kind.new()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, theirs); err != nil {
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate", "the provider's copy does not decode: %v", err)
		return reconcile.Result{RequeueAfter: r.resync}, metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, err, false)
	}
	if !equality.Semantic.DeepEqual(r.kind.status(local), r.kind.status(theirs)) {
		r.kind.setStatus(local, theirs)
		if err := r.client.Status().Update(ctx, local); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: r.resync}, nil
}

// remoteObject returns the apply of local's copy: name, the provider-side
// labels and the spec, nothing else.
func (r *replicator[T]) remoteObject(local T) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r.kind.spec(local))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(r.kind.kind)
	u.SetName(local.GetName())
	u.SetNamespace(clusterid.TenantNamespace(r.consumerID))
	u.SetLabels(resourceslice.ProviderLabels(r.consumerID))
	return u, nil
}

// remove deletes the provider's copy of the deleted local object, then the
// replicator's finalizer. Without a ControlPlane kubeconfig for the
// provider (unauthenticated, forced), the copy cannot be reached: the
// finalizer goes, and an Event says the copy stays.
func (r *replicator[T]) remove(ctx context.Context, local T, providerID string) error {
	if !controllerutil.ContainsFinalizer(local, resourceslice.ReplicationFinalizer) {
		return nil
	}
	remote, err := r.remotes.get(ctx, providerID)
	switch {
	case err == nil:
		derr := remote.Resource(r.kind.resource).Namespace(clusterid.TenantNamespace(r.consumerID)).Delete(ctx, local.GetName(), metav1.DeleteOptions{})
		if derr != nil && !apierrors.IsNotFound(derr) {
			r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate", "deleting the provider's copy: %v", derr)
			return metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, derr, true)
		}
	case apierrors.IsNotFound(err):
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate",
			"no ControlPlane kubeconfig for provider %s: its copy of %s was not deleted", providerID, local.GetName())
		_ = metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, err, false)
	default:
		r.events.Eventf(local, nil, corev1.EventTypeWarning, contract.ReasonReplicationFailed, "Replicate", "%v", err)
		return metrics.failed(ctx, replicatorControllerName, contract.ReasonReplicationFailed, err, true)
	}
	patch := client.MergeFromWithOptions(local.DeepCopyObject().(T), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(local, resourceslice.ReplicationFinalizer)
	return client.IgnoreNotFound(r.client.Patch(ctx, local, patch))
}

// remotes builds, and keeps while its Secret is unchanged, a dynamic
// client per provider from the consumer's ControlPlane kubeconfig Secret.
type remotes struct {
	client client.Client
	mu     sync.Mutex
	byID   map[string]remote
}

type remote struct {
	version string
	client  dynamic.Interface
}

// get returns the client of providerID; a missing kubeconfig Secret gives
// a NotFound API error.
func (rs *remotes) get(ctx context.Context, providerID string) (dynamic.Interface, error) {
	var s corev1.Secret
	name := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
	if err := rs.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(providerID), Name: name}, &s); err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.byID[providerID]; ok && r.version == s.ResourceVersion {
		return r.client, nil
	}
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	rc, err := cfg.RESTConfig()
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	if rs.byID == nil {
		rs.byID = map[string]remote{}
	}
	rs.byID[providerID] = remote{version: s.ResourceVersion, client: dyn}
	return dyn, nil
}

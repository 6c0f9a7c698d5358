package controllers

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/resourceslice"
)

// setupSliceConsumer adds the consumer's ResourceSlice reconciler and the
// replicator.
func setupSliceConsumer(mgr manager.Manager, c *consumer.Consumer, cfg ConsumerConfig) error {
	r := &sliceConsumerReconciler{client: mgr.GetClient(), consumer: c, events: mgr.GetEventRecorder(consumerSliceControllerName)}
	if err := ctrl.NewControllerManagedBy(mgr).Named(consumerSliceControllerName).
		For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(labelTrue(resourceslice.ReplicationLabel))).
		Complete(r); err != nil {
		return err
	}
	return setupReplicator(mgr, cfg)
}

// sliceConsumerReconciler completes local ResourceSlices (consumer ID,
// CSR) and manages their Identities: applied when the provider accepts the
// slice, removed when it denies it or the slice is deleted.
type sliceConsumerReconciler struct {
	client   client.Client
	consumer *consumer.Consumer
	events   events.EventRecorder
}

func (r *sliceConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s authv1beta1.ResourceSlice
	if err := r.client.Get(ctx, req.NamespacedName, &s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	providerID, _ := strings.CutPrefix(s.Namespace, clusterid.TenantNamespacePrefix)
	if s.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(&s, resourceslice.Finalizer) {
			return reconcile.Result{}, nil
		}
		if err := r.consumer.ForgetSlice(ctx, providerID, s.Name); err != nil {
			r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonSliceFailed, "ForgetSlice", "%v", err)
			return reconcile.Result{}, metrics.failed(ctx, sliceControllerName, contract.ReasonSliceFailed, err, true)
		}
		metrics.forget(roleConsumer, providerID, identity.ResourceSliceName(s.Name))
		patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(&s, resourceslice.Finalizer)
		if err := r.client.Patch(ctx, &s, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		r.events.Eventf(&s, nil, corev1.EventTypeNormal, contract.ReasonSliceRemoved, "ForgetSlice", "ResourceSlice identity, kubeconfig Secret and key removed")
		return reconcile.Result{}, nil
	}

	done, changed, err := r.consumer.CompleteSlice(ctx, &s)
	if err != nil {
		reason, _ := reasonOf(err, contract.ReasonSliceFailed)
		if errors.Is(err, resourceslice.ErrMalformed) {
			reason = contract.ReasonInvalidSlice
		}
		r.events.Eventf(&s, nil, corev1.EventTypeWarning, reason, "CompleteSlice", "%v", err)
		return reconcile.Result{}, metrics.failed(ctx, sliceControllerName, reason, err, transient(err))
	}
	if changed || !controllerutil.ContainsFinalizer(done, resourceslice.Finalizer) {
		// The finalizer first: it is what removes the Identity and key.
		controllerutil.AddFinalizer(done, resourceslice.Finalizer)
		if err := r.client.Update(ctx, done); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		return reconcile.Result{}, nil // the update requeues
	}

	if len(s.Status.Conditions) == 0 {
		return reconcile.Result{}, nil // not answered yet
	}
	applied := hasSecretRef(ctx, r.client, s.Namespace, s.Name)
	a, err := r.consumer.ApplySliceIdentity(ctx, &s, nil)
	switch {
	case err == nil:
		if !applied {
			r.events.Eventf(&s, nil, corev1.EventTypeNormal, contract.ReasonSliceIdentityApplied, "ApplySliceIdentity", "ResourceSlice identity is ready")
			metrics.accepted(flowIdentity, contract.ReasonSliceIdentityApplied, s.CreationTimestamp.Time, time.Now())
		}
		if a != nil && a.Identity != nil {
			metrics.expires(roleConsumer, providerID, a.Identity.Name, a.Identity.Spec.AuthParams.SignedCRT)
		}
		return reconcile.Result{}, nil
	case errors.Is(err, consumer.ErrSlicePending):
		return reconcile.Result{}, nil
	case errors.Is(err, consumer.ErrSliceDenied):
		r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonSliceDenied, "ApplySliceIdentity", "%v", err)
		metrics.handshake(flowIdentity, resultRefused, contract.ReasonSliceDenied)
		metrics.forget(roleConsumer, providerID, identity.ResourceSliceName(s.Name))
		return reconcile.Result{}, metrics.failed(ctx, sliceControllerName, contract.ReasonSliceDenied, err, false)
	case transient(err):
		r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonSliceFailed, "ApplySliceIdentity", "%v", err)
		metrics.handshake(flowIdentity, resultFailed, contract.ReasonSliceFailed)
		return reconcile.Result{}, metrics.failed(ctx, sliceControllerName, contract.ReasonSliceFailed, err, true)
	}
	r.events.Eventf(&s, nil, corev1.EventTypeWarning, contract.ReasonSliceIdentityRejected, "ApplySliceIdentity", "%v", err)
	metrics.handshake(flowIdentity, resultRefused, contract.ReasonSliceIdentityRejected)
	return reconcile.Result{}, metrics.failed(ctx, sliceControllerName, contract.ReasonSliceIdentityRejected, err, false)
}

// hasSecretRef reports whether the slice's Identity points at its Secret.
func hasSecretRef(ctx context.Context, c client.Client, namespace, slice string) bool {
	var id authv1beta1.Identity
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: identity.ResourceSliceName(slice)}, &id); err != nil {
		return false
	}
	return id.Status.KubeconfigSecretRef != nil
}

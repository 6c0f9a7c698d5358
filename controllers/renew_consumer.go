package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/renewal"
)

// renewalControllerName names the consumer's renewal reconciler, also the
// reporting controller of its Events.
const renewalControllerName = "kubepact-renewal"

// setupRenewConsumer adds the consumer's renewal reconciler to mgr.
func setupRenewConsumer(mgr manager.Manager, c *kubepact.Consumer, renews *kube.RenewStore, clk clock.PassiveClock) error {
	rr := &renewConsumerReconciler{client: mgr.GetClient(), consumer: c, renews: renews, clock: realClock(clk),
		events: mgr.GetEventRecorder(renewalControllerName)}
	if err := ctrl.NewControllerManagedBy(mgr).Named(renewalControllerName).
		For(&authv1beta1.Identity{}).
		Owns(&authv1beta1.Renew{}).
		Complete(rr); err != nil {
		return fmt.Errorf("controllers: %s: %w", renewalControllerName, err)
	}
	return nil
}

// renewConsumerReconciler keeps one Renew per applied ControlPlane Identity
// (SPEC §7, Renewal), which the CRD replicator carries to the provider and
// whose status it brings back, and switches the Identity, and so its
// kubeconfig Secret, to the renewed credentials the status carries once
// they pass the consumer's checks. A Strict consumer asks, at its renewal
// deadline, for a certificate for a fresh key.
type renewConsumerReconciler struct {
	client   client.Client
	consumer *kubepact.Consumer
	renews   *kube.RenewStore
	clock    clock.PassiveClock
	events   events.EventRecorder
}

func (r *renewConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var id authv1beta1.Identity
	if err := r.client.Get(ctx, req.NamespacedName, &id); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // its Renew goes with it
	}
	providerID := id.Spec.ClusterID
	if id.DeletionTimestamp != nil || id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Status.KubeconfigSecretRef == nil ||
		clusterid.Validate(providerID) != nil || id.Namespace != clusterid.TenantNamespace(providerID) || id.Name != renewal.Name(providerID) {
		return reconcile.Result{}, nil // not applied, or not one the Identity reconciler applies
	}
	var held *authv1beta1.Renew
	var rn authv1beta1.Renew
	switch err := r.client.Get(ctx, req.NamespacedName, &rn); {
	case err == nil:
		held = &rn
	case client.IgnoreNotFound(err) != nil:
		return reconcile.Result{}, err
	}
	// A Renew controlled by another Identity is left over from an earlier
	// identity of the same name (unauthenticated, then authenticated again
	// before the garbage collector or the replicator's finalizer let it
	// go): its status answers that identity, not this one. It is deleted,
	// exactly as read, and this Identity's Renew is made once it is gone
	// (its deletion requeues the Identity).
	if owner := controllerOf(held); owner != nil && owner.UID != id.UID {
		if held.DeletionTimestamp == nil {
			uid := held.UID
			err := r.client.Delete(ctx, held, client.Preconditions{UID: &uid})
			if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	}

	if held != nil && renewal.Changed(id.Spec.AuthParams.SignedCRT, &held.Status) {
		a, err := r.consumer.Renewed(ctx, providerID, held, nil)
		if err != nil {
			// The kubeconfig held stays. A refused certificate waits for the
			// provider's next answer; anything else is retried with backoff.
			reason, terminal := renewReasonOf(err)
			r.events.Eventf(&id, nil, corev1.EventTypeWarning, reason, "Renew", "renewed credentials not applied: %v", err)
			if terminal {
				metrics.renewal(roleConsumer, resultRefused)
			} else {
				metrics.renewal(roleConsumer, resultFailed)
			}
			if terminal || !transient(err) && reason == contract.ReasonRenewFailed {
				return reconcile.Result{}, metrics.failed(ctx, renewalControllerName, reason, err, false)
			}
			return reconcile.Result{}, metrics.failed(ctx, renewalControllerName, reason, err, true)
		}
		if a != nil {
			r.events.Eventf(&id, nil, corev1.EventTypeNormal, contract.ReasonIdentityRenewed, "Renew", "Identity renewed: the kubeconfig Secret holds the new certificate")
			metrics.renewal(roleConsumer, resultRenewed)
			if a.Identity != nil {
				metrics.expires(roleConsumer, providerID, a.Identity.Name, a.Identity.Spec.AuthParams.SignedCRT)
			}
			return reconcile.Result{}, nil // the Identity's update brings it back
		}
	}

	want, err := r.consumer.RenewRequest(ctx, providerID, held)
	if err != nil {
		reason, terminal := renewReasonOf(err)
		r.events.Eventf(&id, nil, corev1.EventTypeWarning, reason, "RenewRequest", "%v", err)
		if terminal || !transient(err) && reason == contract.ReasonRenewFailed {
			return reconcile.Result{}, metrics.failed(ctx, renewalControllerName, reason, err, false)
		}
		return reconcile.Result{}, metrics.failed(ctx, renewalControllerName, reason, err, true)
	}
	if held == nil || !sameRequest(held, want.Renew) {
		if _, err := r.renews.Apply(ctx, want.Renew); err != nil {
			return reconcile.Result{}, err
		}
	}
	if want.At.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: renewal.Wait(want.At, r.clock.Now(), minRenewalWait)}, nil
}

// sameRequest reports whether held already carries what want applies: its
// spec, labels and owner references.
// controllerOf returns the controller reference of r, nil for no r or no
// controller.
func controllerOf(r *authv1beta1.Renew) *metav1.OwnerReference {
	if r == nil {
		return nil
	}
	return metav1.GetControllerOf(r)
}

func sameRequest(held, want *authv1beta1.Renew) bool {
	for k, v := range want.Labels {
		if held.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(held.Spec, want.Spec) && len(held.OwnerReferences) == len(want.OwnerReferences) &&
		(len(want.OwnerReferences) == 0 || held.OwnerReferences[0].UID == want.OwnerReferences[0].UID)
}

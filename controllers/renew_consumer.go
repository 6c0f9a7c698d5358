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

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/renewal"
)

// renewalControllerName names the consumer's renewal reconciler, also the
// reporting controller of its Events.
const renewalControllerName = "kubepact-renewal"

// setupRenewConsumer adds the consumer's renewal reconciler to mgr.
func setupRenewConsumer(mgr manager.Manager, c *consumer.Consumer, renews *kube.RenewStore, clk clock.PassiveClock) error {
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
	consumer *consumer.Consumer
	renews   *kube.RenewStore
	clock    clock.PassiveClock
	events   events.EventRecorder
}

func (r *renewConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id, err := r.appliedIdentity(ctx, req)
	if id == nil || err != nil {
		return reconcile.Result{}, err
	}
	held, err := r.heldRenew(ctx, req)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A Renew controlled by another Identity is left over from an earlier
	// identity of the same name (unauthenticated, then authenticated again
	// before the garbage collector or the replicator's finalizer let it
	// go): its status answers that identity, not this one. It is deleted,
	// exactly as read, and this Identity's Renew is made once it is gone
	// (its deletion requeues the Identity).
	if owner := controllerOf(held); owner != nil && owner.UID != id.UID {
		return reconcile.Result{}, r.deleteLeftover(ctx, held)
	}
	if held != nil && renewal.Changed(id.Spec.AuthParams.SignedCRT, &held.Status) {
		if done, err := r.applyRenewed(ctx, id, held); done {
			return reconcile.Result{}, err // on success, the Identity's update brings it back
		}
	}
	return r.request(ctx, id, held)
}

// appliedIdentity reads the Identity of req, nil when it is gone, not
// applied, or not one the Identity reconciler applies.
func (r *renewConsumerReconciler) appliedIdentity(ctx context.Context, req reconcile.Request) (*authv1beta1.Identity, error) {
	var id authv1beta1.Identity
	if err := r.client.Get(ctx, req.NamespacedName, &id); err != nil {
		return nil, client.IgnoreNotFound(err) // its Renew goes with it
	}
	providerID := id.Spec.ClusterID
	if id.DeletionTimestamp != nil || id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Status.KubeconfigSecretRef == nil ||
		clusterid.Validate(providerID) != nil || id.Namespace != clusterid.TenantNamespace(providerID) || id.Name != renewal.Name(providerID) {
		return nil, nil
	}
	return &id, nil
}

// heldRenew reads the Renew of req, nil when there is none.
func (r *renewConsumerReconciler) heldRenew(ctx context.Context, req reconcile.Request) (*authv1beta1.Renew, error) {
	var rn authv1beta1.Renew
	switch err := r.client.Get(ctx, req.NamespacedName, &rn); {
	case err == nil:
		return &rn, nil
	case client.IgnoreNotFound(err) != nil:
		return nil, err
	}
	return nil, nil
}

// deleteLeftover deletes held, a Renew another Identity controls, exactly
// as read, unless it is already going.
func (r *renewConsumerReconciler) deleteLeftover(ctx context.Context, held *authv1beta1.Renew) error {
	if held.DeletionTimestamp != nil {
		return nil
	}
	uid := held.UID
	err := r.client.Delete(ctx, held, client.Preconditions{UID: &uid})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// applyRenewed switches id to the renewed credentials held's status
// carries, and reports whether the reconcile ends there: when it switched,
// or failed. The kubeconfig held stays when they fail the consumer's
// checks: a refused certificate waits for the provider's next answer;
// anything else is retried with backoff.
func (r *renewConsumerReconciler) applyRenewed(ctx context.Context, id *authv1beta1.Identity, held *authv1beta1.Renew) (bool, error) {
	a, err := r.consumer.Renewed(ctx, id.Spec.ClusterID, held, nil)
	if err != nil {
		reason, terminal := renewReasonOf(err)
		r.events.Eventf(id, nil, corev1.EventTypeWarning, reason, "Renew", "renewed credentials not applied: %v", err)
		if terminal {
			metrics.renewal(roleConsumer, resultRefused)
		} else {
			metrics.renewal(roleConsumer, resultFailed)
		}
		return true, renewFailed(ctx, reason, terminal, err)
	}
	if a == nil {
		return false, nil
	}
	r.events.Eventf(id, nil, corev1.EventTypeNormal, contract.ReasonIdentityRenewed, "Renew", "Identity renewed: the kubeconfig Secret holds the new certificate")
	metrics.renewal(roleConsumer, resultRenewed)
	if a.Identity != nil {
		metrics.expires(roleConsumer, id.Spec.ClusterID, a.Identity.Name, a.Identity.Spec.AuthParams.SignedCRT)
	}
	return true, nil
}

// request applies the Renew id needs now, when held is not it already, and
// comes back at its renewal deadline.
func (r *renewConsumerReconciler) request(ctx context.Context, id *authv1beta1.Identity, held *authv1beta1.Renew) (reconcile.Result, error) {
	want, err := r.consumer.RenewRequest(ctx, id.Spec.ClusterID, held)
	if err != nil {
		reason, terminal := renewReasonOf(err)
		r.events.Eventf(id, nil, corev1.EventTypeWarning, reason, "RenewRequest", "%v", err)
		return reconcile.Result{}, renewFailed(ctx, reason, terminal, err)
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

// renewFailed counts and logs a failure of the renewal reconciler, and
// returns what Reconcile returns for it: retried with backoff unless it is
// terminal, or a RenewFailed that no retry cures.
func renewFailed(ctx context.Context, reason string, terminal bool, err error) error {
	return metrics.failed(ctx, renewalControllerName, reason, err, retried(err, reason, contract.ReasonRenewFailed, terminal))
}

// controllerOf returns the controller reference of r, nil for no r or no
// controller.
func controllerOf(r *authv1beta1.Renew) *metav1.OwnerReference {
	if r == nil {
		return nil
	}
	return metav1.GetControllerOf(r)
}

// sameRequest reports whether held already carries what want applies: its
// spec, labels and owner references.
func sameRequest(held, want *authv1beta1.Renew) bool {
	for k, v := range want.Labels {
		if held.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(held.Spec, want.Spec) && len(held.OwnerReferences) == len(want.OwnerReferences) &&
		(len(want.OwnerReferences) == 0 || held.OwnerReferences[0].UID == want.OwnerReferences[0].UID)
}

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
)

// sliceControllerName names the provider's ResourceSlice reconciler,
// consumerSliceControllerName the consumer's, and replicatorControllerName
// the consumer's replicator. Names are unique in a manager, which may run
// both roles.
const (
	sliceControllerName         = "kubepact-resourceslice"
	consumerSliceControllerName = "kubepact-resourceslice-consumer"
	replicatorControllerName    = "kubepact-replicator"
)

// setupSliceProvider adds the provider's ResourceSlice reconciler: it
// judges the slices replicated into tenant namespaces (label
// liqo.io/replicated), on a change of their spec or their status, of their
// consumer's Tenant, or of a CertificateSigningRequest of their consumer;
// and, when a slice of their consumer is deleted, those that hold no
// credentials yet (waitingSlicesOf).
func setupSliceProvider(mgr manager.Manager, p *provider.Provider, workers int, settled predicate.Predicate, clk clock.PassiveClock) error {
	r := &sliceProviderReconciler{client: mgr.GetClient(), provider: p, clock: realClock(clk), events: mgr.GetEventRecorder(sliceControllerName)}
	b := ctrl.NewControllerManagedBy(mgr).Named(sliceControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(labelTrue(resourceslice.ReplicatedLabel),
			predicate.Or(predicate.GenerationChangedPredicate{}, deleting(), sliceStatusChanged()))).
		Watches(&authv1beta1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.slicesOf(func(o client.Object) string { return o.GetName() }))).
		Watches(&authv1beta1.ResourceSlice{}, handler.EnqueueRequestsFromMapFunc(r.waitingSlicesOf),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			}))
	if settled != nil {
		b = b.Watches(&certificatesv1.CertificateSigningRequest{},
			handler.EnqueueRequestsFromMapFunc(r.slicesOf(func(o client.Object) string { return o.GetLabels()[clusterid.Label] })),
			builder.WithPredicates(settled))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("controllers: %s: %w", sliceControllerName, err)
	}
	return nil
}

// sliceStatusChanged admits an update of a slice's status. The consumer
// may write it (resourceslices/status is in its ControlPlane role), and a
// status the provider did not compute (conditions, resources above the
// slice policy's cap: next to Liqo, what sets the peer's quota) is
// computed anew at once. The provider's own write comes back too, and
// AcceptSlice then returns the same status: nothing is written.
func sliceStatusChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*authv1beta1.ResourceSlice)
		cur, ok2 := e.ObjectNew.(*authv1beta1.ResourceSlice)
		return ok1 && ok2 && !equality.Semantic.DeepEqual(&old.Status, &cur.Status)
	}}
}

// sliceProviderReconciler runs Provider.AcceptSlice and writes the status
// it returns; it runs Provider.ForgetSlice for a deleted slice.
type sliceProviderReconciler struct {
	client   client.Client
	provider *provider.Provider
	clock    clock.PassiveClock
	events   events.EventRecorder
}

// sliceRenewal brings an accepted slice back when its certificate is due
// for re-signing, as the Tenant reconciler does for the ControlPlane's:
// AcceptSlice then re-signs it (csr.Issue) and the status carries the new
// certificate to the consumer.
func sliceRenewal(status *authv1beta1.ResourceSliceStatus, now time.Time) reconcile.Result {
	if status == nil || status.AuthParams == nil || !resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeAuthentication) {
		return reconcile.Result{}
	}
	return requeueAtRenewal(status.AuthParams.SignedCRT, now)
}

// slicesOf maps an object naming a consumer (consumer returns its ID) to
// the replicated slices in that consumer's tenant namespace.
func (r *sliceProviderReconciler) slicesOf(consumer func(client.Object) string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		id := consumer(o)
		if clusterid.Validate(id) != nil {
			return nil
		}
		var list authv1beta1.ResourceSliceList
		if err := r.client.List(ctx, &list, client.InNamespace(clusterid.TenantNamespace(id)), client.MatchingLabels{resourceslice.ReplicatedLabel: "true"}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i, s := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)}
		}
		return out
	}
}

// waitingSlicesOf maps a deleted ResourceSlice to the replicated slices
// of its tenant namespace that hold no credentials in their status: those
// a bound on the consumer's live slices (resourceslice.ErrSliceLimit) may
// have kept waiting, which the deletion may let in. The status only picks
// what to requeue; AcceptSlice decides from the provider's own records.
func (r *sliceProviderReconciler) waitingSlicesOf(ctx context.Context, o client.Object) []reconcile.Request {
	id, ok := strings.CutPrefix(o.GetNamespace(), clusterid.TenantNamespacePrefix)
	if !ok || clusterid.Validate(id) != nil {
		return nil
	}
	var list authv1beta1.ResourceSliceList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{resourceslice.ReplicatedLabel: "true"}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if s := &list.Items[i]; s.Status.AuthParams == nil && s.DeletionTimestamp == nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
		}
	}
	return out
}

func (r *sliceProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var s authv1beta1.ResourceSlice
	if err := r.client.Get(ctx, req.NamespacedName, &s); err != nil {
		if consumerID, ok := strings.CutPrefix(req.Namespace, clusterid.TenantNamespacePrefix); ok && apierrors.IsNotFound(err) {
			metrics.forget(roleProvider, consumerID, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if s.DeletionTimestamp != nil {
		return reconcile.Result{}, r.remove(ctx, &s)
	}
	// Before anything is signed or bound: the finalizer is what removes
	// them.
	if err := r.addFinalizer(ctx, &s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	status, err := r.provider.AcceptSlice(ctx, &s)
	if res, done, err := r.notJudged(ctx, &s, err); done {
		return res, err
	}
	return r.writeStatus(ctx, &s, status, err)
}

// addFinalizer adds kubepact's finalizer to s unless s carries it.
func (r *sliceProviderReconciler) addFinalizer(ctx context.Context, s *authv1beta1.ResourceSlice) error {
	if controllerutil.ContainsFinalizer(s, resourceslice.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(s, resourceslice.Finalizer)
	return r.client.Patch(ctx, s, patch)
}

// notJudged handles an AcceptSlice that ended in err with no status to
// write, and reports whether it did: a certificate pending, a bound of the
// consumer reached, or any error but a denial, which has a status.
func (r *sliceProviderReconciler) notJudged(ctx context.Context, s *authv1beta1.ResourceSlice, err error) (reconcile.Result, bool, error) {
	var bound *resourceslice.BoundError
	switch {
	case errors.Is(err, csr.ErrPending):
		r.events.Eventf(s, nil, corev1.EventTypeNormal, contract.ReasonCertificatePending, "AcceptSlice", "%v", err)
		return reconcile.Result{}, true, nil
	case errors.As(err, &bound):
		// Nothing signed, and the status left as it is: judged again when
		// the bound lifts (a slice of the consumer deleted, for the count).
		reason := boundReason(err)
		r.events.Eventf(s, nil, corev1.EventTypeWarning, reason, "AcceptSlice", "%v", err)
		metrics.handshake(flowResourceSlice, resultRefused, reason)
		var after time.Duration
		if !bound.Until.IsZero() {
			after = max(bound.Until.Sub(r.clock.Now()), 0) + time.Second
		}
		return reconcile.Result{RequeueAfter: after}, true, metrics.failed(ctx, sliceControllerName, reason, err, false)
	case err != nil && !errors.As(err, new(*resourceslice.DeniedError)):
		reason, terminal := reasonOf(err, contract.ReasonSliceFailed)
		r.events.Eventf(s, nil, corev1.EventTypeWarning, reason, "AcceptSlice", "%v", err)
		if terminal {
			metrics.handshake(flowResourceSlice, resultRefused, reason)
		} else {
			metrics.handshake(flowResourceSlice, resultFailed, reason)
		}
		return reconcile.Result{}, true, metrics.failed(ctx, sliceControllerName, reason, err, retried(err, reason, contract.ReasonSliceFailed, terminal))
	}
	return reconcile.Result{}, false, nil
}

// writeStatus writes status, AcceptSlice's judgement of s, unless s holds
// it already, and records it: an Event, the certificate's expiry and, for
// a first acceptance, the handshake's duration. err is AcceptSlice's: nil,
// or the denial of s's authentication (*resourceslice.DeniedError). It
// comes back when s's certificate falls due.
func (r *sliceProviderReconciler) writeStatus(ctx context.Context, s *authv1beta1.ResourceSlice, status *authv1beta1.ResourceSliceStatus, err error) (reconcile.Result, error) {
	now := r.clock.Now()
	renew := sliceRenewal(status, now)
	authenticated := resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeAuthentication)
	recordExpiry(s, status, authenticated)
	if equality.Semantic.DeepEqual(&s.Status, status) {
		return renew, nil
	}
	was := resourceslice.Accepted(&s.Status, authv1beta1.ResourceSliceConditionTypeAuthentication)
	s.Status = *status
	if uerr := r.client.Status().Update(ctx, s); uerr != nil {
		return reconcile.Result{}, client.IgnoreNotFound(uerr)
	}
	reason := contract.ReasonSliceAccepted
	switch {
	case errors.As(err, new(*resourceslice.DeniedError)):
		r.events.Eventf(s, nil, corev1.EventTypeWarning, contract.ReasonSliceDenied, "AcceptSlice", "%v", err)
		metrics.handshake(flowResourceSlice, resultRefused, contract.ReasonSliceDenied)
		return renew, metrics.failed(ctx, sliceControllerName, contract.ReasonSliceDenied, err, false)
	case !resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources):
		reason = contract.ReasonSliceResourcesDenied
		r.events.Eventf(s, nil, corev1.EventTypeNormal, contract.ReasonSliceResourcesDenied, "AcceptSlice", "%s",
			resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeResources).Message)
	default:
		r.events.Eventf(s, nil, corev1.EventTypeNormal, contract.ReasonSliceAccepted, "AcceptSlice", "ResourceSlice status is filled")
	}
	if authenticated && !was {
		metrics.accepted(flowResourceSlice, reason, s.CreationTimestamp.Time, now)
	}
	return renew, nil
}

// recordExpiry sets the expiry gauge of s's certificate when s is
// authenticated and holds one, and removes it otherwise.
func recordExpiry(s *authv1beta1.ResourceSlice, status *authv1beta1.ResourceSliceStatus, authenticated bool) {
	consumerID, ok := strings.CutPrefix(s.Namespace, clusterid.TenantNamespacePrefix)
	if !ok {
		return
	}
	if authenticated && status.AuthParams != nil {
		metrics.expires(roleProvider, consumerID, s.Name, status.AuthParams.SignedCRT)
	} else {
		metrics.forget(roleProvider, consumerID, s.Name)
	}
}

// remove runs Provider.ForgetSlice for a deleted slice carrying kubepact's
// finalizer, then removes only that finalizer.
func (r *sliceProviderReconciler) remove(ctx context.Context, s *authv1beta1.ResourceSlice) error {
	if !controllerutil.ContainsFinalizer(s, resourceslice.Finalizer) {
		return nil
	}
	if err := r.provider.ForgetSlice(ctx, s.Namespace, s.Name); err != nil {
		r.events.Eventf(s, nil, corev1.EventTypeWarning, contract.ReasonSliceFailed, "ForgetSlice", "%v", err)
		return metrics.failed(ctx, sliceControllerName, contract.ReasonSliceFailed, err, true)
	}
	if consumerID, ok := strings.CutPrefix(s.Namespace, clusterid.TenantNamespacePrefix); ok {
		metrics.forget(roleProvider, consumerID, s.Name)
	}
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(s, resourceslice.Finalizer)
	if err := r.client.Patch(ctx, s, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.events.Eventf(s, nil, corev1.EventTypeNormal, contract.ReasonSliceRemoved, "ForgetSlice", "ResourceSlice removed: cached certificate and unneeded bindings deleted")
	return nil
}

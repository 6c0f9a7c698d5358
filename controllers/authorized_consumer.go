package controllers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
)

const authorizedConsumerControllerName = "kubepact-authorized-consumer"

// authorizedConsumerReconciler grants the consumers an AuthorizedConsumer
// commits: it records the committed request as the consumer's Tenant
// (provider.Enrol), which the Tenant reconciler accepts as it accepts
// every Tenant, and once it has, signs the Identity with the enrolment
// key into the object's status, where the enrolment endpoint serves it.
// Deleting the object forgets the consumer (provider.Forget): its grants
// go, and it may peer again.
type authorizedConsumerReconciler struct {
	client   client.Client
	provider *provider.Provider
	keys     *enrolmentKeeper // the enrolment key
	events   events.EventRecorder
	clock    clock.PassiveClock
}

func setupAuthorizedConsumers(mgr manager.Manager, r *authorizedConsumerReconciler, keyChanged <-chan event.GenericEvent) error {
	toConsumer := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != clusterid.TenantNamespace(o.GetName()) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).Named(authorizedConsumerControllerName).
		For(&peeringv1alpha1.AuthorizedConsumer{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleting()))).
		// The Tenant's status, filled by the Tenant reconciler, is what
		// the grant waits for; a re-signed certificate changes it too.
		Watches(&authv1beta1.Tenant{}, toConsumer).
		// A new enrolment key (a rotation's switch): every grant is
		// signed again.
		WatchesRawSource(source.Channel(keyChanged, &handler.EnqueueRequestForObject{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("controllers: %s: %w", authorizedConsumerControllerName, err)
	}
	return nil
}

func (r *authorizedConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ac peeringv1alpha1.AuthorizedConsumer
	if err := r.client.Get(ctx, req.NamespacedName, &ac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ac.DeletionTimestamp != nil {
		return reconcile.Result{}, r.forget(ctx, &ac)
	}
	if !controllerutil.ContainsFinalizer(&ac, peeringv1alpha1.Finalizer) {
		// Added before anything is granted, so that a deletion always
		// comes through here; the reconcile goes on, for the update
		// changes no generation and comes back to no one.
		if err := patchFinalizer(ctx, r.client, &ac, true); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ac.Spec.Revoked {
		return reconcile.Result{}, r.revoke(ctx, &ac)
	}
	issued, err := r.provider.Enrol(ctx, ac.Name)
	switch {
	case errors.Is(err, provider.ErrEnrolling):
		return reconcile.Result{}, r.setStatus(ctx, &ac, kReconciling, contract.ReasonEnrolling,
			fmt.Sprintf("the committed request is recorded as Tenant %s/%s, which the Tenant reconciler accepts", clusterid.TenantNamespace(ac.Name), ac.Name), nil)
	case err != nil:
		return r.refused(ctx, &ac, err)
	}
	grant, err := r.grant(ctx, &ac, issued)
	if err != nil {
		r.events.Eventf(&ac, nil, corev1.EventTypeWarning, contract.ReasonAcceptFailed, "Grant", "signing the grant: %v", err)
		return reconcile.Result{}, metrics.failed(ctx, authorizedConsumerControllerName, contract.ReasonAcceptFailed, err, true)
	}
	if err := r.setStatus(ctx, &ac, kReady, contract.ReasonGranted, "the grant is signed and served by the enrolment endpoint", grant); err != nil {
		return reconcile.Result{}, err
	}
	// Back when the certificate is re-signed, for the grant to follow.
	return renewalResult(issued, r.clock.Now()), nil
}

// watchPolicies makes a change of an AuthorizedConsumer's spec.policy
// requeue the Tenant of its consumer, whose Accept applies what the
// policy says of the bindings: the slice ClusterRoleBinding applied, or,
// where the policy withholds the cluster-wide slice role, deleted
// (accept.ClusterBinding). The slice bounds need no requeue: each
// signing reads them. A new or deleted AuthorizedConsumer requeues
// nothing here: its reconciler records or forgets the Tenant, which
// requeues it.
func watchPolicies(b *builder.Builder) *builder.Builder {
	return b.Watches(&peeringv1alpha1.AuthorizedConsumer{}, handler.EnqueueRequestsFromMapFunc(tenantOfConsumer),
		builder.WithPredicates(policyChanged()))
}

// policyChanged admits an update of an AuthorizedConsumer that changes its
// spec.policy, and nothing else.
func policyChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok := e.ObjectOld.(*peeringv1alpha1.AuthorizedConsumer)
			after, ok2 := e.ObjectNew.(*peeringv1alpha1.AuthorizedConsumer)
			return ok && ok2 && !equality.Semantic.DeepEqual(before.Spec.Policy, after.Spec.Policy)
		},
	}
}

// tenantOfConsumer maps an AuthorizedConsumer to the Tenant of the
// consumer it names, in that consumer's tenant namespace.
func tenantOfConsumer(_ context.Context, o client.Object) []reconcile.Request {
	id := o.GetName()
	if clusterid.Validate(id) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: clusterid.TenantNamespace(id), Name: id}}}
}

// stalledRecheck is when a Stalled AuthorizedConsumer is looked at again:
// what stalled it may lie outside the object (a certificate of another key
// that expires, a privilege an administrator takes back, a revocation
// record that ends).
const stalledRecheck = 5 * time.Minute

// refused records that Enrol refused ac's consumer with err: an Event,
// and the object Stalled for a refusal no retry of the same facts ends
// (looked at again after stalledRecheck), Reconciling otherwise.
func (r *authorizedConsumerReconciler) refused(ctx context.Context, ac *peeringv1alpha1.AuthorizedConsumer, err error) (reconcile.Result, error) {
	reason, terminal := reasonOf(err, contract.ReasonAcceptFailed)
	r.events.Eventf(ac, nil, corev1.EventTypeWarning, reason, "Enrol", "%v", err)
	state := kReconciling
	if terminal {
		state = kStalled
	}
	if serr := r.setStatus(ctx, ac, state, reason, err.Error(), nil); serr != nil {
		return reconcile.Result{}, serr
	}
	if terminal {
		return reconcile.Result{RequeueAfter: stalledRecheck}, metrics.failed(ctx, authorizedConsumerControllerName, reason, err, false)
	}
	return reconcile.Result{}, metrics.failed(ctx, authorizedConsumerControllerName, reason, err, retried(err, reason, contract.ReasonAcceptFailed, terminal))
}

// grant signs issued, the Identity of ac's committed request, with the
// enrolment key.
func (r *authorizedConsumerReconciler) grant(ctx context.Context, ac *peeringv1alpha1.AuthorizedConsumer, issued *authv1beta1.Identity) (*peeringv1alpha1.Grant, error) {
	c, err := enrol.FromAuthorizedConsumer(ac)
	if err != nil {
		return nil, err
	}
	key, err := r.enrolmentKey(ctx)
	if err != nil {
		return nil, err
	}
	return enrol.NewGrant(rand.Reader, key, c.Request(r.provider.ClusterID()), issued)
}

// enrolmentKey returns the enrolment key the keeper keeps.
func (r *authorizedConsumerReconciler) enrolmentKey(ctx context.Context) (*keys.PrivateKey, error) {
	return r.keys.current(ctx)
}

// setStatus writes ac's status: state, with reason and message, and the
// grant (nil drops it, for a grant is handed out only while Ready). A
// status already so is not written.
func (r *authorizedConsumerReconciler) setStatus(ctx context.Context, ac *peeringv1alpha1.AuthorizedConsumer, state kstate, reason, message string,
	grant *peeringv1alpha1.Grant) error {
	next := ac.DeepCopy()
	setState(&next.Status.Conditions, &next.Status.ObservedGeneration, ac.Generation, state, reason, message)
	next.Status.Grant = grant
	if equality.Semantic.DeepEqual(ac.Status, next.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, next, client.MergeFrom(ac)); err != nil {
		return fmt.Errorf("writing the status of AuthorizedConsumer %s: %w", ac.Name, err)
	}
	return nil
}

// revoke revokes the consumer of ac (provider.Revoke), unless a
// revocation record is in force already, and says so in its status: not
// Ready, nothing under way, nothing stalled. Setting spec.revoked back to
// false does not readmit the consumer: kubepact readmit tenant does, as
// for any revocation.
func (r *authorizedConsumerReconciler) revoke(ctx context.Context, ac *peeringv1alpha1.AuthorizedConsumer) error {
	switch _, err := r.provider.Revocation(ctx, ac.Name); {
	case errors.Is(err, lifecycle.ErrNotFound):
		if err := r.provider.Revoke(ctx, ac.Name); err != nil {
			r.events.Eventf(ac, nil, corev1.EventTypeWarning, contract.ReasonRemoveFailed, "Revoke", "%v", err)
			return metrics.failed(ctx, authorizedConsumerControllerName, contract.ReasonRemoveFailed, err, true)
		}
		r.events.Eventf(ac, nil, corev1.EventTypeNormal, contract.ReasonConsumerRevoked, "Revoke",
			"the consumer is revoked: its grants are gone, its certificates refused until they expire")
	case err != nil:
		return err
	}
	return r.setStatus(ctx, ac, kRevoked, contract.ReasonConsumerRevoked, "spec.revoked: the consumer is revoked", nil)
}

// forget forgets the consumer of ac, being deleted, then lets it go.
func (r *authorizedConsumerReconciler) forget(ctx context.Context, ac *peeringv1alpha1.AuthorizedConsumer) error {
	if !controllerutil.ContainsFinalizer(ac, peeringv1alpha1.Finalizer) {
		return nil
	}
	if err := r.provider.Forget(ctx, ac.Name); err != nil && !apierrors.IsNotFound(err) {
		r.events.Eventf(ac, nil, corev1.EventTypeWarning, contract.ReasonForgetFailed, "Forget", "%v", err)
		return metrics.failed(ctx, authorizedConsumerControllerName, contract.ReasonForgetFailed, err, true)
	}
	return patchFinalizer(ctx, r.client, ac, false)
}

// patchFinalizer adds or removes kubepact's peering finalizer on o, with
// a patch that fails when o changed since it was read: the finalizers of
// others, added meanwhile, are never dropped.
func patchFinalizer(ctx context.Context, c client.Client, o client.Object, add bool) error {
	base := o.DeepCopyObject().(client.Object)
	if add {
		controllerutil.AddFinalizer(o, peeringv1alpha1.Finalizer)
	} else {
		controllerutil.RemoveFinalizer(o, peeringv1alpha1.Finalizer)
	}
	if err := c.Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the finalizers of %s: %w", o.GetName(), err)
	}
	return nil
}

package controllers

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
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

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
)

const trustedProviderControllerName = "kubepact-trusted-provider"

// How often a TrustedProvider comes back: while the provider has no grant
// for it, and once peered, to see that the identity is still held.
const (
	notAuthorizedPoll = 30 * time.Second
	grantPoll         = 10 * time.Minute
)

// trustedProviderReconciler peers with the providers TrustedProviders
// name: it publishes this cluster's enrolment request in the object's
// status, for the provider's administrators to commit, fetches the grant
// from the provider's enrolment endpoint, trusts it once it verifies with
// the committed enrolment key and CA pin, and applies its Identity as any
// other (consumer.Apply). Deleting the object forgets the provider's
// identity (consumer.Consumer.Forget).
type trustedProviderReconciler struct {
	client   client.Client
	consumer *consumer.Consumer
	events   events.EventRecorder
	// fetch fetches a grant from an endpoint for the enrolment keys.
	fetch func(ctx context.Context, endpoint string, enrolmentKeys []crypto.PublicKey, r *enrol.Request) (*peeringv1alpha1.Grant, error)
}

func setupTrustedProviders(mgr manager.Manager, r *trustedProviderReconciler, keysChanged <-chan event.GenericEvent) error {
	err := ctrl.NewControllerManagedBy(mgr).Named(trustedProviderControllerName).
		For(&peeringv1alpha1.TrustedProvider{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleting()))).
		// A step of the cluster key's rotation: each request follows.
		WatchesRawSource(source.Channel(keysChanged, &handler.EnqueueRequestForObject{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("controllers: %s: %w", trustedProviderControllerName, err)
	}
	return nil
}

func (r *trustedProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var tp peeringv1alpha1.TrustedProvider
	if err := r.client.Get(ctx, req.NamespacedName, &tp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if tp.DeletionTimestamp != nil {
		return reconcile.Result{}, r.forget(ctx, &tp)
	}
	if !controllerutil.ContainsFinalizer(&tp, peeringv1alpha1.Finalizer) {
		// Added before anything is granted, so that a deletion always
		// comes through here; the reconcile goes on, for the update
		// changes no generation and comes back to no one.
		if err := patchFinalizer(ctx, r.client, &tp, true); err != nil {
			return reconcile.Result{}, err
		}
	}
	next := tp.DeepCopy()
	res, err := r.peer(ctx, next)
	if !equality.Semantic.DeepEqual(tp.Status, next.Status) {
		if perr := r.client.Status().Patch(ctx, next, client.MergeFrom(&tp)); perr != nil {
			return reconcile.Result{}, errors.Join(err, fmt.Errorf("writing the status of TrustedProvider %s: %w", tp.Name, perr))
		}
	}
	return res, err
}

// peer takes tp, whose status it fills, one step towards the peering.
func (r *trustedProviderReconciler) peer(ctx context.Context, tp *peeringv1alpha1.TrustedProvider) (reconcile.Result, error) {
	set := func(state kstate, reason, message string) {
		setState(&tp.Status.Conditions, &tp.Status.ObservedGeneration, tp.Generation, state, reason, message)
	}
	enrolmentKeys, err := enrol.ParseKeys(tp.Spec.EnrolmentKeys)
	if err != nil {
		set(kStalled, contract.ReasonInvalidSpec, fmt.Sprintf("spec.enrolmentKeys: %v", err))
		return reconcile.Result{}, nil
	}
	if _, err := enrolhttp.CheckURL(tp.Spec.Endpoint); err != nil {
		set(kStalled, contract.ReasonEndpointForbidden, fmt.Sprintf("spec.endpoint: %v", err))
		return reconcile.Result{}, nil
	}
	req, err := r.consumer.EnrolmentRequest(ctx, tp.Name, tp.Status.Request)
	if err != nil {
		return r.failed(ctx, tp, set, err)
	}
	if err := r.publishKeys(ctx, tp, req); err != nil {
		return r.failed(ctx, tp, set, err)
	}

	// Once a grant is applied, the identity is renewed through itself
	// (the renewal reconciler): a grant fetched again would only hand back
	// the first certificate. An Identity held from the pinned CA is that,
	// unless the request asks for another key (a cluster key rotation):
	// then its grant replaces the identity, which works until it does.
	held, err := r.consumer.HeldIdentity(ctx, tp.Name)
	if err != nil {
		return r.failed(ctx, tp, set, err)
	}
	working := held != nil && held.Status.KubeconfigSecretRef != nil && enrol.CheckCAPin(held.Spec.AuthParams.CA, tp.Spec.CASHA256) == nil
	if working && consumer.Current(held, req) {
		set(kReady, contract.ReasonPeered, "the identity is held and renewed through itself")
		return reconcile.Result{RequeueAfter: grantPoll}, nil
	}

	grant, err := r.fetch(ctx, tp.Spec.Endpoint, enrolmentKeys, req)
	switch {
	case errors.Is(err, enrolhttp.ErrNotAuthorized) && working && req.HandOver != nil:
		set(kReconciling, contract.ReasonAwaitingHandOver,
			"the identity is held and works; the provider has not granted the request of the new cluster key yet")
		return reconcile.Result{RequeueAfter: notAuthorizedPoll}, nil
	case errors.Is(err, enrolhttp.ErrNotAuthorized):
		set(kReconciling, contract.ReasonNotAuthorized, "not authorized")
		return reconcile.Result{RequeueAfter: notAuthorizedPoll}, nil
	case errors.Is(err, enrolhttp.ErrForbiddenURL):
		set(kStalled, contract.ReasonEndpointForbidden, err.Error())
		return reconcile.Result{}, nil
	case errors.Is(err, enrol.ErrEndpointCertificate):
		r.events.Eventf(tp, nil, corev1.EventTypeWarning, contract.ReasonEndpointUntrusted, "Fetch", "%v", err)
		set(kStalled, contract.ReasonEndpointUntrusted, err.Error())
		return reconcile.Result{RequeueAfter: grantPoll}, nil
	case err != nil:
		set(kReconciling, contract.ReasonEndpointUnreachable, err.Error())
		return reconcile.Result{}, metrics.failed(ctx, trustedProviderControllerName, contract.ReasonEndpointUnreachable, err, true)
	}
	id, err := enrol.VerifyGrant(grant, enrol.Trust{ProviderID: tp.Name, ConsumerID: r.consumer.ClusterID(), EnrolmentKeys: enrolmentKeys,
		CASHA256: tp.Spec.CASHA256, Request: req})
	if err != nil {
		r.events.Eventf(tp, nil, corev1.EventTypeWarning, contract.ReasonGrantRejected, "Verify", "%v", err)
		set(kStalled, contract.ReasonGrantRejected, err.Error())
		return reconcile.Result{RequeueAfter: grantPoll}, nil
	}
	if _, err := r.consumer.ApplyGrant(ctx, tp.Name, id); err != nil {
		return r.failed(ctx, tp, set, err)
	}
	set(kReady, contract.ReasonPeered, "the grant verified; the kubeconfig is written")
	return reconcile.Result{RequeueAfter: grantPoll}, nil
}

// publishKeys fills tp's status with this cluster's ID, its cluster key
// (and the next one, while it rotates) and req: what the provider's
// AuthorizedConsumer commits.
func (r *trustedProviderReconciler) publishKeys(ctx context.Context, tp *peeringv1alpha1.TrustedProvider, req *enrol.Request) error {
	pub, err := r.consumer.PublicKey(ctx)
	if err != nil {
		return err
	}
	next, err := r.consumer.NextClusterKey(ctx)
	if err != nil {
		return err
	}
	pems := make([]string, 0, 2)
	for _, k := range []crypto.PublicKey{pub, next} {
		if k == nil {
			pems = append(pems, "")
			continue
		}
		b, err := keys.MarshalPublicKey(k)
		if err != nil {
			return err
		}
		pems = append(pems, string(b))
	}
	api := req.API()
	tp.Status.ConsumerID, tp.Status.PublicKey, tp.Status.NextPublicKey, tp.Status.Request = r.consumer.ClusterID(), pems[0], pems[1], &api
	return nil
}

// failed records a step of the consumer's that failed with err: Stalled
// for a refusal no retry of the same answer ends (looked at again after
// grantPoll), else Reconciling, retried.
func (r *trustedProviderReconciler) failed(ctx context.Context, tp *peeringv1alpha1.TrustedProvider, set func(kstate, string, string), err error) (reconcile.Result, error) {
	reason, terminal := reasonOf(err, contract.ReasonApplyFailed)
	r.events.Eventf(tp, nil, corev1.EventTypeWarning, reason, "Peer", "%v", err)
	if terminal {
		// Looked at again: the provider may fix what it hands out.
		set(kStalled, reason, err.Error())
		return reconcile.Result{RequeueAfter: grantPoll}, nil
	}
	set(kReconciling, reason, err.Error())
	return reconcile.Result{}, metrics.failed(ctx, trustedProviderControllerName, reason, err, true)
}

// forget forgets the provider of tp, being deleted, then lets it go.
func (r *trustedProviderReconciler) forget(ctx context.Context, tp *peeringv1alpha1.TrustedProvider) error {
	if !controllerutil.ContainsFinalizer(tp, peeringv1alpha1.Finalizer) {
		return nil
	}
	if err := r.consumer.Forget(ctx, tp.Name); err != nil && !apierrors.IsNotFound(err) {
		r.events.Eventf(tp, nil, corev1.EventTypeWarning, contract.ReasonForgetFailed, "Forget", "%v", err)
		return metrics.failed(ctx, trustedProviderControllerName, contract.ReasonForgetFailed, err, true)
	}
	return patchFinalizer(ctx, r.client, tp, false)
}

// fetchGrant fetches a grant with an enrolhttp.Client.
func fetchGrant(ctx context.Context, endpoint string, enrolmentKeys []crypto.PublicKey, r *enrol.Request) (*peeringv1alpha1.Grant, error) {
	c := &enrolhttp.Client{EnrolmentKeys: enrolmentKeys}
	return c.Fetch(ctx, endpoint, r)
}

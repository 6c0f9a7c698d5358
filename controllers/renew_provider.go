package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
)

// renewControllerName names the provider's Renew reconciler, also the
// reporting controller of its Events.
const renewControllerName = "kubepact-renew"

// minRenewalWait is the shortest a reconciler waits for a renewal deadline:
// a certificate already due when it is issued (a signer that caps lifetimes
// below what the re-signing window needs) is looked at again after it, not
// in a hot loop.
const minRenewalWait = 10 * time.Second

// renewalResult brings the Tenant whose Identity id the provider just
// accepted back when its certificate is due for re-signing, between half
// and two thirds of its lifetime (renewal.ProviderDeadline); Accept then
// re-signs it.
func renewalResult(id *authv1beta1.Identity, now time.Time) reconcile.Result {
	if id == nil {
		return reconcile.Result{}
	}
	return requeueAtRenewal(id.Spec.AuthParams.SignedCRT, now)
}

// requeueAtRenewal brings an object back when the PEM certificate chain it
// was issued is due for re-signing (renewal.ProviderDeadline), never sooner
// than minRenewalWait: the Tenant reconciler's, and any reconciler that
// issues certificates through csr.Issue (a ResourceSlice's), which re-signs
// from that point on. It comes back with low priority: in the priority
// queue controller-runtime gives every controller, a re-sign that falls due
// waits behind the Tenants and slices that wait for their first
// certificate, so re-signs never hold up a handshake for longer than a
// worker takes to finish the one it started.
func requeueAtRenewal(chain []byte, now time.Time) reconcile.Result {
	cert, err := csr.ParseCertificate(chain)
	if err != nil {
		return reconcile.Result{}
	}
	return reconcile.Result{RequeueAfter: renewal.Wait(renewal.ProviderDeadline(cert), now, minRenewalWait), Priority: ptr.To(handler.LowPriority)}
}

// setupRenewProvider adds the provider's Renew reconciler to mgr.
func setupRenewProvider(mgr manager.Manager, p *provider.Provider, renews *kube.RenewStore, workers int, settled predicate.Predicate, clk clock.PassiveClock) error {
	rr := &renewProviderReconciler{client: mgr.GetClient(), provider: p, renews: renews, clock: realClock(clk),
		events: mgr.GetEventRecorder(renewControllerName)}
	renewOf := func(namespace string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: renewal.Name(p.ClusterID())}}}
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(renewControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&authv1beta1.Renew{}, builder.WithPredicates(labelTrue(renewal.ReplicatedLabel), predicate.GenerationChangedPredicate{})).
		// A re-signed Tenant status goes to the consumer's Renew.
		Watches(&authv1beta1.Tenant{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return renewOf(o.GetNamespace())
		}))
	if settled != nil {
		b = b.Watches(&certificatesv1.CertificateSigningRequest{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			id := o.GetLabels()[clusterid.Label]
			if clusterid.Validate(id) != nil {
				return nil
			}
			return renewOf(clusterid.TenantNamespace(id))
		}), builder.WithPredicates(settled))
	}
	if err := b.Complete(rr); err != nil {
		return fmt.Errorf("controllers: %s: %w", renewControllerName, err)
	}
	return nil
}

// renewProviderReconciler answers the Renews that consumers' replicators
// write in their tenant namespaces (SPEC §7, Renewal): the Tenant's
// re-signed credentials for a Liqo consumer, a certificate for the fresh
// key of a Strict kubepact consumer.
type renewProviderReconciler struct {
	client   client.Client
	provider *provider.Provider
	renews   *kube.RenewStore
	events   events.EventRecorder
	clock    clock.PassiveClock
}

func (r *renewProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var rn authv1beta1.Renew
	if err := r.client.Get(ctx, req.NamespacedName, &rn); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if rn.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	params, err := r.provider.Renew(ctx, &rn)
	var early *renewal.TooEarlyError
	switch {
	case errors.As(err, &early):
		r.events.Eventf(&rn, nil, corev1.EventTypeWarning, contract.ReasonRenewTooEarly, "Renew", "%v", err)
		metrics.renewal(roleProvider, resultRefused)
		return reconcile.Result{RequeueAfter: renewal.Wait(early.Until, r.clock.Now(), minRenewalWait)},
			metrics.failed(ctx, renewControllerName, contract.ReasonRenewTooEarly, err, false)
	case errors.Is(err, csr.ErrPending):
		r.events.Eventf(&rn, nil, corev1.EventTypeNormal, contract.ReasonCertificatePending, "Renew", "%v", err)
		return reconcile.Result{}, nil
	case errors.Is(err, renewal.ErrNotAccepted):
		// The Tenant's status, when it comes, requeues the Renew.
		r.events.Eventf(&rn, nil, corev1.EventTypeNormal, contract.ReasonRenewWaiting, "Renew", "%v", err)
		return reconcile.Result{}, nil
	case err != nil:
		reason, terminal := renewReasonOf(err)
		r.events.Eventf(&rn, nil, corev1.EventTypeWarning, reason, "Renew", "%v", err)
		if terminal {
			metrics.renewal(roleProvider, resultRefused)
		} else {
			metrics.renewal(roleProvider, resultFailed)
		}
		return reconcile.Result{}, metrics.failed(ctx, renewControllerName, reason, err, retried(err, reason, contract.ReasonRenewFailed, terminal))
	}
	if rn.Status.AuthParams != nil && equality.Semantic.DeepEqual(*rn.Status.AuthParams, *params) {
		return reconcile.Result{}, nil
	}
	status := &authv1beta1.Renew{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.RenewKind},
		ObjectMeta: metav1.ObjectMeta{Name: rn.Name, Namespace: rn.Namespace},
		Status:     authv1beta1.RenewStatus{AuthParams: params},
	}
	if _, err := r.renews.ApplyStatus(ctx, status); err != nil {
		if errors.Is(err, renewal.ErrNotFound) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	r.events.Eventf(&rn, nil, corev1.EventTypeNormal, contract.ReasonRenewAnswered, "Renew", "Renew status is filled")
	metrics.renewal(roleProvider, resultRenewed)
	return reconcile.Result{}, nil
}

// renewReasonOf is reasonOf for the errors of Provider.Renew and
// Consumer.Renewed.
func renewReasonOf(err error) (string, bool) {
	switch {
	case errors.Is(err, renewal.ErrForeign), errors.Is(err, renewal.ErrUnsupported), errors.Is(err, renewal.ErrMalformed):
		return contract.ReasonInvalidRenew, true
	case errors.Is(err, renewal.ErrDrained), errors.Is(err, lifecycle.ErrRevoked):
		return contract.ReasonRenewRefused, true
	case errors.Is(err, consumer.ErrEndpointChanged):
		return contract.ReasonInvalidIdentity, true
	}
	return reasonOf(err, contract.ReasonRenewFailed)
}

// realClock returns c, or the real clock when c is nil.
func realClock(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

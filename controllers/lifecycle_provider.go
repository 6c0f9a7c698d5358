package controllers

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
)

// enforce brings what the provider holds for t in line with its
// spec.tenantCondition, whoever set it (kubepact cordon, an administrator's
// kubectl edit): Provider.Enforce. It reports done for a drained Tenant,
// which is never accepted again; otherwise the reconcile goes on to Accept.
func (r *tenantReconciler) enforce(ctx context.Context, t *authv1beta1.Tenant) (reconcile.Result, bool, error) {
	c := lifecycle.Condition(t.Spec.TenantCondition)
	if err := r.provider.Enforce(ctx, t); err != nil {
		r.events.Eventf(t, nil, corev1.EventTypeWarning, contract.ReasonEnforceFailed, "Enforce", "enforcing condition %s: %v", c, err)
		return reconcile.Result{}, true, metrics.failed(ctx, tenantControllerName, contract.ReasonEnforceFailed, err, true)
	}
	r.transition(t.Name, string(c))
	if c == authv1beta1.TenantConditionDrained {
		metrics.forget(roleProvider, t.Name, "") // its certificates are revoked
	}
	switch c {
	case authv1beta1.TenantConditionDrained:
		r.events.Eventf(t, nil, corev1.EventTypeNormal, contract.ReasonTenantDrained, "Enforce",
			"Tenant drained: its bindings, ResourceSlices and NamespaceMaps are deleted and its certificates recorded as revoked")
		return reconcile.Result{}, true, nil
	case authv1beta1.TenantConditionCordoned:
		r.events.Eventf(t, nil, corev1.EventTypeNormal, contract.ReasonTenantCordoned, "Enforce", "Tenant cordoned: its ResourceSlices are marked %s", lifecycle.CordonAnnotation)
	}
	return reconcile.Result{}, false, nil
}

// transition counts a change of the condition enforced for consumerID
// since this process last enforced one (kubepact_tenant_transitions_total).
// The first condition this process sees of a Tenant is not counted, so a
// restart counts nothing again.
func (r *tenantReconciler) transition(consumerID, condition string) {
	r.mu.Lock()
	if r.conditions == nil {
		r.conditions = map[string]string{}
	}
	prev, seen := r.conditions[consumerID]
	r.conditions[consumerID] = condition
	r.mu.Unlock()
	if seen && prev != condition {
		metrics.transitions.WithLabelValues(condition).Inc()
	}
}

// retryAfter returns when a Tenant refused because its consumer's
// certificates were revoked may be accepted: once the record ends. Zero
// for any other error.
func retryAfter(err error, now time.Time) time.Duration {
	var revoked *lifecycle.RevokedError
	if !errors.As(err, &revoked) {
		return 0
	}
	return max(revoked.Until.Sub(now), 0) + time.Second
}

// watchSlices makes a ResourceSlice created in a tenant namespace requeue
// the Tenant of that namespace when the Tenant, as reader (the manager's
// cache) holds it, is Cordoned or Drained, so a slice created then is
// marked, or deleted, too. A slice of an Active Tenant, the Tenant's
// condition unknown or no Tenant requeues nothing: a consumer that creates
// slice after slice does not have its Tenant accepted again for each.
func watchSlices(b *builder.Builder, reader client.Reader) *builder.Builder {
	return b.Watches(&authv1beta1.ResourceSlice{}, handler.EnqueueRequestsFromMapFunc(tenantOfSlice(reader)),
		builder.WithPredicates(predicate.Funcs{
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}))
}

// watchRevocations requeues a consumer's Tenant when its revocation record
// (kube.RevocationName in its tenant namespace) is deleted, so that a
// Tenant refused while it was in force is accepted as soon as the
// administrator readmits the consumer (kubepact readmit tenant), without
// being touched. A record created or changed needs no requeue: Accept
// reads it on every attempt, and a refused Tenant is retried when it ends.
func watchRevocations(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(tenantOfRevocation),
		builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}))
}

// tenantOfRevocation maps a revocation record to the Tenant of its
// consumer: the record is kube.RevocationName in the tenant namespace of
// the consumer, whatever its labels say (kube.Revocations.Get reads it by
// name). It only says what to requeue.
func tenantOfRevocation(_ context.Context, o client.Object) []reconcile.Request {
	if o.GetName() != kube.RevocationName {
		return nil
	}
	id, ok := strings.CutPrefix(o.GetNamespace(), clusterid.TenantNamespacePrefix)
	if !ok || clusterid.Validate(id) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: id}}}
}

// tenantOfSlice maps a ResourceSlice to the Tenant of its tenant
// namespace, when reader holds that Tenant Cordoned or Drained.
func tenantOfSlice(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		id, ok := strings.CutPrefix(o.GetNamespace(), clusterid.TenantNamespacePrefix)
		if !ok || clusterid.Validate(id) != nil {
			return nil
		}
		key := client.ObjectKey{Namespace: o.GetNamespace(), Name: id}
		var t authv1beta1.Tenant
		if err := reader.Get(ctx, key, &t); err != nil {
			return nil
		}
		switch t.Spec.TenantCondition {
		case authv1beta1.TenantConditionCordoned, authv1beta1.TenantConditionDrained:
			return []reconcile.Request{{NamespacedName: key}}
		}
		return nil
	}
}

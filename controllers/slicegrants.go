package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/rbac"
)

// tenantNamespaceSliceGrants deletes, once the manager leads, the
// RoleBindings that kubepact v0.1.0 and earlier made by default for the
// slice identities of a consumer in its tenant namespace
// (rbac.TenantNamespaceSliceBinding): they gave the peer every Secret and
// ConfigMap there, this cluster's own included. A provider no longer makes
// them, and this closes what an earlier version left, at the upgrade, not
// only for new peerings. It runs once; a failure is logged and retried
// with a backoff until it succeeds or the manager stops.
type tenantNamespaceSliceGrants struct {
	client kubernetes.Interface
	log    logr.Logger
}

// NeedLeaderElection is true: one replica deletes them.
func (g *tenantNamespaceSliceGrants) NeedLeaderElection() bool { return true }

// Start sweeps the tenant namespaces.
func (g *tenantNamespaceSliceGrants) Start(ctx context.Context) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := g.sweep(ctx); err != nil {
			g.log.Error(err, "deleting the slice RoleBindings of earlier versions in tenant namespaces; retrying")
			return false, nil
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil // the manager stops
	}
	return err
}

// sweep lists the RoleBindings of the slice ClusterRole's binding name in
// every namespace and deletes those rbac.TenantNamespaceSliceBinding
// recognises, each only as it was read (its UID).
func (g *tenantNamespaceSliceGrants) sweep(ctx context.Context) error {
	name := rbac.BindingName(rbac.VirtualKubeletClusterRoleName)
	list, err := g.client.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return fmt.Errorf("listing RoleBindings %s: %w", name, err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		consumerID, ok := rbac.TenantNamespaceSliceBinding(b)
		if !ok {
			continue
		}
		err := g.client.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &b.UID},
		})
		switch {
		case err == nil:
			g.log.Info("deleted the slice RoleBinding an earlier version made in a tenant namespace",
				"namespace", b.Namespace, "name", b.Name, "consumer", consumerID)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone, or replaced since the list: the next start looks again.
		default:
			return fmt.Errorf("deleting RoleBinding %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	return nil
}

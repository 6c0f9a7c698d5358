package tenant

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// ErrNotFound reports that a Store holds no such Tenant.
var ErrNotFound = errors.New("tenant not found")

// Namespaces creates and removes tenant namespaces.
//
// Ensure creates ns, or brings the labels of an existing namespace of the
// same name up to ns's; it succeeds when nothing needs to change. An
// existing tenant namespace (liqo-tenant-<ID>) is adopted only when it
// already carries the tenant namespace's labels for <ID>
// (NamespaceLabel "true" and clusterid.Label <ID>): one someone else
// created without them, who may hold rights in it, is refused with an
// error wrapping a *NamespaceError (ErrNotTenantNamespace), and nothing is
// changed. Delete removes the namespace and succeeds when there is none.
// Implementations are safe for concurrent use.
type Namespaces interface {
	Ensure(ctx context.Context, ns *corev1.Namespace) error
	Delete(ctx context.Context, name string) error
}

// Store keeps Tenants on the provider.
//
// Get returns the Tenant, or an error wrapping ErrNotFound. Apply creates t
// or sets t's spec, labels, annotations, finalizers and owner references on
// the stored one, and its status too unless t's status is the zero value
// (then the stored status is kept); it returns what is stored. ApplyStatus
// sets t's status alone on the stored Tenant, which it never creates (an
// error wrapping ErrNotFound when there is none), and returns what is
// stored. Apply owns
// only what it applies, as a server-side apply does: metadata another
// component (Liqo, a user) set on the Tenant stays, and a label,
// annotation or finalizer Apply set before and t no longer has goes. Delete removes
// Finalizer, the caller's, from the Tenant and deletes it; a finalizer
// another controller put on it stays and keeps the Tenant, terminating,
// until that controller removes it. Delete succeeds when there is no
// Tenant. Implementations are safe for concurrent use.
type Store interface {
	Get(ctx context.Context, namespace, name string) (*authv1beta1.Tenant, error)
	Apply(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error)
	ApplyStatus(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error)
	Delete(ctx context.Context, namespace, name string) error
}

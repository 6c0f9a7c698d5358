package resourceslice

import (
	"context"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// ReplicationFinalizer is the replicator's finalizer on the consumer's
// replicated objects: it holds a local object until its copy on the
// provider is deleted.
const ReplicationFinalizer = "replication.kubepact.io/finalizer"

// Store reads and deletes ResourceSlices.
//
// List returns the slices in namespace, sorted by name, those being deleted
// included. Delete removes kubepact's finalizers (Finalizer and
// ReplicationFinalizer) from the slice and deletes it; finalizers others
// put on it stay, and keep it, terminating, until they remove them. It
// succeeds when there is no such slice. Implementations are safe for
// concurrent use.
type Store interface {
	List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error)
	Delete(ctx context.Context, namespace, name string) error
}

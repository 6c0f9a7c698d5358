package fake

import (
	"context"
	"sync"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

var _ resourceslice.Store = (*ResourceSlices)(nil)

// ResourceSlices is an in-memory resourceslice.Store and lifecycle.Slices.
// Put, which is not part of the ports, stores a slice whole, as a user or
// the replicator does. NamespaceMaps counts the NamespaceMaps of each
// namespace (PutNamespaceMaps plants them), which DeleteAll deletes when
// ServesNamespaceMaps is set.
type ResourceSlices struct {
	objects[*authv1beta1.ResourceSlice]

	mapsMu              sync.Mutex
	ServesNamespaceMaps bool
	namespaceMaps       map[string]int
}

// Put stores s whole.
func (s *ResourceSlices) Put(ctx context.Context, slice *authv1beta1.ResourceSlice) (*authv1beta1.ResourceSlice, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.writeAsOther(slice, nil), nil
}

// List returns the slices in namespace, by name.
func (s *ResourceSlices) List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []authv1beta1.ResourceSlice
	for _, sl := range s.list(namespace) {
		out = append(out, *sl)
	}
	return out, nil
}

// Delete removes kubepact's finalizers from the slice namespace/name and
// removes it, unless other finalizers stay.
func (s *ResourceSlices) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.terminate(namespace, name, func(f string) bool {
		return f == resourceslice.Finalizer || f == resourceslice.ReplicationFinalizer
	})
	return nil
}

package kube

import (
	"context"
	"errors"

	"k8s.io/client-go/dynamic"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

// SliceStore is a resourceslice.Store over the API server. Its client needs
// get, list, patch and delete on resourceslices.authentication.liqo.io.
type SliceStore struct {
	crd, replicated objectStore[authv1beta1.ResourceSlice, *authv1beta1.ResourceSlice]
}

var _ resourceslice.Store = (*SliceStore)(nil)

// errSliceNotFound is internal: resourceslice.Store has no Get.
var errSliceNotFound = errors.New("resource slice not found")

// NewSliceStore returns a SliceStore using client.
func NewSliceStore(client dynamic.Interface) *SliceStore {
	store := objectStore[authv1beta1.ResourceSlice, *authv1beta1.ResourceSlice]{
		client:    client,
		resource:  authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource),
		kind:      authv1beta1.ResourceSliceKind,
		notFound:  errSliceNotFound,
		status:    func(s *authv1beta1.ResourceSlice) any { return &s.Status },
		finalizer: resourceslice.Finalizer,
	}
	replicated := store
	replicated.finalizer = resourceslice.ReplicationFinalizer
	return &SliceStore{crd: store, replicated: replicated}
}

// List returns the slices in namespace, by name.
func (s *SliceStore) List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error) {
	l, err := s.crd.list(ctx, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]authv1beta1.ResourceSlice, len(l))
	for i, sl := range l {
		out[i] = *sl
	}
	return out, nil
}

// Delete removes both kubepact finalizers from the slice namespace/name
// and deletes it.
func (s *SliceStore) Delete(ctx context.Context, namespace, name string) error {
	if err := s.replicated.delete(ctx, namespace, name); err != nil {
		return err
	}
	return s.crd.delete(ctx, namespace, name)
}

package kube

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

// SliceStore is a resourceslice.Store over the API server. Its client needs
// get, list, patch and delete on resourceslices.authentication.liqo.io.
type SliceStore struct {
	crd, replicated sliceStore
}

type sliceStore = objectStore[authv1beta1.ResourceSlice, authv1beta1.ResourceSliceList, *authv1beta1.ResourceSlice, *authv1beta1.ResourceSliceList]

var _ resourceslice.Store = (*SliceStore)(nil)

// errSliceNotFound is internal: resourceslice.Store has no Get.
var errSliceNotFound = errors.New("resource slice not found")

// NewSliceStore returns a SliceStore using c, an uncached client whose
// scheme knows the authentication.liqo.io/v1beta1 types (see NewClient).
func NewSliceStore(c client.Client) *SliceStore {
	store := sliceStore{
		client:    c,
		kind:      authv1beta1.ResourceSliceKind,
		notFound:  errSliceNotFound,
		items:     func(l *authv1beta1.ResourceSliceList) []authv1beta1.ResourceSlice { return l.Items },
		status:    func(s *authv1beta1.ResourceSlice) any { return &s.Status },
		finalizer: resourceslice.Finalizer,
	}
	replicated := store
	replicated.finalizer = resourceslice.ReplicationFinalizer
	return &SliceStore{crd: store, replicated: replicated}
}

// List returns the slices in namespace, by name.
func (s *SliceStore) List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error) {
	return s.crd.list(ctx, namespace)
}

// Delete removes both kubepact finalizers from the slice namespace/name
// and deletes it.
func (s *SliceStore) Delete(ctx context.Context, namespace, name string) error {
	if err := s.replicated.delete(ctx, namespace, name); err != nil {
		return err
	}
	return s.crd.delete(ctx, namespace, name)
}

package kube

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/resourceslice"
)

// StorageClasses is a resourceslice.StorageClassLister over the API
// server. Its client needs list on storageclasses.storage.k8s.io.
type StorageClasses struct {
	client kubernetes.Interface
}

var _ resourceslice.StorageClassLister = (*StorageClasses)(nil)

// NewStorageClasses returns a StorageClasses using client.
func NewStorageClasses(client kubernetes.Interface) *StorageClasses {
	return &StorageClasses{client: client}
}

// List returns the cluster's StorageClasses. It reads them from the API
// server's watch cache (resourceVersion "0"): a class may be seconds
// old, which an offer to a slice tolerates, and the read costs the API
// server no etcd request.
func (s *StorageClasses) List(ctx context.Context) ([]storagev1.StorageClass, error) {
	l, err := s.client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	return l.Items, nil
}

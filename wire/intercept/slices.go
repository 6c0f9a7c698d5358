package intercept

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
)

type clusterBinderHook struct {
	next rbac.ClusterBinder
	f    *Faults
}

func (h clusterBinderHook) ApplyClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	return call(ctx, h.f, "ClusterRBAC.ApplyClusterRoleBinding", func() error { return h.next.ApplyClusterRoleBinding(ctx, b) })
}

func (h clusterBinderHook) DeleteClusterRoleBinding(ctx context.Context, name string) error {
	return call(ctx, h.f, "ClusterRBAC.DeleteClusterRoleBinding", func() error { return h.next.DeleteClusterRoleBinding(ctx, name) })
}

type slicesHook struct {
	next resourceslice.Store
	f    *Faults
}

func (h slicesHook) List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error) {
	return call1(ctx, h.f, "Slices.List", func() ([]authv1beta1.ResourceSlice, error) { return h.next.List(ctx, namespace) })
}

func (h slicesHook) Delete(ctx context.Context, namespace, name string) error {
	return call(ctx, h.f, "Slices.Delete", func() error { return h.next.Delete(ctx, namespace, name) })
}

type slicePolicyHook struct {
	next resourceslice.Policy
	f    *Faults
}

func (h slicePolicyHook) Limits(ctx context.Context, s *authv1beta1.ResourceSlice) (corev1.ResourceList, error) {
	return call1(ctx, h.f, "SlicePolicy.Limits", func() (corev1.ResourceList, error) { return h.next.Limits(ctx, s) })
}

type storageClassesHook struct {
	next resourceslice.StorageClassLister
	f    *Faults
}

func (h storageClassesHook) List(ctx context.Context) ([]storagev1.StorageClass, error) {
	return call1(ctx, h.f, "StorageClasses.List", func() ([]storagev1.StorageClass, error) { return h.next.List(ctx) })
}

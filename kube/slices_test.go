package kube_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/resourceslice/resourceslicetest"
)

func TestSliceStoreConformance(t *testing.T) {
	resourceslicetest.Run(t, resourceslicetest.Harness{
		New: func(*testing.T) (resourceslice.Store, func(context.Context, *authv1beta1.ResourceSlice) error) {
			return kube.NewSliceStore(providerEnv.typed), func(ctx context.Context, s *authv1beta1.ResourceSlice) error {
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
				if err != nil {
					return err
				}
				_, err = providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)).
					Namespace(s.Namespace).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
				return err
			}
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

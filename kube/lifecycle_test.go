package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle/lifecycletest"
)

func TestLifecyclePortsConformance(t *testing.T) {
	slices := providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource("resourceslices"))
	lifecycletest.Run(t, lifecycletest.Harness{New: func(t *testing.T) lifecycletest.Env {
		c := providerEnv.client
		return lifecycletest.Env{
			Ports:   kube.NewLifecyclePorts(c, providerEnv.typed),
			Tenants: kube.NewTenantStore(providerEnv.typed),
			PutSlice: func(t *testing.T, s *authv1beta1.ResourceSlice) {
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
				require.NoError(t, err)
				_, err = slices.Namespace(s.Namespace).Create(context.Background(), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			Slices: func(t *testing.T, namespace string) []authv1beta1.ResourceSlice {
				l, err := slices.Namespace(namespace).List(context.Background(), metav1.ListOptions{})
				require.NoError(t, err)
				out := make([]authv1beta1.ResourceSlice, len(l.Items))
				for i := range l.Items {
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out[i]))
				}
				return out
			},
			PutRoleBinding: func(t *testing.T, b *rbacv1.RoleBinding) {
				_, err := c.RbacV1().RoleBindings(b.Namespace).Create(context.Background(), b, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			PutClusterRoleBinding: func(t *testing.T, b *rbacv1.ClusterRoleBinding) {
				_, err := c.RbacV1().ClusterRoleBindings().Create(context.Background(), b, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			BindingExists: func(t *testing.T, namespace, name string) bool {
				var err error
				if namespace == "" {
					_, err = c.RbacV1().ClusterRoleBindings().Get(context.Background(), name, metav1.GetOptions{})
				} else {
					_, err = c.RbacV1().RoleBindings(namespace).Get(context.Background(), name, metav1.GetOptions{})
				}
				if apierrors.IsNotFound(err) {
					return false
				}
				require.NoError(t, err)
				return true
			},
			EnsureNamespace: ensureNamespace,
		}
	}})
}

// namespaceMapCRD is a minimal offloading.liqo.io NamespaceMap CRD, so the
// provider serves the API a drain cleans up where Liqo is installed.
func namespaceMapCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "namespacemaps.offloading.liqo.io"},
		"spec": map[string]any{
			"group": "offloading.liqo.io",
			"names": map[string]any{"kind": "NamespaceMap", "listKind": "NamespaceMapList", "plural": "namespacemaps", "singular": "namespacemap"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

// Where the API server serves NamespaceMaps, DeleteAll deletes them with
// the slices; where it does not (TestLifecyclePortsConformance), it
// succeeds without them.
func TestDeleteAllDeletesNamespaceMaps(t *testing.T) {
	ctx := context.Background()
	_, err := providerEnv.dynamic.Resource(crdsResource).Create(ctx, namespaceMapCRD(), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	ns := "liqo-tenant-lc-nsmaps"
	ensureNamespace(t, ns)
	maps := providerEnv.dynamic.Resource(kube.NamespaceMapResource).Namespace(ns)
	require.Eventually(t, func() bool {
		m := &unstructured.Unstructured{}
		m.SetAPIVersion("offloading.liqo.io/v1beta1")
		m.SetKind("NamespaceMap")
		m.SetName("map-a")
		_, err := maps.Create(ctx, m, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	}, time.Minute, 100*time.Millisecond, "the NamespaceMap API is served")

	require.NoError(t, kube.NewTenantSlices(providerEnv.typed).DeleteAll(ctx, ns))
	l, err := maps.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, l.Items)
}

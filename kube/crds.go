package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/config/crd"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates or updates the authentication.liqo.io CRDs from the
// project's generated manifests and waits until the API server serves them.
func InstallCRDs(ctx context.Context, client dynamic.Interface) error {
	api := client.Resource(crdResource)
	var names []string
	for _, manifest := range crd.Manifests() {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(manifest, &u.Object); err != nil {
			return fmt.Errorf("decoding CRD manifest: %w", err)
		}
		names = append(names, u.GetName())
		cur, err := api.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, u, metav1.CreateOptions{})
		case err == nil:
			u.SetResourceVersion(cur.GetResourceVersion())
			_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		}
		if err != nil {
			return wrap(err, "installing", "CustomResourceDefinition", "", u.GetName())
		}
	}
	for _, name := range names {
		if err := waitEstablished(ctx, api, name); err != nil {
			return wrap(err, "waiting for", "CustomResourceDefinition", "", name)
		}
	}
	return nil
}

// waitEstablished watches the CRD name until its Established condition is true.
func waitEstablished(ctx context.Context, api dynamic.NamespaceableResourceInterface, name string) error {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return api.Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	return err
}

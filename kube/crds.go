package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/config/crd"
	"github.com/kubepact/kubepact/internal/objwatch"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ErrCRDIncompatible reports that an installed CustomResourceDefinition does
// not serve a field kubepact writes. The error is a *CRDFieldMissingError.
var ErrCRDIncompatible = errors.New("installed CustomResourceDefinition lacks a field kubepact writes")

// CRDFieldMissingError names the installed CRD and the schema path, in the
// v1beta1 version's openAPIV3Schema, of a field kubepact writes but the CRD
// does not declare, so that the API server would prune it.
type CRDFieldMissingError struct {
	CRD   string // for example "tenants.authentication.liqo.io"
	Field string // for example "spec.publicKey"; empty when the version itself is missing
}

func (e *CRDFieldMissingError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("CustomResourceDefinition %s does not serve version v1beta1", e.CRD)
	}
	return fmt.Sprintf("CustomResourceDefinition %s does not declare field %s", e.CRD, e.Field)
}

// Is makes errors.Is(err, ErrCRDIncompatible) true.
func (e *CRDFieldMissingError) Is(target error) bool { return target == ErrCRDIncompatible }

// InstallCRDs creates the authentication.liqo.io CRDs that are missing, from
// the project's generated manifests (which carry Liqo v1.2's schemas), and
// kubepact's own peering.kubepact.io CRDs, and waits until the API server
// serves them. It never updates a CRD that exists, such as one installed
// by Liqo: it checks instead that a Liqo CRD serves v1beta1 with every
// field of kubepact's schema, and otherwise returns a
// *CRDFieldMissingError, which matches ErrCRDIncompatible.
//
// cfg needs create, get, list and watch on
// customresourcedefinitions.apiextensions.k8s.io; cfg itself is not changed.
// wire.Connect checks that a cluster serves the CRDs, with a
// *wire.CRDNotServedError.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	if cfg == nil {
		return fmt.Errorf("installing CRDs: %w: nil rest config", ErrNoServer)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	api := client.Resource(crdResource)
	var names []string
	liqo := len(crd.Manifests())
	for i, manifest := range append(crd.Manifests(), crd.PeeringManifests()...) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(manifest, &u.Object); err != nil {
			return fmt.Errorf("decoding CRD manifest: %w", err)
		}
		names = append(names, u.GetName())
		cur, err := api.Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, u, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				cur, err = api.Get(ctx, u.GetName(), metav1.GetOptions{})
			}
		}
		if err != nil {
			return wrap(err, "installing", "CustomResourceDefinition", "", u.GetName())
		}
		if cur != nil && i < liqo {
			if err := checkCRD(u, cur); err != nil {
				return err
			}
		}
	}
	for _, name := range names {
		if err := waitEstablished(ctx, api, name); err != nil {
			return wrap(err, "waiting for", "CustomResourceDefinition", "", name)
		}
	}
	return nil
}

// checkCRD returns a *CRDFieldMissingError when the v1beta1 schema of have
// lacks a field declared by the v1beta1 schema of want.
func checkCRD(want, have *unstructured.Unstructured) error {
	wantSchema := versionSchema(want)
	haveSchema := versionSchema(have)
	if haveSchema == nil {
		return &CRDFieldMissingError{CRD: have.GetName()}
	}
	if field := missingField(wantSchema, haveSchema, ""); field != "" {
		return &CRDFieldMissingError{CRD: have.GetName(), Field: field}
	}
	return nil
}

// versionSchema returns the openAPIV3Schema of the served v1beta1 version of
// a CRD, or nil when there is none.
func versionSchema(u *unstructured.Unstructured) map[string]any {
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != "v1beta1" || m["served"] != true {
			continue
		}
		s, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema")
		if s == nil {
			// No schema to prune with: every field is kept.
			return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		}
		return s
	}
	return nil
}

// missingField returns the path of the first field, in sorted order, that
// want declares and have neither declares nor preserves.
func missingField(want, have map[string]any, path string) string {
	if have["x-kubernetes-preserve-unknown-fields"] == true {
		return ""
	}
	if items, ok := want["items"].(map[string]any); ok {
		haveItems, _ := have["items"].(map[string]any)
		if haveItems == nil {
			return path + "[]"
		}
		if f := missingField(items, haveItems, path+"[]"); f != "" {
			return f
		}
	}
	if add, ok := want["additionalProperties"].(map[string]any); ok {
		haveAdd, _ := have["additionalProperties"].(map[string]any)
		if haveAdd == nil {
			return path + "{}"
		}
		if f := missingField(add, haveAdd, path+"{}"); f != "" {
			return f
		}
	}
	props, _ := want["properties"].(map[string]any)
	haveProps, _ := have["properties"].(map[string]any)
	haveAdd, _ := have["additionalProperties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if path == "" && (k == "metadata" || k == "apiVersion" || k == "kind") {
			continue
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		sub, _ := props[k].(map[string]any)
		haveSub, ok := haveProps[k].(map[string]any)
		if !ok {
			if haveAdd == nil {
				return p
			}
			haveSub = haveAdd
		}
		if f := missingField(sub, haveSub, p); f != "" {
			return f
		}
	}
	return ""
}

// waitEstablished watches the CRD name until its Established condition is true.
func waitEstablished(ctx context.Context, api dynamic.NamespaceableResourceInterface, name string) error {
	return objwatch.Until(ctx, api, name, func(u *unstructured.Unstructured) (bool, error) {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

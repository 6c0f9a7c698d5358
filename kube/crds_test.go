package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/config/crd"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/wire"
)

var crdsResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// manifest returns kubepact's generated CRD named name.
func manifest(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	for _, m := range crd.Manifests() {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(m, &u.Object))
		if u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no manifest for %s", name)
	return nil
}

// v1beta1Schema returns the openAPIV3Schema map of u's only version.
func v1beta1Schema(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	versions, _, err := unstructured.NestedSlice(u.Object, "spec", "versions")
	require.NoError(t, err)
	require.Len(t, versions, 1)
	s, _, err := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
	require.NoError(t, err)
	return s
}

// setSchema replaces the openAPIV3Schema of u's only version.
func setSchema(t *testing.T, u *unstructured.Unstructured, s map[string]any) {
	t.Helper()
	versions, _, err := unstructured.NestedSlice(u.Object, "spec", "versions")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedMap(versions[0].(map[string]any), s, "schema", "openAPIV3Schema"))
	require.NoError(t, unstructured.SetNestedSlice(u.Object, versions, "spec", "versions"))
}

// liqoResourceSliceCRD is a ResourceSlice CRD as Liqo v1.2 installs it
// (SPEC §7: short name, printer columns, classes, node labels and
// selector), plus a field only Liqo knows about, so that a replacement by
// kubepact's schema would show.
func liqoResourceSliceCRD(t *testing.T) *unstructured.Unstructured {
	u := manifest(t, "resourceslices.authentication.liqo.io")
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "liqo"})
	s := v1beta1Schema(t, u)
	require.NoError(t, unstructured.SetNestedMap(s, map[string]any{
		"type":                 "object",
		"additionalProperties": map[string]any{"type": "string"},
	}, "properties", "status", "properties", "liqoOnlyAnnotations"))
	setSchema(t, u, s)
	return u
}

// without returns kubepact's CRD name with the field at path removed.
func without(t *testing.T, name string, path ...string) *unstructured.Unstructured {
	u := manifest(t, name)
	s := v1beta1Schema(t, u)
	p := []string{}
	for _, f := range path {
		p = append(p, "properties", f)
	}
	_, found, err := unstructured.NestedFieldNoCopy(s, p...)
	require.NoError(t, err)
	require.True(t, found, "fixture field %v", path)
	unstructured.RemoveNestedField(s, p...)
	setSchema(t, u, s)
	return u
}

// TestInstallCRDsKeepsExisting runs on a cluster of its own, whose CRDs it
// installs and changes.
func TestInstallCRDsKeepsExisting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clusters, err := testcluster.StartAll(ctx, "crds")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	cfg := clusters[0].AdminConfig()
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	api := client.Resource(crdsResource)

	// Connect refuses the cluster up front, naming every CRD it lacks,
	// and does so again, naming fewer, once some are there.
	requireNotServed := func(t *testing.T, want ...string) {
		t.Helper()
		_, err := wire.Connect(cfg, nil)
		require.ErrorIs(t, err, wire.ErrCRDNotServed)
		var notServed *wire.CRDNotServedError
		require.ErrorAs(t, err, &notServed)
		require.Equal(t, want, notServed.CRDs)
		require.Equal(t, strings.TrimPrefix(clusters[0].Host(), "https://"), notServed.Server)
	}
	requireNotServed(t, "identities.authentication.liqo.io", "renews.authentication.liqo.io",
		"resourceslices.authentication.liqo.io", "tenants.authentication.liqo.io")

	_, err = api.Create(ctx, liqoResourceSliceCRD(t), metav1.CreateOptions{})
	require.NoError(t, err)
	// The API server writes the CRD's status until it is established; take
	// the reference copy after that.
	var liqo *unstructured.Unstructured
	require.Eventually(t, func() bool {
		liqo, err = api.Get(ctx, "resourceslices.authentication.liqo.io", metav1.GetOptions{})
		return err == nil && established(liqo)
	}, time.Minute, 50*time.Millisecond)
	time.Sleep(time.Second) // let any trailing status write land before the reference copy
	liqo, err = api.Get(ctx, "resourceslices.authentication.liqo.io", metav1.GetOptions{})
	require.NoError(t, err)
	requireNotServed(t, "identities.authentication.liqo.io", "renews.authentication.liqo.io", "tenants.authentication.liqo.io")
	_, err = api.Create(ctx, without(t, "tenants.authentication.liqo.io", "spec", "publicKey"), metav1.CreateOptions{})
	require.NoError(t, err)

	unchanged := func(t *testing.T) {
		t.Helper()
		got, err := api.Get(ctx, liqo.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, liqo.GetResourceVersion(), got.GetResourceVersion())
		require.Equal(t, liqo.Object["spec"], got.Object["spec"])
		require.Equal(t, liqo.GetLabels(), got.GetLabels())
	}

	t.Run("narrowed Tenant CRD without spec.publicKey", func(t *testing.T) {
		err := kube.InstallCRDs(ctx, cfg)
		require.ErrorIs(t, err, kube.ErrCRDIncompatible)
		var missing *kube.CRDFieldMissingError
		require.ErrorAs(t, err, &missing)
		require.Equal(t, kube.CRDFieldMissingError{CRD: "tenants.authentication.liqo.io", Field: "spec.publicKey"}, *missing)
		unchanged(t)
	})

	t.Run("narrowed Tenant CRD without status.authParams.signedCRT", func(t *testing.T) {
		narrowed := without(t, "tenants.authentication.liqo.io", "status", "authParams", "signedCRT")
		cur, err := api.Get(ctx, narrowed.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		narrowed.SetResourceVersion(cur.GetResourceVersion())
		_, err = api.Update(ctx, narrowed, metav1.UpdateOptions{})
		require.NoError(t, err)

		err = kube.InstallCRDs(ctx, cfg)
		require.ErrorIs(t, err, kube.ErrCRDIncompatible)
		var missing *kube.CRDFieldMissingError
		require.ErrorAs(t, err, &missing)
		require.Equal(t, "tenants.authentication.liqo.io", missing.CRD)
		require.Equal(t, "status.authParams.signedCRT", missing.Field)
		unchanged(t)
	})

	t.Run("complete CRDs are kept and missing ones installed", func(t *testing.T) {
		full := manifest(t, "tenants.authentication.liqo.io")
		cur, err := api.Get(ctx, full.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		full.SetResourceVersion(cur.GetResourceVersion())
		tenants, err := api.Update(ctx, full, metav1.UpdateOptions{})
		require.NoError(t, err)

		require.NoError(t, kube.InstallCRDs(ctx, cfg))
		unchanged(t)
		got, err := api.Get(ctx, tenants.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, tenants.GetResourceVersion(), got.GetResourceVersion(), "an existing CRD is not updated")

		for _, name := range []string{"identities.authentication.liqo.io", "renews.authentication.liqo.io"} {
			got, err := api.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			want := manifest(t, name)
			require.Equal(t, v1beta1Schema(t, want), v1beta1Schema(t, got), name)
			require.Equal(t, want.Object["spec"].(map[string]any)["names"].(map[string]any)["shortNames"],
				got.Object["spec"].(map[string]any)["names"].(map[string]any)["shortNames"], name)
		}

		require.NoError(t, kube.InstallCRDs(ctx, cfg), "idempotent")
		unchanged(t)

		// InstallCRDs returns once the CRDs are served: Connect accepts
		// the cluster at once.
		_, err = wire.Connect(cfg, nil)
		require.NoError(t, err)
	})
}

package v1beta1_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// crdDir holds the CRDs generated from this package's types.
var crdDir = filepath.Join("..", "..", "..", "config", "crd")

// crd reads the CRD in file into a generic map: apiextensions is not a
// dependency of the module.
func crd(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(crdDir, file))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(b, &m))
	return m
}

// at walks m along path, failing the test when a step is missing.
func at(t *testing.T, m any, path ...string) any {
	t.Helper()
	for i, p := range path {
		obj, ok := m.(map[string]any)
		require.True(t, ok, "%s is not an object", strings.Join(path[:i], "."))
		m, ok = obj[p]
		require.True(t, ok, "%s is missing", strings.Join(path[:i+1], "."))
	}
	return m
}

// version returns the v1beta1 entry of the CRD's versions.
func version(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	for _, v := range at(t, m, "spec", "versions").([]any) {
		if v.(map[string]any)["name"] == "v1beta1" {
			return v.(map[string]any)
		}
	}
	t.Fatal("no v1beta1 version")
	return nil
}

func TestCRDFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, []string{
		"authentication.liqo.io_identities.yaml",
		"authentication.liqo.io_renews.yaml",
		"authentication.liqo.io_resourceslices.yaml",
		"authentication.liqo.io_tenants.yaml",
		// kubepact's own, from apis/peering/v1alpha1
		"peering.kubepact.io_authorizedconsumers.yaml",
		"peering.kubepact.io_trustedproviders.yaml",
	}, names)
}

// TestCRDKustomization checks that config/crd/kustomization.yaml, which
// kubectl apply -k reads, lists every generated CRD, Liqo's and kubepact's
// peering ones, and nothing else.
func TestCRDKustomization(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(crdDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}{}), "only apiVersion, kind and resources")
	require.NoError(t, yaml.Unmarshal(b, &k))
	var names []string
	for _, group := range []string{"authentication.liqo.io", "peering.kubepact.io"} {
		files, err := filepath.Glob(filepath.Join(crdDir, group+"_*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files, group)
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
	}
	require.ElementsMatch(t, names, k.Resources)
}

func TestCRDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, kind, plural, singular string
	}{
		{file: "authentication.liqo.io_tenants.yaml", kind: "Tenant", plural: "tenants", singular: "tenant"},
		{file: "authentication.liqo.io_identities.yaml", kind: "Identity", plural: "identities", singular: "identity"},
		{file: "authentication.liqo.io_resourceslices.yaml", kind: "ResourceSlice", plural: "resourceslices", singular: "resourceslice"},
		{file: "authentication.liqo.io_renews.yaml", kind: "Renew", plural: "renews", singular: "renew"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			m := crd(t, tt.file)
			require.Equal(t, "apiextensions.k8s.io/v1", m["apiVersion"])
			require.Equal(t, "CustomResourceDefinition", m["kind"])
			require.Equal(t, tt.plural+".authentication.liqo.io", at(t, m, "metadata", "name"))
			require.Equal(t, "authentication.liqo.io", at(t, m, "spec", "group"))
			require.Equal(t, "Namespaced", at(t, m, "spec", "scope"))
			require.Equal(t, tt.kind, at(t, m, "spec", "names", "kind"))
			require.Equal(t, tt.kind+"List", at(t, m, "spec", "names", "listKind"))
			require.Equal(t, tt.plural, at(t, m, "spec", "names", "plural"))
			require.Equal(t, tt.singular, at(t, m, "spec", "names", "singular"))

			require.Len(t, at(t, m, "spec", "versions"), 1)
			v := version(t, m)
			require.Equal(t, true, v["served"])
			require.Equal(t, true, v["storage"])
			require.Equal(t, map[string]any{}, at(t, v, "subresources", "status"), "status subresource")
			require.Equal(t, "object", at(t, v, "schema", "openAPIV3Schema", "type"))
		})
	}
}

func TestCRDEnumsAndDefaults(t *testing.T) {
	t.Parallel()
	tenant := version(t, crd(t, "authentication.liqo.io_tenants.yaml"))
	identity := version(t, crd(t, "authentication.liqo.io_identities.yaml"))
	slice := version(t, crd(t, "authentication.liqo.io_resourceslices.yaml"))
	schema := func(v map[string]any, path ...string) map[string]any {
		p := []string{"schema", "openAPIV3Schema"}
		for _, s := range path {
			p = append(p, "properties", s)
		}
		return at(t, v, p...).(map[string]any)
	}
	conditions := at(t, schema(slice, "status", "conditions"), "items", "properties").(map[string]any)

	tests := []struct {
		name        string
		field       map[string]any
		wantEnum    []any
		wantDefault any
	}{
		{name: "Tenant spec.authzPolicy", field: schema(tenant, "spec", "authzPolicy"), wantEnum: []any{"KeysExchange", "TolerateNoHandshake"}, wantDefault: "KeysExchange"},
		{name: "Tenant spec.tenantCondition", field: schema(tenant, "spec", "tenantCondition"), wantEnum: []any{"Active", "Cordoned", "Drained"}, wantDefault: "Active"},
		{name: "Identity spec.type", field: schema(identity, "spec", "type"), wantEnum: []any{"ControlPlane", "ResourceSlice"}},
		{name: "ResourceSlice condition type", field: conditions["type"].(map[string]any), wantEnum: []any{"Authentication", "Resources"}},
		{name: "ResourceSlice condition status", field: conditions["status"].(map[string]any), wantEnum: []any{"Accepted", "Denied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, "string", tt.field["type"])
			require.ElementsMatch(t, tt.wantEnum, tt.field["enum"])
			require.Equal(t, tt.wantDefault, tt.field["default"])
		})
	}

	for _, f := range []map[string]any{
		schema(tenant, "spec", "publicKey"), schema(tenant, "spec", "csr"), schema(tenant, "spec", "signature"),
		schema(tenant, "status", "authParams", "ca"), schema(tenant, "status", "authParams", "signedCRT"),
		schema(identity, "spec", "authParams", "ca"), schema(identity, "spec", "authParams", "signedCRT"),
		schema(slice, "spec", "csr"),
	} {
		require.Equal(t, "byte", f["format"], "[]byte fields are base64 strings")
	}
}

// TestCRDsDescribeEveryField checks that every field the Go types write is
// declared in the CRD schema, so an API server does not prune it.
func TestCRDsDescribeEveryField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		obj  runtime.Object
	}{
		{file: "authentication.liqo.io_tenants.yaml", obj: fullTenant()},
		{file: "authentication.liqo.io_identities.yaml", obj: fullIdentity()},
		{file: "authentication.liqo.io_resourceslices.yaml", obj: fullResourceSlice()},
		{file: "authentication.liqo.io_renews.yaml", obj: fullRenew()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := yaml.Marshal(tt.obj)
			require.NoError(t, err)
			var obj map[string]any
			require.NoError(t, yaml.Unmarshal(b, &obj))
			root := at(t, version(t, crd(t, tt.file)), "schema", "openAPIV3Schema").(map[string]any)
			var missing []string
			declared(root, obj, "", &missing)
			require.Empty(t, missing, "fields written by the Go types but not in the CRD")
		})
	}
}

// declared appends to missing the path of every value in v that schema does
// not declare. metadata is the API server's and is not described.
func declared(schema map[string]any, v any, path string, missing *[]string) {
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		additional, _ := schema["additionalProperties"].(map[string]any)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "." + k
			if p == ".metadata" {
				continue
			}
			switch sub, ok := props[k].(map[string]any); {
			case ok:
				declared(sub, v[k], p, missing)
			case additional != nil:
				declared(additional, v[k], p, missing)
			default:
				*missing = append(*missing, p)
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, e := range v {
			declared(items, e, path+"[]", missing)
		}
	}
}

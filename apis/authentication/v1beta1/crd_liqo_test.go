package v1beta1_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// clusterIDPattern is the pattern Liqo v1.2 puts on every cluster ID field.
const clusterIDPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

// prop returns the schema of the field at path in the CRD's v1beta1 version.
func prop(t *testing.T, file string, path ...string) map[string]any {
	t.Helper()
	p := []string{"schema", "openAPIV3Schema"}
	for _, s := range path {
		p = append(p, "properties", s)
	}
	return at(t, version(t, crd(t, file)), p...).(map[string]any)
}

// TestCRDsMatchLiqo checks the schema facts of Liqo v1.2's CRDs that go
// beyond field names: short names, printer columns, patterns, validation
// rules and which fields are optional.
func TestCRDsMatchLiqo(t *testing.T) {
	t.Parallel()
	const (
		tenants    = "authentication.liqo.io_tenants.yaml"
		identities = "authentication.liqo.io_identities.yaml"
		slices     = "authentication.liqo.io_resourceslices.yaml"
		renews     = "authentication.liqo.io_renews.yaml"
	)
	t.Run("short names and printer columns", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			file      string
			shortName []any
			columns   []map[string]any
		}{
			{file: tenants, shortName: []any{"tn"}, columns: []map[string]any{
				{"name": "Condition", "type": "string", "jsonPath": ".spec.tenantCondition"},
				{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
			}},
			{file: identities, shortName: []any{"id"}, columns: []map[string]any{
				{"name": "Type", "type": "string", "jsonPath": ".spec.type"},
				{"name": "KubeconfigSecret", "type": "string", "jsonPath": ".status.kubeconfigSecretRef.name", "priority": float64(1)},
				{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
			}},
			{file: slices, shortName: []any{"rslice"}, columns: []map[string]any{
				{"name": "Authentication", "type": "string", "jsonPath": `.status.conditions[?(@.type=="Authentication")].status`},
				{"name": "Resources", "type": "string", "jsonPath": `.status.conditions[?(@.type=="Resources")].status`},
				{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
			}},
			{file: renews, columns: []map[string]any{
				{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
			}},
		}
		for _, tt := range tests {
			m := crd(t, tt.file)
			names := at(t, m, "spec", "names").(map[string]any)
			if tt.shortName == nil {
				require.NotContains(t, names, "shortNames", tt.file)
			} else {
				require.Equal(t, tt.shortName, names["shortNames"], tt.file)
			}
			cols := at(t, version(t, m), "additionalPrinterColumns").([]any)
			require.Len(t, cols, len(tt.columns), tt.file)
			for i, want := range tt.columns {
				got := cols[i].(map[string]any)
				for k, v := range want {
					require.Equal(t, v, got[k], "%s column %d %s", tt.file, i, k)
				}
			}
		}
	})
	t.Run("cluster ID patterns", func(t *testing.T) {
		t.Parallel()
		for _, f := range []map[string]any{
			prop(t, tenants, "spec", "clusterID"),
			prop(t, identities, "spec", "clusterID"),
			prop(t, slices, "spec", "consumerClusterID"),
			prop(t, slices, "spec", "providerClusterID"),
			prop(t, renews, "spec", "consumerClusterID"),
		} {
			require.Equal(t, clusterIDPattern, f["pattern"])
		}
	})
	t.Run("Tenant clusterID is immutable", func(t *testing.T) {
		t.Parallel()
		rules := prop(t, tenants, "spec", "clusterID")["x-kubernetes-validations"].([]any)
		require.Len(t, rules, 1)
		require.Equal(t, "self == oldSelf", rules[0].(map[string]any)["rule"])
		require.Equal(t, "ClusterID is immutable", rules[0].(map[string]any)["message"], "Liqo's message")
	})
	t.Run("nothing required in spec or status", func(t *testing.T) {
		t.Parallel()
		for _, file := range []string{tenants, identities, slices, renews} {
			for _, part := range []string{"spec", "status"} {
				require.NotContains(t, prop(t, file, part), "required", "%s %s", file, part)
			}
		}
	})
	t.Run("authParams optional but awsConfig complete", func(t *testing.T) {
		t.Parallel()
		for _, ap := range []map[string]any{
			prop(t, tenants, "status", "authParams"),
			prop(t, identities, "spec", "authParams"),
			prop(t, slices, "status", "authParams"),
			prop(t, renews, "status", "authParams"),
		} {
			require.NotContains(t, ap, "required")
			props := ap["properties"].(map[string]any)
			for _, f := range []string{"ca", "signedCRT", "apiServer", "proxyURL", "awsConfig"} {
				require.Contains(t, props, f)
			}
			require.ElementsMatch(t,
				[]any{"awsUserArn", "awsAccessKeyID", "awsSecretAccessKey", "awsRegion", "awsClusterName"},
				props["awsConfig"].(map[string]any)["required"])
		}
	})
	t.Run("ResourceSlice status classes, labels and conditions", func(t *testing.T) {
		t.Parallel()
		for field, name := range map[string]string{
			"storageClasses":      "storageClassName",
			"ingressClasses":      "ingressClassName",
			"loadBalancerClasses": "loadBalancerClassName",
		} {
			items := at(t, prop(t, slices, "status", field), "items").(map[string]any)
			require.Equal(t, []any{name}, items["required"], field)
			props := items["properties"].(map[string]any)
			require.Equal(t, "string", at(t, props, name, "type"), field)
			require.Equal(t, "boolean", at(t, props, "default", "type"), field)
		}
		for _, field := range []string{"nodeLabels", "nodeSelector"} {
			require.Equal(t, "string", at(t, prop(t, slices, "status", field), "additionalProperties", "type"), field)
		}
		for _, part := range []string{"spec", "status"} {
			require.Contains(t, prop(t, slices, part, "resources"), "additionalProperties", part)
		}
		cond := at(t, prop(t, slices, "status", "conditions"), "items").(map[string]any)
		require.ElementsMatch(t, []any{"type", "status"}, cond["required"])
		for _, f := range []string{"reason", "message", "lastTransitionTime"} {
			require.Contains(t, cond["properties"], f)
		}
	})
	t.Run("Renew fields", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "byte", prop(t, renews, "spec", "csr")["format"])
		require.Equal(t, "byte", prop(t, renews, "spec", "publicKey")["format"])
		require.NotContains(t, prop(t, renews, "spec", "identityType"), "enum", "Liqo's Renew does not enumerate identityType")
		require.Contains(t, prop(t, renews, "spec", "resourceSliceRef", "name"), "type")
	})
}

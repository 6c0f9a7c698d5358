package tenant_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/tenant"
)

// encodedTenant returns a Tenant as Build makes it, in YAML and in JSON.
func encodedTenant(t *testing.T) (yamlDoc, jsonDoc string) {
	t.Helper()
	tn, err := tenant.Build(consumerID, mustKey(t, keys.Ed25519), mustNonce(t), &tenant.BuildOptions{ProxyURL: "http://proxy.example:3128"})
	require.NoError(t, err)
	y, err := yaml.Marshal(tn)
	require.NoError(t, err)
	j, err := json.Marshal(tn)
	require.NoError(t, err)
	return string(y), string(j)
}

func TestDecodeWhatBuildWrites(t *testing.T) {
	t.Parallel()
	tn, err := tenant.Build(consumerID, mustKey(t, keys.Ed25519), mustNonce(t), &tenant.BuildOptions{ProxyURL: "http://proxy.example:3128"})
	require.NoError(t, err)
	for name, marshal := range map[string]func(any) ([]byte, error){"YAML": yaml.Marshal, "JSON": json.Marshal} {
		data, err := marshal(tn)
		require.NoError(t, err)
		got, err := tenant.Decode(data)
		require.NoError(t, err, name)
		require.True(t, apiequality.Semantic.DeepEqual(tn, got), name)
	}
}

// TestDecodeLikeTheAPIServer feeds Decode documents that the API server
// reads otherwise than encoding/json would, or refuses: each must be
// refused, so that what verify tenant checks is what kubectl apply stores.
func TestDecodeLikeTheAPIServer(t *testing.T) {
	t.Parallel()
	yamlDoc, jsonDoc := encodedTenant(t)
	tests := []struct {
		name     string
		doc      string // "yaml" or "json"
		old, new string
		// field is the path of the refused field, when the refusal is a
		// strict field error; "" when the document is refused earlier.
		field string
	}{
		{"clusterId after clusterID", "yaml", "  clusterID: cl-consumer\n", "  clusterID: cl-consumer\n  clusterId: cl-other\n", "spec.clusterId"},
		{"clusterId after clusterID", "json", `"clusterID":"cl-consumer"`, `"clusterID":"cl-consumer","clusterId":"cl-other"`, "spec.clusterId"},
		{"only clusterId", "yaml", "  clusterID: cl-consumer\n", "  clusterId: cl-other\n", "spec.clusterId"},
		{"only clusterId", "json", `"clusterID":"cl-consumer"`, `"clusterId":"cl-other"`, "spec.clusterId"},
		{"Spec for spec", "yaml", "\nspec:\n", "\nSpec:\n", "Spec"},
		{"Spec for spec", "json", `"spec":`, `"Spec":`, "Spec"},
		{"long s in spec", "json", `"spec":`, `"ſpec":`, "ſpec"},
		{"Name beside name", "yaml", "  name: cl-consumer\n", "  name: cl-consumer\n  Name: cl-other\n", "metadata.Name"},
		{"unknown field", "yaml", "  clusterID: cl-consumer\n", "  clusterID: cl-consumer\n  clusterName: cl-other\n", "spec.clusterName"},
		{"unknown field", "json", `"clusterID":"cl-consumer"`, `"clusterID":"cl-consumer","clusterName":"cl-other"`, "spec.clusterName"},
		{"duplicate clusterID", "yaml", "  clusterID: cl-consumer\n", "  clusterID: cl-consumer\n  clusterID: cl-other\n", ""},
		{"duplicate clusterID", "json", `"clusterID":"cl-consumer"`, `"clusterID":"cl-consumer","clusterID":"cl-other"`, ""},
		{"number for a string", "yaml", "  clusterID: cl-consumer\n", "  clusterID: 12345\n", ""},
		{"number for a string", "json", `"clusterID":"cl-consumer"`, `"clusterID":12345`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.doc+" "+tt.name, func(t *testing.T) {
			t.Parallel()
			doc := yamlDoc
			if tt.doc == "json" {
				doc = jsonDoc
			}
			require.Contains(t, doc, tt.old)
			tn, err := tenant.Decode([]byte(strings.Replace(doc, tt.old, tt.new, 1)))
			require.ErrorIs(t, err, tenant.ErrMalformed)
			require.Nil(t, tn)
			if tt.field != "" {
				var field kjson.FieldError
				require.True(t, errors.As(err, &field), "want a field error, got %v", err)
				require.Equal(t, tt.field, field.FieldPath())
			}
		})
	}
}

// kubectl applies every document of a stream; Decode would read only the
// first, so a stream of several is refused. Empty documents do not count.
func TestDecodeRefusesSeveralDocuments(t *testing.T) {
	t.Parallel()
	yamlDoc, _ := encodedTenant(t)
	other := strings.Replace(yamlDoc, "cl-consumer", "cl-other", -1)
	_, err := tenant.Decode([]byte(yamlDoc + "---\n" + other))
	require.ErrorIs(t, err, tenant.ErrMalformed)
	_, err = tenant.Decode([]byte("---\n# a comment\n---\n" + yamlDoc + "---\n"))
	require.NoError(t, err)
}

package identity_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/identity"
)

func TestDecodeWhatBuildWrites(t *testing.T) {
	t.Parallel()
	id := newFixture(t).identity(t)
	proxy := "http://proxy.example:3128"
	id.Spec.AuthParams.ProxyURL = &proxy
	for name, marshal := range map[string]func(any) ([]byte, error){"YAML": yaml.Marshal, "JSON": json.Marshal} {
		data, err := marshal(id)
		require.NoError(t, err)
		got, err := identity.Decode(data)
		require.NoError(t, err, name)
		require.True(t, apiequality.Semantic.DeepEqual(id, got), name)
	}
}

// TestDecodeLikeTheAPIServer feeds Decode documents that the API server
// reads otherwise than encoding/json would, or refuses: each must be
// refused, so that what is verified is what kubectl apply stores.
func TestDecodeLikeTheAPIServer(t *testing.T) {
	t.Parallel()
	id := newFixture(t).identity(t)
	y, err := yaml.Marshal(id)
	require.NoError(t, err)
	j, err := json.Marshal(id)
	require.NoError(t, err)
	yamlDoc, jsonDoc := string(y), string(j)

	tests := []struct {
		name     string
		doc      string // "yaml" or "json"
		old, new string
		// field is the path of the refused field, when the refusal is a
		// strict field error; "" when the document is refused earlier.
		field string
	}{
		{"clusterId after clusterID", "yaml", "  clusterID: cl-provider\n", "  clusterID: cl-provider\n  clusterId: cl-other\n", "spec.clusterId"},
		{"clusterId after clusterID", "json", `"clusterID":"cl-provider"`, `"clusterID":"cl-provider","clusterId":"cl-other"`, "spec.clusterId"},
		{"only clusterId", "yaml", "  clusterID: cl-provider\n", "  clusterId: cl-other\n", "spec.clusterId"},
		{"only clusterId", "json", `"clusterID":"cl-provider"`, `"clusterId":"cl-other"`, "spec.clusterId"},
		{"Spec for spec", "yaml", "\nspec:\n", "\nSpec:\n", "Spec"},
		{"Spec for spec", "json", `"spec":`, `"Spec":`, "Spec"},
		{"APIServer beside apiServer", "json", `"apiServer":"https://provider.example:6443"`,
			`"apiServer":"https://provider.example:6443","APIServer":"https://evil.example"`, "spec.authParams.APIServer"},
		{"unknown field", "yaml", "  clusterID: cl-provider\n", "  clusterID: cl-provider\n  clusterName: cl-other\n", "spec.clusterName"},
		{"unknown field", "json", `"clusterID":"cl-provider"`, `"clusterID":"cl-provider","clusterName":"cl-other"`, "spec.clusterName"},
		{"duplicate clusterID", "yaml", "  clusterID: cl-provider\n", "  clusterID: cl-provider\n  clusterID: cl-other\n", ""},
		{"duplicate clusterID", "json", `"clusterID":"cl-provider"`, `"clusterID":"cl-provider","clusterID":"cl-other"`, ""},
		{"number for a string", "json", `"clusterID":"cl-provider"`, `"clusterID":12345`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.doc+" "+tt.name, func(t *testing.T) {
			t.Parallel()
			doc := yamlDoc
			if tt.doc == "json" {
				doc = jsonDoc
			}
			require.Contains(t, doc, tt.old)
			got, err := identity.Decode([]byte(strings.Replace(doc, tt.old, tt.new, 1)))
			require.ErrorIs(t, err, identity.ErrMalformed)
			require.Nil(t, got)
			if tt.field != "" {
				var field kjson.FieldError
				require.True(t, errors.As(err, &field), "want a field error, got %v", err)
				require.Equal(t, tt.field, field.FieldPath())
			}
		})
	}
}

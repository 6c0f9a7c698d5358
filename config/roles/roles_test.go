package roles_test

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/rbac"
)

var update = flag.Bool("update", false, "rewrite the manifests from package rbac")

const header = "# Generated from package rbac (rbac.PeerRoles) by `go test ./config/roles -update`.\n" +
	"# Liqo v1.2's chart ships the same roles; do not edit by hand.\n"

// manifest renders r as the file config/roles ships.
func manifest(t *testing.T, r any) []byte {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	require.NoError(t, err)
	delete(u["metadata"].(map[string]any), "creationTimestamp")
	out, err := yaml.Marshal(u)
	require.NoError(t, err)
	return append([]byte(header), out...)
}

// TestManifestsMatchPackage checks that every peer role has its manifest,
// equal to what package rbac builds, and that the kustomization lists
// exactly those files.
func TestManifestsMatchPackage(t *testing.T) {
	var files []string
	for _, r := range rbac.PeerRoles() {
		name := r.Name + ".yaml"
		files = append(files, name)
		want := manifest(t, r)
		if *update {
			require.NoError(t, os.WriteFile(name, want, 0o644))
			continue
		}
		got, err := os.ReadFile(name)
		require.NoError(t, err, "config/roles/%s: run go test ./config/roles -update", name)
		require.Equal(t, string(want), string(got), "config/roles/%s differs from package rbac: run go test ./config/roles -update", name)
	}
	kustomization := []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"# The ClusterRoles consumers are bound to. Not part of config/controller:\n" +
		"# next to Liqo they are Liqo's.\nresources:\n")
	slices.Sort(files)
	for _, f := range files {
		kustomization = append(kustomization, "  - "+f+"\n"...)
	}
	if *update {
		require.NoError(t, os.WriteFile("kustomization.yaml", kustomization, 0o644))
		return
	}
	got, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	require.True(t, bytes.Equal(kustomization, got), "config/roles/kustomization.yaml: run go test ./config/roles -update")
}

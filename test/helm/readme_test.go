package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChartREADME: charts/kubepact/README.md is what hack/helm-docs.sh
// (helm-docs v1.14.2) generates from values.yaml and README.md.gotmpl, and
// its values table documents every value, with a description and the
// default values.yaml gives. The script runs on a copy of the chart, so a
// stale README.md fails here instead of being rewritten.
func TestChartREADME(t *testing.T) {
	charts := t.TempDir()
	copyDir(t, chartDir, filepath.Join(charts, "kubepact"))
	cmd := exec.Command("bash", filepath.Join(root, "hack", "helm-docs.sh"), charts)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/helm-docs.sh: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "helm-docs warns")

	got, err := os.ReadFile(filepath.Join(charts, "kubepact", "README.md"))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	require.NoError(t, err, "charts/kubepact/README.md: run bash hack/helm-docs.sh")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("charts/kubepact/README.md is out of date: run bash hack/helm-docs.sh (-checked in +generated):\n%s", diff)
	}

	// Every leaf of values.yaml is a row, and none without a description.
	rows := map[string]string{}
	for _, line := range strings.Split(string(got), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 4 && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| Key ") {
			rows[strings.TrimPrefix(cells[0], "| ")] = strings.TrimSuffix(cells[3], " |")
		}
	}
	ch := loadChart(t, chartDir)
	for _, key := range leafKeys(ch.Values, "") {
		desc, ok := rows[key]
		if !ok {
			// A documented map is one row (resources).
			for k := range rows {
				if strings.HasPrefix(key, k+".") {
					desc, ok = rows[k], true
				}
			}
		}
		if assert.True(t, ok, "README.md documents %s", key) {
			assert.NotEmpty(t, strings.TrimSpace(desc), "%s has a description (a \"# --\" comment in values.yaml)", key)
		}
	}
}

// leafKeys returns the dotted paths of vals' leaves: every value that is
// not a non-empty map.
func leafKeys(vals map[string]any, prefix string) []string {
	var out []string
	for k, v := range vals {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			out = append(out, leafKeys(m, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}

// copyDir copies the regular files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
}

package docblocks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/docblocks"
)

func TestParse(t *testing.T) {
	t.Parallel()
	blocks, err := docblocks.Parse("x.md", "# T\n\n```sh\necho a\n# not a heading\n```\n\n## S\n\n```go\nx := 1\n```\n```\nplain\n```\n")
	require.NoError(t, err)
	assert.Equal(t, []docblocks.Block{
		{File: "x.md", Line: 3, Heading: "# T", Lang: "sh", Text: "echo a\n# not a heading\n"},
		{File: "x.md", Line: 10, Heading: "## S", Lang: "go", Text: "x := 1\n"},
		{File: "x.md", Line: 13, Heading: "## S", Lang: "", Text: "plain\n"},
	}, blocks)

	_, err = docblocks.Parse("x.md", "```sh\necho a\n")
	require.ErrorContains(t, err, "x.md:1: the block is never closed")
}

func TestSection(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "docs"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(root, "docs", "cli"), 0o755))
	for name, text := range map[string]string{
		"README.md":            "# R\n\n## A\n\n```sh\na1\n```\n\n### A.1\n\n```sh\na2\n```\n```go\ng\n```\n\n## B\n\n```sh\nb\n```\n\n## Dup\n",
		"docs/d.md":            "# D\n\n## C\n\n```sh\n## C\n```\n\n## Twice\n\n## Twice\n",
		"docs/e.md":            "# E\n\n## Dup\n",
		"docs/cli/kubepact.md": "## Generated\n\n```sh\nnot read\n```\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	files, err := docblocks.Files(root)
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "docs/d.md", "docs/e.md"}, files)

	texts := func(heading, lang string) []string {
		blocks, err := docblocks.Section(root, heading, lang)
		require.NoError(t, err, heading)
		var out []string
		for _, b := range blocks {
			out = append(out, b.File+": "+b.Text)
		}
		return out
	}
	assert.Equal(t, []string{"README.md: a1\n", "README.md: a2\n"}, texts("## A", "sh"), "subsections included")
	assert.Equal(t, []string{"README.md: a2\n"}, texts("### A.1", "sh"))
	assert.Equal(t, []string{"README.md: b\n"}, texts("## B", "sh"))
	assert.Equal(t, []string{"README.md: g\n"}, texts("## A", "go"))
	assert.Equal(t, []string{"docs/d.md: ## C\n"}, texts("## C", "sh"), "a heading inside a block neither opens nor ends a section")
	assert.Empty(t, texts("## C", "go"))

	for heading, want := range map[string]string{
		"## Dup":       `README.md:24 and docs/e.md:3 both have the heading "## Dup"`,
		"## Twice":     `docs/d.md:9 and docs/d.md:11 both have the heading "## Twice"`,
		"## None":      `no heading "## None" in README.md or docs/*.md`,
		"## Generated": `no heading "## Generated" in README.md or docs/*.md`,
	} {
		_, err := docblocks.Section(root, heading, "sh")
		assert.EqualError(t, err, want, heading)
	}
}

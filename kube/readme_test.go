package kube_test

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/docblocks"
)

// TestREADMERealClusters holds the Go snippet of the README's "Use it as a
// library" to Example_realClusters, which go test runs against real
// clusters: the snippet is gofmt'd, its main function is the Example's
// body and its must the Example's, and it takes at most 20 lines, blank
// lines and comments excluded.
func TestREADMERealClusters(t *testing.T) {
	t.Parallel()
	blocks, err := docblocks.Section("..", "## Use it as a library", "go")
	require.NoError(t, err)
	require.Len(t, blocks, 1, "the section has one Go snippet")
	snippet := blocks[0].Text

	formatted, err := format.Source([]byte(snippet))
	require.NoError(t, err)
	require.Equal(t, snippet, string(formatted), "the snippet is gofmt'd")
	lines := 0
	for line := range strings.SplitSeq(snippet, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			lines++
		}
	}
	t.Logf("README snippet: %d lines", lines)
	require.LessOrEqual(t, lines, 20)

	readmeFuncs := funcs(t, "README.md", "package main\n"+snippet)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	exampleFuncs := funcs(t, "example_test.go", string(example))
	require.Contains(t, readmeFuncs, "main")
	require.Contains(t, exampleFuncs, "Example_realClusters")
	require.Equal(t, exampleFuncs["Example_realClusters"], readmeFuncs["main"])
	require.Equal(t, exampleFuncs["must"], readmeFuncs["must"])
	require.Len(t, readmeFuncs, 2, "the snippet declares only main and must")
}

// funcs returns the functions of a Go source, by name, as their signature
// (without the name) and statements print, one a line, without comments.
func funcs(t *testing.T, name, src string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0) // comments dropped
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		var b bytes.Buffer
		require.NoError(t, format.Node(&b, fset, fn.Type))
		for _, stmt := range fn.Body.List {
			b.WriteString("\n")
			require.NoError(t, format.Node(&b, fset, stmt))
		}
		out[fn.Name.Name] = b.String()
	}
	return out
}

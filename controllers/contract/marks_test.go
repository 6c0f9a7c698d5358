package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/controllers/contract"
)

// TestEveryReasonMarked: each reason constant's comment says whether it
// is final ("Final."), waits for an administrator ("Blocking.") or
// neither, and Final and Blocking answer for it exactly as its comment
// says: a reason added, or one whose answer changes, cannot drift from
// what the documentation tells an operator.
func TestEveryReasonMarked(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				v := spec.(*ast.ValueSpec)
				if len(v.Names) != 1 || !strings.HasPrefix(v.Names[0].Name, "Reason") || len(v.Values) != 1 {
					continue
				}
				lit, ok := v.Values[0].(*ast.BasicLit)
				require.True(t, ok, "%s is a string literal", v.Names[0].Name)
				reason, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				doc := v.Doc.Text()
				final, blocking := marked(doc, "Final."), marked(doc, "Blocking.")
				assert.False(t, final && blocking, "%s is marked both Final and Blocking", v.Names[0].Name)
				assert.Equal(t, final, contract.Final(reason), "%s: its comment and Final disagree", v.Names[0].Name)
				assert.Equal(t, blocking, contract.Blocking(reason), "%s: its comment and Blocking disagree", v.Names[0].Name)
				seen++
			}
		}
	}
	assert.Greater(t, seen, 50, "the reasons were found")
}

// marked reports whether a line of doc is mark alone.
func marked(doc, mark string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if strings.TrimSpace(line) == mark {
			return true
		}
	}
	return false
}

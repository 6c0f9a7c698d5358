package step

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaredNames reads step.go and returns every constant of type Name, so a
// step added without an action phrase fails TestEveryStepHasAnAction.
func declaredNames(t *testing.T) map[string]Name {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "step.go", nil, 0)
	require.NoError(t, err)
	names := map[string]Name{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Name" {
				continue
			}
			for i, n := range vs.Names {
				lit := vs.Values[i].(*ast.BasicLit)
				names[n.Name] = Name(strings.Trim(lit.Value, "\""))
			}
		}
	}
	return names
}

func TestEveryStepHasAnAction(t *testing.T) {
	t.Parallel()
	names := declaredNames(t)
	require.Len(t, names, len(actions), "every step constant has exactly one action, and actions holds nothing else")
	cause := errors.New("the cause")
	for constant, name := range names {
		t.Run(constant, func(t *testing.T) {
			t.Parallel()
			action, ok := actions[name]
			require.True(t, ok, "%s has no action phrase", constant)
			assert.NotEmpty(t, action)
			assert.Equal(t, action, name.Action())
			assert.True(t, strings.HasSuffix(strings.Fields(action)[0], "ing"), "%q starts with a gerund", action)

			err := fmt.Errorf("outer: %w", &Error{Step: name, Err: cause})
			assert.ErrorIs(t, err, cause)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, name, se.Step)
			assert.Equal(t, "kubepact: "+action+": the cause", se.Error())
			assert.NotContains(t, se.Error(), string(name), "the error names the action, not liqoctl's completion message")
		})
	}
}

func TestUnknownStepIsQuoted(t *testing.T) {
	t.Parallel()
	err := &Error{Step: Name("Something done"), Err: errors.New("boom")}
	assert.Equal(t, `kubepact: step "Something done": boom`, err.Error())
}

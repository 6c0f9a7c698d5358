package main

import (
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// packageDoc returns the package doc of main.go, as go doc prints it.
func packageDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	return f.Doc.Text()
}

// codeBlocks returns the indented blocks of a doc text, in order, each
// with its lines' leading tab removed.
func codeBlocks(text string) [][]string {
	var blocks [][]string
	var cur []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "\t") {
			cur = append(cur, strings.TrimPrefix(l, "\t"))
			continue
		}
		if cur != nil {
			blocks = append(blocks, cur)
			cur = nil
		}
	}
	return blocks
}

// flagName is how the doc writes a flag: -s/--long, or --long.
func flagName(fl *pflag.Flag) string {
	if fl.Shorthand != "" {
		return "-" + fl.Shorthand + "/--" + fl.Name
	}
	return "--" + fl.Name
}

// Items of the doc's flag list that stand for the connection flags.
const (
	connectionItem       = "connection flags"
	remoteConnectionItem = "remote connection flags"
)

// TestPackageDocListsEveryFlag walks the command tree and fails on any
// command or flag the package doc's "# Flags" section omits, and on any it
// lists that the tree does not have: each command's own flags, whether it
// takes the connection flags of the local and of the other cluster, and
// the connection flags themselves.
func TestPackageDocListsEveryFlag(t *testing.T) {
	t.Parallel()
	doc := packageDoc(t)
	start := strings.Index(doc, "\n# Flags\n")
	require.GreaterOrEqual(t, start, 0, "the package doc has a # Flags section")
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n# "); end >= 0 {
		section = section[:end+1]
	}
	blocks := codeBlocks(section)
	require.Len(t, blocks, 2, "# Flags holds the connection flags, then the flags of each command")

	// The connection flags: those of the local cluster, as one list.
	var documentedConnection []string
	for _, l := range blocks[0] {
		for _, item := range strings.Split(l, ",") {
			if item = strings.TrimSpace(item); item != "" {
				documentedConnection = append(documentedConnection, item)
			}
		}
	}
	local, remote := newFlags("connection"), map[string]bool{}
	localFlags(local, "local")
	remoteFlags(local, "remote")
	var connection []string
	for _, k := range local.connection {
		k.VisitAll(func(fl *pflag.Flag) {
			if name, ok := strings.CutPrefix(fl.Name, "remote-"); ok {
				assert.Empty(t, fl.Shorthand, "--%s has no shorthand, as the doc says", fl.Name)
				remote[name] = true
				return
			}
			connection = append(connection, flagName(fl))
		})
	}
	slices.Sort(connection)
	slices.Sort(documentedConnection)
	assert.Equal(t, connection, documentedConnection, "the doc lists the connection flags")
	for _, name := range connection {
		name = name[strings.Index(name, "--")+2:]
		assert.True(t, remote[name], "--remote-%s exists, as the doc says", name)
	}
	assert.Len(t, remote, len(connection), "the remote connection flags are the connection flags, prefixed")

	// Each command's flags.
	documented := map[string][]string{}
	var order []string
	row := regexp.MustCompile(`^(\S.*?)\s{2,}(\S.*)$`)
	var last string
	for _, l := range blocks[1] {
		rest := l
		if m := row.FindStringSubmatch(l); m != nil {
			last = m[1]
			require.NotContains(t, documented, last, "one row per command")
			order = append(order, last)
			rest = m[2]
		} else {
			require.NotEmpty(t, last, "a continuation line follows a row: %q", l)
		}
		for _, item := range strings.Split(rest, ",") {
			if item = strings.TrimSpace(item); item != "" {
				documented[last] = append(documented[last], item)
			}
		}
	}

	// What the tree has: each command of the command table, its own flags
	// and its connection flags apart; any other command (completion's), its
	// local flags.
	own := map[string][]string{}
	for _, c := range commands {
		f := newFlags(c.name)
		c.setup(f)
		var items []string
		var hasLocal, hasRemote bool
		for _, k := range f.connection {
			k.VisitAll(func(fl *pflag.Flag) {
				if strings.HasPrefix(fl.Name, "remote-") {
					hasRemote = true
				} else {
					hasLocal = true
				}
			})
		}
		if hasLocal {
			items = append(items, connectionItem)
		}
		if hasRemote {
			items = append(items, remoteConnectionItem)
		}
		f.VisitAll(func(fl *pflag.Flag) {
			if fl.Deprecated != "" {
				return // hidden from the help; the package doc says it in prose
			}
			if s, ok := f.short[fl.Name]; ok {
				fl.Shorthand = s
			}
			items = append(items, flagName(fl))
		})
		own[c.name] = items
	}
	var tree []string
	walk(newRootCommand(&env{}), func(c *cobra.Command) {
		if c.Hidden || !c.HasParent() || c.HasSubCommands() {
			return
		}
		path := strings.TrimPrefix(c.CommandPath(), "kubepact ")
		items, inTable := own[path]
		if !inTable {
			c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
				if fl.Name != "help" {
					items = append(items, flagName(fl))
				}
			})
		} else {
			// The command has every flag the doc gives it, and no other.
			c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
				if fl.Name == "help" || fl.Deprecated != "" || slices.Contains(items, flagName(fl)) {
					return
				}
				name, isRemote := strings.CutPrefix(fl.Name, "remote-")
				switch {
				case isRemote && remote[name]:
					assert.Contains(t, items, remoteConnectionItem, "%s --%s", path, fl.Name)
				case slices.ContainsFunc(connection, func(s string) bool { return strings.HasSuffix(s, "--"+fl.Name) }):
					assert.Contains(t, items, connectionItem, "%s --%s", path, fl.Name)
				default:
					t.Errorf("%s: --%s is neither its own flag nor a connection flag", path, fl.Name)
				}
			})
		}
		if len(items) == 0 {
			return // help: no flags but its own --help
		}
		tree = append(tree, path)
		assert.ElementsMatch(t, items, documented[path], "the package doc's flags of %s", path)
	})
	slices.Sort(tree)
	slices.Sort(order)
	assert.Equal(t, tree, order, "the package doc lists the flags of every command that has any, and only of those")
}

// TestPackageDocStatusSchema: the package doc's examples of status -o yaml
// and version -o yaml have every field of their schema, and only those.
func TestPackageDocStatusSchema(t *testing.T) {
	t.Parallel()
	doc := packageDoc(t)
	for _, c := range []struct {
		kind   string
		schema reflect.Type
		decode func(t *testing.T, example string)
	}{
		{statusKind, reflect.TypeFor[statusReport](), func(t *testing.T, example string) {
			var report statusReport
			require.NoError(t, yaml.UnmarshalStrict([]byte(example), &report), "the example has the schema's fields only")
			require.Len(t, report.Peers, 1)
		}},
		{versionKind, reflect.TypeFor[versionReport](), func(t *testing.T, example string) {
			var report versionReport
			require.NoError(t, yaml.UnmarshalStrict([]byte(example), &report), "the example has the schema's fields only")
			require.NotNil(t, report.Cluster)
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			var example []string
			for _, b := range codeBlocks(doc) {
				if len(b) > 1 && b[0] == "apiVersion: "+statusAPIVersion && strings.HasPrefix(b[1], "kind: "+c.kind) {
					example = b
				}
			}
			require.NotNil(t, example, "the package doc shows an example of kind %s", c.kind)
			c.decode(t, strings.Join(example, "\n"))
			var missing []string
			var check func(reflect.Type, string)
			check = func(typ reflect.Type, prefix string) {
				for i := range typ.NumField() {
					fld := typ.Field(i)
					name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
					if !regexp.MustCompile(`(?m)^\s*-?\s*` + name + `:|[{ ]` + name + `:`).MatchString(strings.Join(example, "\n")) {
						missing = append(missing, prefix+name)
					}
					ft := fld.Type
					for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct && ft.PkgPath() == typ.PkgPath() {
						check(ft, prefix+name+".")
					}
				}
			}
			check(c.schema, "")
			assert.Empty(t, missing, "fields of the schema the example leaves out")
		})
	}
}

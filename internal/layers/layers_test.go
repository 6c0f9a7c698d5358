package layers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubepact/kubepact/internal/layers"
)

const module = "github.com/kubepact/kubepact"

// TestLayers checks the module's packages against layers.Order, as
// `go list -json` sees them: each package's dependencies (Deps, what
// `go list -deps` walks) and the imports of its own test files.
func TestLayers(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of %s; expected the whole module", len(pkgs), module)
	}
	got, err := layers.Check(layers.Order, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Error(v)
	}
}

// TestLeaves says outright what the layers imply: the adapters and the
// fakes import neither the root package nor anything that composes them.
func TestLeaves(t *testing.T) {
	for _, p := range modulePackages(t) {
		if p.Path != "kube" && p.Path != "fake" {
			continue
		}
		for _, d := range p.Deps {
			if d == "." || d == "wire" || strings.HasPrefix(d, "wire/") || d == "controllers" || strings.HasPrefix(d, "controllers/") {
				t.Errorf("%s depends on %s", p.Path, d)
			}
		}
	}
}

// TestCheck runs Check on made-up graphs, so that it is seen to fail.
func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		pkgs []layers.Package
		want []string
	}{{
		name: "in order",
		pkgs: []layers.Package{
			{Path: "nonce", Deps: []string{"keys", "clusterid"}},
			{Path: "kube", Deps: []string{"nonce", "internal/objwatch"}},
			{Path: ".", Deps: []string{"nonce", "tenant"}},
			{Path: "wire", Deps: []string{".", "kube"}},
			{Path: "wire/memory", Deps: []string{".", "fake", "wire"}},
			{Path: "controllers", Deps: []string{".", "kube"}},
			{Path: "authserver", Deps: []string{"."}},
			{Path: "cmd/kubepact", Deps: []string{"wire", "controllers", "authserver"}},
			{Path: "provider", Deps: []string{"nonce"}},
		},
	}, {
		name: "an adapter importing the root package",
		pkgs: []layers.Package{{Path: "kube", Deps: []string{"nonce", "."}}},
		want: []string{"kube (adapters and fakes) depends on . (provider and consumer), a higher layer"},
	}, {
		name: "a fake importing composition",
		pkgs: []layers.Package{{Path: "fake", Deps: []string{"wire/intercept"}}},
		want: []string{"fake (adapters and fakes) depends on wire/intercept (composition), a higher layer"},
	}, {
		name: "a step importing an adapter",
		pkgs: []layers.Package{{Path: "nonce/noncetest", Deps: []string{"nonce", "fake"}}},
		want: []string{"nonce/noncetest (steps) depends on fake (adapters and fakes), a higher layer"},
	}, {
		name: "the root package importing composition and controllers",
		pkgs: []layers.Package{{Path: ".", Deps: []string{"wire", "controllers"}}},
		want: []string{
			". (provider and consumer) depends on controllers (controllers and authserver), a higher layer",
			". (provider and consumer) depends on wire (composition), a higher layer",
		},
	}, {
		name: "controllers importing a program",
		pkgs: []layers.Package{{Path: "controllers", Deps: []string{"cmd/kubepact"}}},
		want: []string{"controllers (controllers and authserver) depends on cmd/kubepact (programs), a higher layer"},
	}, {
		name: "a package in no layer",
		pkgs: []layers.Package{{Path: "policy", Deps: []string{"nonce"}}, {Path: "wire", Deps: []string{"policy"}}},
		want: []string{"policy is in no layer: place it in layers.Order"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := layers.Check(layers.Order, tt.pkgs)
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, v := range got {
				s = append(s, v.String())
			}
			if diff := cmp.Diff(tt.want, s); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckTwoLayers(t *testing.T) {
	order := []layers.Layer{{Name: "low", Packages: []string{"x/..."}}, {Name: "high", Packages: []string{"x/y"}}}
	if _, err := layers.Check(order, []layers.Package{{Path: "x/y"}}); err == nil {
		t.Fatal("a package in two layers was accepted")
	}
}

// modulePackages lists the module's packages with `go list -json`: each
// one's dependencies in the module (Deps) and the module's packages its own
// test files import (TestImports), as paths relative to the module.
func modulePackages(t *testing.T) []layers.Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps,TestImports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []layers.Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath        string
			Deps, TestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkg := layers.Package{Path: relative(p.ImportPath)}
		for _, d := range append(p.Deps, p.TestImports...) {
			if r := relative(d); r != "" && r != pkg.Path {
				pkg.Deps = append(pkg.Deps, r)
			}
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// relative returns path relative to the module ("." for its root), or ""
// for a package of another module or the standard library.
func relative(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return ""
}

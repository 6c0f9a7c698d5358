// Package layers states the order in which kubepact's packages import each
// other, and checks an import graph against it. Its test runs the check on
// the module as `go list -json` sees it.
//
// The layers, lowest first; a package may import its own layer and those
// below it, never one above:
//
//  1. Steps: the pure steps of the handshake and what follows it (nonce,
//     tenant, csr, identity, kubeconfig, rbac, keys, clusterid,
//     resourceslice, renewal, lifecycle, step, peer, and accept, the provider's
//     decision over them), the shared-token flow's token
//     (authtoken), ServiceAccount identities (saidentity, which imports
//     only steps), their conformance suites (the xxxtest packages), the
//     API types and manifests (apis, config), and the internal helpers
//     they and the tests use that import nothing higher.
//  2. Adapters and fakes: kube (client-go) and fake (in memory), which
//     implement the steps' ports and import nothing that composes them;
//     and the internal test helpers built on kube (attack, liqosteps).
//  3. Provider and consumer: the provider and consumer packages, and the
//     root package, which composes them (Authenticate).
//  4. Composition: wire, which joins adapters to a Provider and a
//     Consumer, wire/memory and wire/intercept.
//  5. Controllers and authserver: the reconcilers, and the token flow's
//     HTTPS server, which issues identities through the root package.
//  6. Programs: cmd, examples and hack/playground.
//
// A package's own test files (package x, not x_test) count as the package:
// they are compiled into it. External tests (package x_test) may import any
// layer, as a program does: they exercise x from above.
//
// Every package of the module must be in exactly one layer, so a new one
// fails the check until it is placed.
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Layer is one layer: its name and the packages in it, as paths relative to
// the module ("." is the module's root package; "x/..." is x and every
// package below it).
type Layer struct {
	Name     string
	Packages []string
}

// Order is kubepact's layer order, lowest first.
var Order = []Layer{
	{Name: "steps", Packages: []string{
		"apis/...", "config/...",
		"clusterid/...", "keys/...", "nonce/...", "tenant/...", "csr/...",
		"identity/...", "kubeconfig/...", "rbac/...", "resourceslice/...",
		"step", "peer", "renewal/...", "lifecycle/...", "accept/...", "enrol/...", "authtoken/...", "saidentity/...",
		"internal/decode", "internal/objwatch", "internal/version",
		"internal/wiretest", "internal/floor", "internal/kustomize",
		"internal/prevbuild", "internal/testcluster", "internal/testkeys",
		"internal/weakkeys", "internal/layers", "internal/testenv",
		"internal/async", "internal/portcheck", "internal/docblocks",
	}},
	{Name: "adapters and fakes", Packages: []string{
		"kube/...", "fake/...", "enrolhttp/...",
		"internal/attack", "internal/liqosteps",
	}},
	{Name: "provider and consumer", Packages: []string{
		".", "provider/...", "consumer/...",
	}},
	{Name: "composition", Packages: []string{
		"wire/...",
	}},
	{Name: "controllers and authserver", Packages: []string{
		"controllers/...", "authserver/...",
	}},
	{Name: "programs", Packages: []string{
		"cmd/...", "examples/...", "hack/playground",
	}},
}

// Package is one package of the graph Check reads: its path relative to the
// module and the module's packages it depends on, directly or not.
type Package struct {
	Path string
	Deps []string
}

// Violation is a package that depends on one of a higher layer, or a
// package no layer holds.
type Violation struct {
	Package, Layer string
	// Dep and DepLayer name the higher package; both are empty when
	// Package is in no layer.
	Dep, DepLayer string
}

func (v Violation) String() string {
	if v.Dep == "" {
		return fmt.Sprintf("%s is in no layer: place it in layers.Order", v.Package)
	}
	return fmt.Sprintf("%s (%s) depends on %s (%s), a higher layer", v.Package, v.Layer, v.Dep, v.DepLayer)
}

// Check returns every violation of order in pkgs, sorted. A dependency on a
// package outside pkgs (the standard library, another module) is not
// checked; one on a package of the module that no layer holds is reported
// once, as that package.
func Check(order []Layer, pkgs []Package) ([]Violation, error) {
	var out []Violation
	for _, p := range pkgs {
		rank, name, err := place(order, p.Path)
		if err != nil {
			return nil, err
		}
		if rank < 0 {
			out = append(out, Violation{Package: p.Path})
			continue
		}
		for _, d := range p.Deps {
			dr, dn, err := place(order, d)
			if err != nil {
				return nil, err
			}
			if dr > rank {
				out = append(out, Violation{Package: p.Path, Layer: name, Dep: d, DepLayer: dn})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// place returns the index and name of the layer holding path, or -1 when
// none does, and an error when more than one does.
func place(order []Layer, path string) (int, string, error) {
	rank, name := -1, ""
	for i, l := range order {
		for _, pattern := range l.Packages {
			if !match(pattern, path) {
				continue
			}
			if rank >= 0 && rank != i {
				return 0, "", fmt.Errorf("%s is in two layers, %s and %s", path, name, l.Name)
			}
			rank, name = i, l.Name
		}
	}
	return rank, name, nil
}

// match reports whether path is pattern, or below it when pattern ends in
// "/...".
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

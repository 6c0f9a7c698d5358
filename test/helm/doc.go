// Package helm tests the chart charts/kubepact with Helm's own Go packages
// (helm.sh/helm/v3), against real control planes: lint, render, schema,
// drift from config/, install on a bare cluster and next to a Liqo-shaped
// release in both orders, upgrade and uninstall, the migration of a
// kustomize install of v0.1.0 to the chart with peerings alive, and the
// kustomize uninstall beside them. It is a module of its own so that kubepact's users
// never inherit Helm's dependencies; go test ./... at the root does not
// enter it.
package helm

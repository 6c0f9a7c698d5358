package helm

import (
	"context"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubepact/kubepact/internal/kustomize"
)

// kustomizeObjects renders the kustomization in dir (relative to the
// repository root, or absolute) as kubectl apply -k does, leaving out its
// Namespace objects: the chart installs into the release's namespace,
// which helm install --create-namespace makes.
func kustomizeObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	objects, err := kustomize.Render(context.Background(), dir)
	require.NoError(t, err)
	for _, u := range objects {
		// kustomize's namespace reaches kinds it does not know to be
		// cluster-scoped (the admission policies); the API server
		// ignores it there, and so does the comparison.
		if clusterScoped[u.GetKind()] {
			u.SetNamespace("")
		}
	}
	return slices.DeleteFunc(objects, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Namespace" })
}

// clusterScoped are the cluster-scoped kinds config/ and the chart ship.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "PriorityClass": true,
}

// overlay writes a kustomization that uses the components (directories
// relative to the repository root) on resources, as an operator's overlay
// does, and returns its directory.
func overlay(t *testing.T, resources, components []string) string {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes no absolute path: each is relative to dir.
	rel := func(dirs []string) []string {
		out := make([]string, len(dirs))
		for i, d := range dirs {
			a, err := filepath.Abs(filepath.Join(root, d))
			require.NoError(t, err)
			out[i], err = filepath.Rel(dir, a)
			require.NoError(t, err)
		}
		return out
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, r := range rel(resources) {
		k += "  - " + r + "\n"
	}
	k += "components:\n"
	for _, c := range rel(components) {
		k += "  - " + c + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644))
	return dir
}

// requireSameObjects fails t unless chart holds each object of config, by
// kind and name, equal to it in everything but labels and annotations
// Helm adds: each label config/ sets (on the object and on a pod
// template) has the same value in the chart, and the rest must be equal,
// field for field: a Deployment's args, env, probes and placement, a
// role's rules, a binding's subjects, an admission policy's expressions.
func requireSameObjects(t *testing.T, config, chart []*unstructured.Unstructured) {
	t.Helper()
	for _, want := range config {
		got := find(chart, want.GetKind(), want.GetName())
		if !assert.NotNil(t, got, "the chart renders %s", objectKey(want)) {
			continue
		}
		w, g := withoutLabels(t, want), withoutLabels(t, got)
		w.stripped, g.stripped = collapseSpaces(w.stripped).(map[string]any), collapseSpaces(g.stripped).(map[string]any)
		if diff := cmp.Diff(w.stripped, g.stripped); diff != "" {
			t.Errorf("%s differs between config/ and the chart (-config/ +chart):\n%s", objectKey(want), diff)
		}
		for where, labels := range w.labels {
			for k, v := range labels {
				assert.Equal(t, v, g.labels[where][k], "%s: label %s of %s", objectKey(want), k, where)
			}
		}
	}
}

// collapseSpaces returns v with every run of white space in its strings
// made one space. A CEL expression means the same either way, and YAML's
// folded scalars (expression: >-) keep or fold line breaks depending on
// indentation, which kustomize's serializer and the chart's source do not
// write alike.
func collapseSpaces(v any) any {
	switch v := v.(type) {
	case string:
		return strings.Join(strings.Fields(v), " ")
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = collapseSpaces(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = collapseSpaces(x)
		}
		return out
	}
	return v
}

// labelled is an object without its labels, and its labels by where they
// were: metadata, or the pod template's metadata.
type labelled struct {
	stripped map[string]any
	labels   map[string]map[string]string
}

func withoutLabels(t *testing.T, u *unstructured.Unstructured) labelled {
	t.Helper()
	c := u.DeepCopy()
	out := labelled{labels: map[string]map[string]string{"metadata": c.GetLabels()}}
	c.SetLabels(nil)
	if tl, found, err := unstructured.NestedStringMap(c.Object, "spec", "template", "metadata", "labels"); err == nil && found {
		out.labels["the pod template"] = tl
		unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "labels")
	}
	out.stripped = c.Object
	return out
}

// keys returns the objects' keys.
func keys(objects []*unstructured.Unstructured) []string {
	out := make([]string, len(objects))
	for i, u := range objects {
		out[i] = objectKey(u)
	}
	slices.Sort(out)
	return out
}

// added returns the objects of with whose key is not among without's.
func added(with, without []*unstructured.Unstructured) []*unstructured.Unstructured {
	have := map[string]bool{}
	for _, u := range without {
		have[objectKey(u)] = true
	}
	return slices.DeleteFunc(slices.Clone(with), func(u *unstructured.Unstructured) bool { return have[objectKey(u)] })
}

// TestNoDriftFromConfig holds the chart to config/: a change to the
// controller's args, its ServiceAccount, a rule of its RBAC, an admission
// policy's expression or binding, or anything else config/ ships, in one
// and not the other, fails here.
//
// With the default values the chart's templates render exactly the objects
// of `kubectl kustomize config/` (the kubepact-system Namespace aside, which
// helm install --create-namespace makes, and the CRDs), each equal to
// config/'s, and crds/ holds config/crd's files byte for byte. Each optional part of
// config/ is compared with the value that turns it on (or off): its
// objects are exactly those the value adds to the chart's rendering, equal
// to the kustomization's.
func TestNoDriftFromConfig(t *testing.T) {
	ch := loadChart(t, chartDir)
	defaults := render(t, ch, nil)
	// The CRDs are the chart's crds/, which Helm installs apart from the
	// templates: compared as files below.
	config := slices.DeleteFunc(kustomizeObjects(t, "config"), func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "CustomResourceDefinition"
	})
	assert.Equal(t, keys(config), keys(defaults), "the objects of config/ and of the chart with its default values")
	requireSameObjects(t, config, defaults)

	// crds/ is config/crd, byte for byte.
	crds := map[string][]byte{}
	for _, c := range ch.CRDObjects() {
		crds[path.Base(c.Filename)] = c.File.Data
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		names = append(names, filepath.Base(f))
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Equal(t, string(b), string(crds[filepath.Base(f)]), "charts/kubepact/crds/%s is config/crd/%[1]s (cp config/crd/*.yaml charts/kubepact/crds/)", filepath.Base(f))
	}
	assert.ElementsMatch(t, names, slices.Collect(maps.Keys(crds)), "the chart's crds/ and config/crd")

	for _, tt := range []struct {
		name string
		// config renders the part as config/ ships it.
		config func(t *testing.T) []*unstructured.Unstructured
		// on turns it on; off, when set, is the rendering without it
		// (default: the default values').
		on, off map[string]any
	}{
		{"token server", func(t *testing.T) []*unstructured.Unstructured { return kustomizeObjects(t, "config/token-server") },
			values("tokenServer.enabled", true), nil},
		{"ServiceAccount issuer", func(t *testing.T) []*unstructured.Unstructured {
			return kustomizeObjects(t, "config/serviceaccount-identity")
		}, values("serviceAccountIssuer.enabled", true), nil},
		{"NetworkPolicy", func(t *testing.T) []*unstructured.Unstructured { return kustomizeObjects(t, "config/network-policy") },
			values("networkPolicy.enabled", true), nil},
		// The component changes the Deployment too: config/controller
		// with it, against the chart with the value.
		{"priority class", func(t *testing.T) []*unstructured.Unstructured {
			return kustomizeObjects(t, overlay(t, []string{"config/controller"}, []string{"config/components/priority-class"}))
		}, values("priorityClass.create", true), nil},
		// On by default: the value removes them.
		{"peer roles", func(t *testing.T) []*unstructured.Unstructured { return kustomizeObjects(t, "config/roles") },
			nil, values("peerRoles.create", false)},
		{"signed-nonce policy", func(t *testing.T) []*unstructured.Unstructured {
			return kustomizeObjects(t, "config/signed-nonce-policy")
		}, nil, values("signedNoncePolicy.enabled", false)},
		{"key policy", func(t *testing.T) []*unstructured.Unstructured {
			return kustomizeObjects(t, "config/key-policy")
		}, nil, values("keyPolicy.enabled", false)},
		{"peering writers", func(t *testing.T) []*unstructured.Unstructured {
			return kustomizeObjects(t, "config/peering-writers")
		}, nil, values("peeringWriters.enabled", false)},
		{"enrolment endpoint", func(t *testing.T) []*unstructured.Unstructured { return kustomizeObjects(t, "config/enrolment") },
			values("enrolment.enabled", true), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.config(t)
			on, off := defaults, defaults
			if tt.on != nil {
				on = render(t, ch, tt.on)
			}
			if tt.off != nil {
				off = render(t, ch, tt.off)
			}
			requireSameObjects(t, want, on)
			// What the value adds is the part's objects: for the
			// priority class, the PriorityClass (the Deployment it
			// patches was compared above).
			part := want
			if tt.name == "priority class" {
				part = added(want, kustomizeObjects(t, "config/controller"))
			}
			assert.Equal(t, keys(part), keys(added(on, off)), "the objects the value adds")
		})
	}
}

package controller_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	image        = "ghcr.io/kubepact/kubepact-controller"
	versionLabel = "app.kubernetes.io/version"
)

// root is the repository root, relative to this package.
var root = filepath.Join("..", "..")

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(b)
}

func version(t *testing.T) string {
	t.Helper()
	v := strings.TrimSpace(read(t, "VERSION"))
	require.Regexp(t, `^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`, v, "VERSION")
	return v
}

// kustomize renders the kustomization in dir with kubectl kustomize, as
// kubectl apply -k does.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "kubectl", "kustomize", filepath.Join(root, dir)).Output()
	if exit, ok := err.(*exec.ExitError); ok {
		t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, exit.Stderr)
	}
	require.NoError(t, err, "kubectl kustomize %s (kubectl must be on PATH)", dir)
	var objects []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		objects = append(objects, u)
	}
	return objects
}

// TestKustomization: the images entry and the version label carry VERSION,
// and the label stays out of selectors.
func TestKustomization(t *testing.T) {
	v := version(t)
	var k struct {
		Images []struct{ Name, NewName, NewTag, Digest string }
		Labels []struct {
			Pairs            map[string]string
			IncludeSelectors bool `json:"includeSelectors"`
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(read(t, "config/controller/kustomization.yaml")), &k))
	require.Len(t, k.Images, 1)
	require.Equal(t, image, k.Images[0].Name)
	require.Empty(t, k.Images[0].NewName)
	require.Equal(t, v, k.Images[0].NewTag, "images newTag, VERSION")
	var labelled bool
	for _, l := range k.Labels {
		if got, ok := l.Pairs[versionLabel]; ok {
			require.Equal(t, v, got, "%s label, VERSION", versionLabel)
			require.False(t, l.IncludeSelectors, "the version label must stay out of selectors")
			labelled = true
		}
	}
	require.True(t, labelled, "no %s label", versionLabel)
}

// TestRendered: as installed, the Deployment runs VERSION's image, every
// object carries the version, and the Deployment's selector does not.
func TestRendered(t *testing.T) {
	v := version(t)
	for _, dir := range []string{"config/controller", "config"} {
		t.Run(dir, func(t *testing.T) {
			var deployments int
			for _, u := range kustomize(t, dir) {
				if u.GetKind() == "CustomResourceDefinition" || strings.HasPrefix(u.GetName(), "liqo-") {
					continue // config/crd's and config/roles' objects are Liqo's schemas and roles
				}
				require.Equal(t, v, u.GetLabels()[versionLabel], "%s %s", u.GetKind(), u.GetName())
				if u.GetKind() != "Deployment" {
					continue
				}
				deployments++
				var d appsv1.Deployment
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
				require.NotContains(t, d.Spec.Selector.MatchLabels, versionLabel)
				require.Equal(t, v, d.Spec.Template.Labels[versionLabel])
				require.Len(t, d.Spec.Template.Spec.Containers, 1)
				require.Equal(t, image+":"+v, d.Spec.Template.Spec.Containers[0].Image)
			}
			require.Equal(t, 1, deployments)
		})
	}
}

// TestNoLatest: no manifest, as written or as rendered, names an image by
// :latest or without a tag.
func TestNoLatest(t *testing.T) {
	err := filepath.WalkDir(filepath.Join(root, "config"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, ":latest") {
				t.Errorf("%s:%d: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var doc any
			if dec.Decode(&doc) != nil {
				break
			}
			for _, ref := range images(doc) {
				require.Regexp(t, `^[^@]+:[^:/@]+$`, ref, "%s: image %q", p, ref)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// images returns the value of every "image" key in doc.
func images(doc any) []string {
	var out []string
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			if s, ok := v.(string); ok && k == "image" {
				out = append(out, s)
			}
			out = append(out, images(v)...)
		}
	case []any:
		for _, v := range d {
			out = append(out, images(v)...)
		}
	}
	return out
}

// TestBuilds: the Dockerfile and hack/image.sh build the same binary the
// same way, with VERSION's version, into the same image.
func TestBuilds(t *testing.T) {
	v := version(t)
	dockerfile := read(t, "Dockerfile")
	args := regexp.MustCompile(`(?m)^ARG VERSION=(.*)$`).FindAllStringSubmatch(dockerfile, -1)
	require.NotEmpty(t, args, "Dockerfile: ARG VERSION=")
	for _, a := range args {
		require.Equal(t, v, a[1], "Dockerfile ARG VERSION, VERSION")
	}
	for _, want := range []string{
		"CGO_ENABLED=0", "go build -trimpath", `-ldflags "-s -w -X main.version=${VERSION}"`, "./cmd/kubepact-controller",
		"org.opencontainers.image.version=$VERSION", "org.opencontainers.image.licenses=Apache-2.0",
		"\nFROM scratch\n", "/kubepact-controller /kubepact-controller\n", "\nUSER 65532:65532\n", `ENTRYPOINT ["/kubepact-controller"]`,
	} {
		require.Contains(t, dockerfile, want, "Dockerfile")
	}

	script := read(t, "hack/image.sh")
	for _, want := range []string{
		`version="$(cat VERSION)"`, `ref="` + image + `:$version"`,
		"CGO_ENABLED=0", "go build -trimpath", `-ldflags "-s -w -X main.version=$version"`, "./cmd/kubepact-controller",
	} {
		require.Contains(t, script, want, "hack/image.sh")
	}
	builder := read(t, "hack/image/main.go")
	for _, want := range []string{
		`Path = "/kubepact-controller"`, `User = "65532:65532"`, `Licenses = "Apache-2.0"`, `Source   = "https://github.com/kubepact/kubepact"`,
	} {
		require.Contains(t, builder, want, "hack/image/main.go")
	}
	require.Contains(t, dockerfile, "org.opencontainers.image.source=https://github.com/kubepact/kubepact")
}

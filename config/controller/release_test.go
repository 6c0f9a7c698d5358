package controller_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/internal/testenv"
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
	return render(t, filepath.Join(root, dir))
}

// render renders the kustomization at path, wherever it is, with kubectl
// kustomize.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "kubectl", "kustomize", dir)
	cmd.Env = testenv.New(t, testenv.Options{Programs: []string{"kubectl"}})
	out, err := cmd.Output()
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

// binaries are the commands the image holds, each at /NAME: the
// controller (the entrypoint), the enrolment endpoint and the CLI (the
// chart's helm test hook runs it).
var binaries = []string{"kubepact-controller", "kubepact-enrolment", "kubepact"}

// TestBuilds: the Dockerfile and hack/image.sh build the same binaries the
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
		"org.opencontainers.image.version=$VERSION", "org.opencontainers.image.licenses=Apache-2.0",
		"\nFROM scratch\n", "\nUSER 65532:65532\n", `ENTRYPOINT ["/kubepact-controller"]`,
	} {
		require.Contains(t, dockerfile, want, "Dockerfile")
	}
	// Each binary is built, stamped and copied alike, and no other.
	const dockerBuild = `RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \` + "\n" +
		`	-ldflags "-s -w -X main.version=${VERSION}" \` + "\n" +
		`	-o /out/%[1]s ./cmd/%[1]s` + "\n"
	var built, copied []string
	for _, m := range regexp.MustCompile(`(?m)^\s*-o /out/(\S+) \./cmd/(\S+)$`).FindAllStringSubmatch(dockerfile, -1) {
		require.Equal(t, m[1], m[2], "Dockerfile: the binary of ./cmd/%s", m[2])
		built = append(built, m[2])
	}
	for _, m := range regexp.MustCompile(`(?m)^COPY --from=build /out/(\S+) (\S+)$`).FindAllStringSubmatch(dockerfile, -1) {
		require.Equal(t, "/"+m[1], m[2], "Dockerfile: where %s is copied", m[1])
		copied = append(copied, m[1])
	}
	require.Equal(t, binaries, built, "Dockerfile: the commands built")
	require.Equal(t, binaries, copied, "Dockerfile: the binaries copied")
	for _, b := range binaries {
		require.Contains(t, dockerfile, fmt.Sprintf(dockerBuild, b), "Dockerfile: how %s is built", b)
	}

	script := read(t, "hack/image.sh")
	for _, want := range []string{
		`version="$(cat VERSION)"`, `ref="` + image + `:$version"`,
		"CGO_ENABLED=0 GOOS=linux GOARCH=\"$arch\" go build -trimpath", `-ldflags "-s -w -X main.version=$version"`,
		// Every binary built is passed to hack/image, each by its flag.
		`-binary "$arch=$work/$arch/kubepact-controller"`, `-enrolment "$arch=$work/$arch/kubepact-enrolment"`,
		`-cli "$arch=$work/$arch/kubepact"`,
	} {
		require.Contains(t, script, want, "hack/image.sh")
	}
	built = nil
	for _, m := range regexp.MustCompile(`(?m)^\s*build "\$arch" \./cmd/(\S+) "\$work/\$arch/(\S+)"$`).FindAllStringSubmatch(script, -1) {
		require.Equal(t, m[1], m[2], "hack/image.sh: the binary of ./cmd/%s", m[1])
		built = append(built, m[1])
	}
	require.Equal(t, binaries, built, "hack/image.sh: the commands built")

	builder := read(t, "hack/image/main.go")
	for _, want := range []string{
		`Path = "/kubepact-controller"`, `EnrolmentPath = "/kubepact-enrolment"`, `CLIPath = "/kubepact"`,
		`User = "65532:65532"`, `Licenses = "Apache-2.0"`, `Source   = "https://github.com/kubepact/kubepact"`,
	} {
		require.Contains(t, builder, want, "hack/image/main.go")
	}
	require.Contains(t, dockerfile, "org.opencontainers.image.source=https://github.com/kubepact/kubepact")
}

// deployment returns the one Deployment among objects.
func deployment(t *testing.T, objects []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var found []*appsv1.Deployment
	for _, u := range objects {
		if u.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d))
			found = append(found, d)
		}
	}
	require.Len(t, found, 1, "Deployments")
	return found[0]
}

// only returns the one object of kind among objects, converted into out.
func only[T any](t *testing.T, objects []*unstructured.Unstructured, kind string, out *T) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, u := range objects {
		if u.GetKind() == kind {
			found = append(found, u)
		}
	}
	require.Len(t, found, 1, "%ss", kind)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, out))
	return found[0]
}

// requireSelectsPods fails unless selector is the Deployment's own selector,
// which selects its pods and only what carries its labels: the same labels,
// no expressions, the version label left out (it changes at every upgrade).
func requireSelectsPods(t *testing.T, d *appsv1.Deployment, selector *metav1.LabelSelector, what string) {
	t.Helper()
	require.NotNil(t, selector, what)
	require.Empty(t, selector.MatchExpressions, what)
	require.Equal(t, d.Spec.Selector.MatchLabels, selector.MatchLabels, "%s: the Deployment's selector", what)
	require.NotContains(t, selector.MatchLabels, versionLabel, what)
	s, err := metav1.LabelSelectorAsSelector(selector)
	require.NoError(t, err, what)
	require.False(t, s.Empty(), "%s selects every pod", what)
	require.True(t, s.Matches(labels.Set(d.Spec.Template.Labels)), "%s: the Deployment's pod labels %v", what, d.Spec.Template.Labels)
}

// metricsPort returns the metrics port of the Deployment's container: its
// https-metrics containerPort, which --metrics-bind-address listens on.
func metricsPort(t *testing.T, d *appsv1.Deployment) int32 {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	var port int32
	for _, p := range c.Ports {
		if p.Name == "https-metrics" {
			port = p.ContainerPort
		}
	}
	require.NotZero(t, port, "the https-metrics containerPort")
	require.Contains(t, c.Args, fmt.Sprintf("--metrics-bind-address=:%d", port))
	return port
}

// TestHighAvailability: as installed, the controller's two replicas have a
// PodDisruptionBudget that lets one of them go and selects exactly their
// pods, prefer different nodes without requiring them, and carry no
// priority class (one the cluster lacks would stop their creation).
func TestHighAvailability(t *testing.T) {
	for _, dir := range []string{"config/controller", "config"} {
		t.Run(dir, func(t *testing.T) {
			objects := kustomize(t, dir)
			d := deployment(t, objects)
			require.Equal(t, int32(2), *d.Spec.Replicas)

			var pdb policyv1.PodDisruptionBudget
			u := only(t, objects, "PodDisruptionBudget", &pdb)
			require.Equal(t, "policy/v1", u.GetAPIVersion())
			require.Equal(t, d.Namespace, pdb.Namespace)
			requireSelectsPods(t, d, pdb.Spec.Selector, "PodDisruptionBudget")
			require.Nil(t, pdb.Spec.MinAvailable)
			require.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)
			require.NotNil(t, pdb.Spec.UnhealthyPodEvictionPolicy)
			require.Equal(t, policyv1.AlwaysAllow, *pdb.Spec.UnhealthyPodEvictionPolicy)

			spec := d.Spec.Template.Spec
			require.Len(t, spec.TopologySpreadConstraints, 1)
			c := spec.TopologySpreadConstraints[0]
			require.Equal(t, "kubernetes.io/hostname", c.TopologyKey)
			require.Equal(t, corev1.ScheduleAnyway, c.WhenUnsatisfiable, "a one-node cluster must still run both replicas")
			require.Equal(t, int32(1), c.MaxSkew)
			require.Equal(t, []string{"pod-template-hash"}, c.MatchLabelKeys)
			requireSelectsPods(t, d, c.LabelSelector, "topology spread constraint")
			require.Nil(t, spec.Affinity)

			require.Empty(t, spec.PriorityClassName)
			require.Nil(t, spec.Priority)
			for _, u := range objects {
				require.NotEqual(t, "PriorityClass", u.GetKind(), u.GetName())
				require.NotEqual(t, "NetworkPolicy", u.GetKind(), u.GetName())
			}
		})
	}
}

// Lines of config/controller/kustomization.yaml that, uncommented, opt in
// to the NetworkPolicy and to the priority class component.
var (
	networkPolicyLines = []string{"  # - ../network-policy\n"}
	priorityClassLines = []string{"# components:\n", "#   - ../components/priority-class\n"}
)

// optIn copies config/ into a temporary directory and there uncomments
// lines of config/controller/kustomization.yaml, as its comments say to opt
// in. It returns the copy's config directory.
func optIn(t *testing.T, lines ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(root, "config"))))
	path := filepath.Join(dir, "controller", "kustomization.yaml")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	k := string(b)
	for _, line := range lines {
		require.Equal(t, 1, strings.Count(k, line), "config/controller/kustomization.yaml: %q", line)
		k = strings.Replace(k, line, strings.Replace(line, "# ", "", 1), 1)
	}
	require.NoError(t, os.WriteFile(path, []byte(k), 0o644))
	return dir
}

// TestPriorityClass: config/components/priority-class, used from an
// operator's own overlay of config/ or config/controller, or added to
// config/controller as its comment says, sets on the Deployment the class
// it ships, which carries the version, and changes nothing else.
func TestPriorityClass(t *testing.T) {
	v := version(t)
	// An overlay next to a copy of config/ (kustomize takes no absolute
	// paths).
	overlay := func(base string) string {
		dir := filepath.Join(filepath.Dir(optIn(t)), "overlay")
		require.NoError(t, os.Mkdir(dir, 0o755))
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + base +
			"\ncomponents:\n  - ../config/components/priority-class\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644))
		return dir
	}
	for name, dir := range map[string]string{
		"overlay of config":            overlay("../config"),
		"overlay of config/controller": overlay("../config/controller"),
		"in config/controller":         filepath.Join(optIn(t, priorityClassLines...), "controller"),
	} {
		t.Run(name, func(t *testing.T) {
			objects := render(t, dir)
			d := deployment(t, objects)
			var pc schedulingv1.PriorityClass
			u := only(t, objects, "PriorityClass", &pc)
			require.Equal(t, "scheduling.k8s.io/v1", u.GetAPIVersion())
			require.Equal(t, pc.Name, d.Spec.Template.Spec.PriorityClassName)
			require.Equal(t, v, pc.Labels[versionLabel])
			require.Equal(t, "kubepact-controller", pc.Labels["app.kubernetes.io/name"])
			require.False(t, pc.GlobalDefault)
			require.Positive(t, pc.Value)
			require.LessOrEqual(t, pc.Value, int32(1_000_000_000), "the highest priority a user-defined class may have")

			// Everything else renders as without the component.
			shipped := kustomize(t, filepath.Join("config", "controller"))
			want := deployment(t, shipped)
			want.Spec.Template.Spec.PriorityClassName = pc.Name
			require.Equal(t, want.Spec, d.Spec)
		})
	}
}

// TestNetworkPolicy: config/network-policy, on its own or listed in
// config/controller as its comment says, admits only ingress to the
// controller's pods on the metrics port, in the controller's namespace, and
// never restricts their egress: the controller reaches its own and its
// peers' API servers.
func TestNetworkPolicy(t *testing.T) {
	v := version(t)
	d := deployment(t, kustomize(t, "config/controller"))
	port := metricsPort(t, d)
	opted := filepath.Join(optIn(t, networkPolicyLines...), "controller")
	for name, dir := range map[string]string{
		"config/network-policy": filepath.Join(root, "config", "network-policy"),
		"in config/controller":  opted,
	} {
		t.Run(name, func(t *testing.T) {
			objects := render(t, dir)
			var np networkingv1.NetworkPolicy
			u := only(t, objects, "NetworkPolicy", &np)
			require.Equal(t, "networking.k8s.io/v1", u.GetAPIVersion())
			require.Equal(t, v, np.Labels[versionLabel])
			require.Equal(t, "kubepact-controller", np.Labels["app.kubernetes.io/name"])
			require.Equal(t, d.Namespace, np.Namespace)
			requireSelectsPods(t, d, &np.Spec.PodSelector, "NetworkPolicy")
			require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes, "ingress only")
			require.Empty(t, np.Spec.Egress)
			require.Len(t, np.Spec.Ingress, 1)
			rule := np.Spec.Ingress[0]
			require.NotEmpty(t, rule.From, "scrapes only from labelled namespaces")
			require.Len(t, rule.Ports, 1)
			require.Equal(t, intstr.FromInt32(port), *rule.Ports[0].Port)
			require.Equal(t, corev1.ProtocolTCP, *rule.Ports[0].Protocol)
			if dir == opted {
				require.Equal(t, d.Spec, deployment(t, objects).Spec)
			}
		})
	}
}

// keepAnnotations are what keeps a CRD, and so every object of it, when
// kubepact is uninstalled or pruned: Helm, Argo CD and Flux each read one.
var keepAnnotations = map[string]string{
	"helm.sh/resource-policy":           "keep",
	"argocd.argoproj.io/sync-options":   "Delete=false,Prune=false",
	"kustomize.toolkit.fluxcd.io/prune": "disabled",
}

// TestPeeringCRDsKept: as config/ installs them, the two peering CRDs
// (whose objects are peering grants) carry the annotations that keep them
// on a Helm uninstall, an Argo CD prune or deletion and a Flux prune;
// Liqo's CRDs, whose metadata is Liqo's, carry none of them.
func TestPeeringCRDsKept(t *testing.T) {
	var peering int
	for _, u := range kustomize(t, "config") {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		a := u.GetAnnotations()
		if strings.HasSuffix(u.GetName(), ".peering.kubepact.io") {
			peering++
			for k, v := range keepAnnotations {
				require.Equal(t, v, a[k], "%s: annotation %s", u.GetName(), k)
			}
			continue
		}
		for k := range keepAnnotations {
			require.NotContains(t, a, k, u.GetName())
		}
	}
	require.Equal(t, 2, peering, "authorizedconsumers and trustedproviders")
}

// TestEnrolmentManifests: config/enrolment, as kubectl apply -k renders it,
// runs the endpoint from the controller's image at VERSION, as its own
// ServiceAccount, with two replicas that prefer different nodes and a
// PodDisruptionBudget that keeps one, restricted like the controller's
// pods, serving HTTPS on 8443 with the Secret kubepact-enrolment-tls
// mounted where its flags read it, behind a Service on 443. Its
// ClusterRole reads AuthorizedConsumers and nothing else, and is bound to
// that ServiceAccount only. It makes no Namespace, and config/ does not
// include it.
func TestEnrolmentManifests(t *testing.T) {
	v := version(t)
	objects := kustomize(t, "config/enrolment")
	for _, u := range objects {
		require.NotEqual(t, "Namespace", u.GetKind(), "config/enrolment makes no Namespace")
		require.Equal(t, v, u.GetLabels()[versionLabel], "%s %s", u.GetKind(), u.GetName())
		require.Equal(t, "kubepact-enrolment", u.GetName(), "%s", u.GetKind())
	}
	for _, u := range kustomize(t, "config") {
		require.NotEqual(t, "kubepact-enrolment", u.GetName(), "config/ includes %s kubepact-enrolment", u.GetKind())
	}

	d := deployment(t, objects)
	require.Equal(t, "kubepact-system", d.Namespace)
	require.Equal(t, int32(2), *d.Spec.Replicas)
	spec := d.Spec.Template.Spec
	require.Equal(t, "kubepact-enrolment", spec.ServiceAccountName)
	require.NotNil(t, spec.AutomountServiceAccountToken)
	require.True(t, *spec.AutomountServiceAccountToken, "the endpoint reads AuthorizedConsumers with its token")
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, spec.SecurityContext.SeccompProfile.Type)
	require.NotNil(t, spec.Affinity)
	require.Nil(t, spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "a one-node cluster still runs both replicas")
	require.Len(t, spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)
	term := spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	require.Equal(t, "kubernetes.io/hostname", term.TopologyKey)
	requireSelectsPods(t, d, term.LabelSelector, "pod anti-affinity")

	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, image+":"+v, c.Image, "the controller's image")
	require.Equal(t, []string{"/kubepact-enrolment"}, c.Command)
	require.Equal(t, []string{
		"--bind-address=:8443",
		"--tls-cert-file=/etc/kubepact-enrolment/tls/tls.crt",
		"--tls-key-file=/etc/kubepact-enrolment/tls/tls.key",
		"--rate=5",
		"--burst=20",
	}, c.Args)
	require.Len(t, c.Ports, 1)
	require.Equal(t, int32(8443), c.Ports[0].ContainerPort)
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, name)
		require.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme, name)
		require.Equal(t, intstr.FromString(c.Ports[0].Name), p.HTTPGet.Port, name)
	}
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.False(t, c.Resources.Requests.Cpu().IsZero())
	require.False(t, c.Resources.Requests.Memory().IsZero())
	require.False(t, c.Resources.Limits.Memory().IsZero())
	require.Len(t, c.VolumeMounts, 1)
	require.Equal(t, "/etc/kubepact-enrolment/tls", c.VolumeMounts[0].MountPath)
	require.True(t, c.VolumeMounts[0].ReadOnly)
	require.Len(t, spec.Volumes, 1)
	require.Equal(t, c.VolumeMounts[0].Name, spec.Volumes[0].Name)
	require.NotNil(t, spec.Volumes[0].Secret)
	require.Equal(t, "kubepact-enrolment-tls", spec.Volumes[0].Secret.SecretName)

	var pdb policyv1.PodDisruptionBudget
	only(t, objects, "PodDisruptionBudget", &pdb)
	require.Equal(t, intstr.FromInt32(1), *pdb.Spec.MinAvailable)
	requireSelectsPods(t, d, pdb.Spec.Selector, "PodDisruptionBudget")

	var svc corev1.Service
	only(t, objects, "Service", &svc)
	require.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector)
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, int32(443), svc.Spec.Ports[0].Port)
	require.Equal(t, intstr.FromString(c.Ports[0].Name), svc.Spec.Ports[0].TargetPort)

	var role rbacv1.ClusterRole
	only(t, objects, "ClusterRole", &role)
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"peering.kubepact.io"}, Resources: []string{"authorizedconsumers"},
		Verbs: []string{"list", "watch"}}}, role.Rules)
	var binding rbacv1.ClusterRoleBinding
	only(t, objects, "ClusterRoleBinding", &binding)
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: spec.ServiceAccountName, Namespace: d.Namespace}}, binding.Subjects)
}

// TestEnrolmentFollowsNamespace: config/enrolment with another namespace
// binds its ClusterRole to the ServiceAccount where it then lives, and the
// Deployment runs there.
func TestEnrolmentFollowsNamespace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "enrolment")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(root, "config", "enrolment"))))
	path := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	k := strings.Replace(string(b), "\nnamespace: kubepact-system\n", "\nnamespace: team-a\n", 1)
	require.NotEqual(t, string(b), k, "config/enrolment/kustomization.yaml sets the namespace")
	require.NoError(t, os.WriteFile(path, []byte(k), 0o644))
	objects := render(t, dir)
	require.Equal(t, "team-a", deployment(t, objects).Namespace)
	var binding rbacv1.ClusterRoleBinding
	only(t, objects, "ClusterRoleBinding", &binding)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-enrolment", Namespace: "team-a"}}, binding.Subjects)
}

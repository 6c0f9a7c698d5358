package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// version is VERSION's content.
func version(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(root + "/VERSION")
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// TestLint: Helm's linter finds neither an error nor a warning, with the
// default values and with every optional part on. (It notes, as
// information, that the chart has no icon.)
func TestLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults": nil,
		"everything": values("priorityClass.create", true, "networkPolicy.enabled", true,
			"tokenServer.enabled", true, "serviceAccountIssuer.enabled", true, "localCA.secretName", "kubepact-ca",
			"podLabels", map[string]any{"team": "platform"}, "podAnnotations", map[string]any{"example.com/note": "x"},
			"imagePullSecrets", []any{map[string]any{"name": "registry-credentials"}},
			"metrics.certSecretName", "kubepact-metrics-cert", "metrics.serviceMonitor.enabled", true,
			"metrics.prometheusServiceAccount.name", "prometheus-k8s", "metrics.prometheusServiceAccount.namespace", "monitoring",
			"helmTest.enabled", true, "helmTest.image.repository", "registry.example/kubepact"),
		"helm test from the controller's image": values("helmTest.enabled", true),
	} {
		t.Run(name, func(t *testing.T) {
			l := lint.All(chartDir, vals, releaseNamespace, false)
			for _, m := range l.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m.Error())
				} else {
					t.Logf("helm lint: %s", m.Error())
				}
			}
		})
	}
}

// TestVersion: the chart's version is VERSION without its "v", its
// appVersion VERSION, and the image it runs by default VERSION's tag, with
// no placeholder.
func TestVersion(t *testing.T) {
	v := version(t)
	ch := loadChart(t, chartDir)
	assert.Equal(t, strings.TrimPrefix(v, "v"), ch.Metadata.Version, "Chart.yaml version")
	assert.Equal(t, v, ch.Metadata.AppVersion, "Chart.yaml appVersion")
	d := deploymentOf(t, render(t, ch, nil))
	assert.Equal(t, "ghcr.io/kubepact/kubepact-controller:"+v, d.Spec.Template.Spec.Containers[0].Image)
	for _, u := range render(t, ch, nil) {
		assert.Equal(t, v, u.GetLabels()["app.kubernetes.io/version"], "%s: app.kubernetes.io/version", objectKey(u))
	}
}

// deploymentOf returns the controller's Deployment among objects.
func deploymentOf(t *testing.T, objects []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := find(objects, "Deployment", controllerName)
	require.NotNil(t, u, "the %s Deployment", controllerName)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return &d
}

// TestTemplateValues renders the chart with a representative set of the
// values operators set, in a namespace of their own, and checks where each
// lands: the controller's args (each value's flag, in order, after
// config/'s), image, replicas, placement, resources, priority class, the
// local CA's Secret mounted read-only, the metrics port, the NetworkPolicy,
// the admission policies following the namespace and keyNamespace, and no
// peer roles when Liqo makes them.
func TestTemplateValues(t *testing.T) {
	ch := loadChart(t, chartDir)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	vals := values(
		"image.repository", "registry.example/kubepact-controller", "image.digest", digest, "image.pullPolicy", "IfNotPresent",
		"replicas", 3,
		"roles", []any{"provider"},
		"clusterID", "cl-platform",
		"apiServerURL", "https://api.platform.example:6443",
		"keyNamespace", "liqo-system",
		"policy", "strict",
		"certificateLifetime", "72h",
		"sliceBounds.maxSlicesPerConsumer", 16, "sliceBounds.rekeyInterval", "12h", "sliceBounds.certificatesPerHour", 1000000,
		"localCA.secretName", "kubepact-ca",
		"extraArgs", []any{"--tenant-namespace-pod-security=privileged"},
		"resources", map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "512Mi"}},
		"nodeSelector", map[string]any{"node-role.kubernetes.io/control-plane": ""},
		"tolerations", []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"arm64"}}}}}}}},
		"priorityClassName", "platform-critical",
		"metrics.port", 9443,
		"networkPolicy.enabled", true,
		"networkPolicy.metricsNamespaceSelector", map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}},
		"peerRoles.create", false,
	)
	const ns = "platform-auth"
	rel, err := renderIn(ch, ns, vals)
	require.NoError(t, err)
	objects := manifestObjects(t, rel.Manifest)
	d := deploymentOf(t, objects)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	assert.Equal(t, []string{
		"--roles=provider", "--leader-elect", "--metrics-bind-address=:9443", "--health-probe-bind-address=:8081", "--zap-encoder=json",
		"--cluster-id=cl-platform", "--api-server-url=https://api.platform.example:6443", "--key-namespace=liqo-system",
		"--policy=strict", "--certificate-lifetime=72h",
		"--max-slices-per-consumer=16", "--slice-rekey-interval=12h", "--slice-certificates-per-hour=1000000",
		"--local-ca-cert-file=/etc/kubepact/local-ca/tls.crt", "--local-ca-key-file=/etc/kubepact/local-ca/tls.key",
		"--tenant-namespace-pod-security=privileged",
	}, c.Args)
	assert.Equal(t, "registry.example/kubepact-controller@"+digest, c.Image)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, ns, d.Namespace)
	assert.Equal(t, map[string]string{"node-role.kubernetes.io/control-plane": ""}, pod.NodeSelector)
	require.Len(t, pod.Tolerations, 1)
	assert.Equal(t, corev1.TaintEffectNoSchedule, pod.Tolerations[0].Effect)
	require.NotNil(t, pod.Affinity)
	require.NotNil(t, pod.Affinity.NodeAffinity)
	assert.Equal(t, "platform-critical", pod.PriorityClassName)
	assert.Equal(t, "512Mi", c.Resources.Limits.Memory().String())
	assert.Equal(t, "100m", c.Resources.Requests.Cpu().String())
	require.Len(t, pod.Volumes, 1)
	assert.Equal(t, "kubepact-ca", pod.Volumes[0].Secret.SecretName)
	require.Len(t, c.VolumeMounts, 1)
	assert.Equal(t, corev1.VolumeMount{Name: pod.Volumes[0].Name, MountPath: "/etc/kubepact/local-ca", ReadOnly: true}, c.VolumeMounts[0])
	require.Len(t, pod.TopologySpreadConstraints, 1, "the replicas still spread across nodes")
	assert.Equal(t, []corev1.ContainerPort{{Name: "https-metrics", ContainerPort: 9443}, {Name: "probes", ContainerPort: 8081}}, c.Ports)

	svc := find(objects, "Service", "kubepact-controller-metrics")
	require.NotNil(t, svc)
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	assert.EqualValues(t, 9443, ports[0].(map[string]any)["port"])
	np := find(objects, "NetworkPolicy", "kubepact-controller-allow-metrics-traffic")
	require.NotNil(t, np, "the NetworkPolicy")
	var policy networkingv1.NetworkPolicy
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(np.Object, &policy))
	tcp, port := corev1.ProtocolTCP, intstr.FromInt32(9443)
	assert.Equal(t, []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Port: &port, Protocol: &tcp}},
	}}, policy.Spec.Ingress, "scrapes from the selected namespaces only, on the metrics port")
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, policy.Spec.PolicyTypes, "ingress only")

	for _, u := range objects {
		assert.False(t, u.GetKind() == "ClusterRole" && strings.HasPrefix(u.GetName(), "liqo-"),
			"no peer role with peerRoles.create=false: %s", objectKey(u))
	}
	// The policies admit the ServiceAccount of the release's namespace and
	// guard keyNamespace.
	user := "'system:serviceaccount:' + '" + ns + "' + ':' + 'kubepact-controller'"
	vap := find(objects, "ValidatingAdmissionPolicy", controllerName)
	require.NotNil(t, vap)
	assert.Equal(t, "request.userInfo.username == "+user, matchCondition(t, vap, "controller-service-account"))
	assert.Equal(t, "'liqo-system'", variable(t, vap, "keyNamespace"))
	pk := find(objects, "ValidatingAdmissionPolicy", "kubepact-cluster-public-key")
	require.NotNil(t, pk)
	assert.Equal(t, "request.userInfo.username != "+user, matchCondition(t, pk, "controller-service-account"))
	assert.True(t, strings.HasPrefix(matchCondition(t, pk, "public-key-record"), "request.namespace == 'liqo-system' &&"))
	sn := find(objects, "ValidatingAdmissionPolicy", "kubepact-signed-nonce")
	require.NotNil(t, sn)
	assert.Equal(t, "request.userInfo.username != "+user, matchCondition(t, sn, "controller-service-account"))
	assert.Equal(t, "request.userInfo.username != 'system:serviceaccount:liqo-system:liqo-controller-manager'", matchCondition(t, sn, "liqo-controller-manager"))
	kp := find(objects, "ValidatingAdmissionPolicy", "kubepact-key-secrets")
	require.NotNil(t, kp)
	assert.Equal(t, "request.userInfo.username != "+user, matchCondition(t, kp, "controller-service-account"))
	assert.Equal(t, "request.userInfo.username != 'system:serviceaccount:liqo-system:liqo-controller-manager'", matchCondition(t, kp, "liqo-controller-manager"))
	assert.True(t, strings.HasPrefix(matchCondition(t, kp, "key-secret"), "request.namespace == 'liqo-system' &&"))
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, u := range objects {
			if u.GetKind() != kind {
				continue
			}
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				assert.Equal(t, ns, s.(map[string]any)["namespace"], "%s: its ServiceAccount's namespace", objectKey(u))
			}
		}
	}
}

// matchCondition returns the expression of the match condition name of
// the admission policy u.
func matchCondition(t *testing.T, u *unstructured.Unstructured, name string) string {
	t.Helper()
	return namedExpression(t, u, "matchConditions", name)
}

// variable returns the expression of the variable name of the admission
// policy u.
func variable(t *testing.T, u *unstructured.Unstructured, name string) string {
	t.Helper()
	return namedExpression(t, u, "variables", name)
}

func namedExpression(t *testing.T, u *unstructured.Unstructured, field, name string) string {
	t.Helper()
	list, _, err := unstructured.NestedSlice(u.Object, "spec", field)
	require.NoError(t, err)
	for _, x := range list {
		m := x.(map[string]any)
		if m["name"] == name {
			return m["expression"].(string)
		}
	}
	t.Fatalf("%s has no %s %s", objectKey(u), field, name)
	return ""
}

// TestSchemaRefuses: an unknown key (a typo, at the top or nested) and a
// value of the wrong type or outside what the flag takes are refused when
// Helm renders the chart, before anything reaches a cluster. Helm reports a
// schema failure as a plain error carrying the validator's text (its
// chartutil.ValidateAgainstSchema joins each chart's messages with
// errors.New), so the test asks the two structured layers beneath it
// instead of reading that text: chartutil.ValidateAgainstSingleSchema, which
// Helm calls for the chart, returns a chartutil.JSONSchemaValidationError
// for the same values, and the schema, compiled by the validator Helm
// uses (santhosh-tekuri/jsonschema/v6), names the keyword that failed
// (kind.AdditionalProperties, kind.Type, ...) and where.
func TestSchemaRefuses(t *testing.T) {
	ch := loadChart(t, chartDir)
	schema := compileSchema(t, ch)
	for _, tt := range []struct {
		name  string
		vals  map[string]any
		where string // the instance location, as /a/b (the values' root: /)
		kind  jsonschema.ErrorKind
	}{
		{"unknown top-level key", values("replica", 3), "/", &kind.AdditionalProperties{}},
		{"unknown nested key", values("metrics.prot", 9443), "/metrics", &kind.AdditionalProperties{}},
		{"unknown key in the image", values("image.tags", "v0.2.0"), "/image", &kind.AdditionalProperties{}},
		{"a string for an integer", values("replicas", "two"), "/replicas", &kind.Type{}},
		{"a string for a boolean", values("peerRoles.create", "false"), "/peerRoles/create", &kind.Type{}},
		{"a list for a string", values("clusterID", []any{"cl-a"}), "/clusterID", &kind.Type{}},
		{"an unknown role", values("roles", []any{"provider", "producer"}), "/roles/1", &kind.Enum{}},
		{"an unknown policy", values("policy", "lenient"), "/policy", &kind.Enum{}},
		{"an unknown step of the cluster key's rotation", values("clusterKeyRotation", "now"), "/clusterKeyRotation", &kind.Enum{}},
		{"no duration", values("certificateLifetime", "7d"), "/certificateLifetime", &kind.Pattern{}},
		{"a key namespace that is no namespace", values("keyNamespace", "liqo' || true || '"), "/keyNamespace", &kind.Pattern{}},
		{"both priority classes", values("priorityClass.create", true, "priorityClassName", "platform-critical"), "/priorityClassName", &kind.MaxLength{}},
		{"no slice at all", values("sliceBounds.maxSlicesPerConsumer", 0), "/sliceBounds/maxSlicesPerConsumer", &kind.Not{}},
		{"a slice bound below -1", values("sliceBounds.maxSlicesPerConsumer", -2), "/sliceBounds/maxSlicesPerConsumer", &kind.Minimum{}},
		{"no certificate an hour", values("sliceBounds.certificatesPerHour", 0), "/sliceBounds/certificatesPerHour", &kind.Not{}},
		{"a string for a rate", values("sliceBounds.certificatesPerHour", "128/h"), "/sliceBounds/certificatesPerHour", &kind.Type{}},
		{"a re-key interval that is no duration", values("sliceBounds.rekeyInterval", "1d"), "/sliceBounds/rekeyInterval", &kind.Pattern{}},
		{"an unknown slice bound", values("sliceBounds.maxSlices", 8), "/sliceBounds", &kind.AdditionalProperties{}},
		{"an unknown toleration key", values("tolerations", []any{map[string]any{"keys": "x"}}), "/tolerations/0", &kind.AdditionalProperties{}},
		// The token server may read and patch its serving Secret: never
		// the cluster key, an identity key or its own token.
		{"the cluster key as the serving Secret", values("tokenServer.tlsSecretName", "authentication-keys"), "/tokenServer/tlsSecretName", &kind.Not{}},
		{"an identity key as the serving Secret", values("tokenServer.tlsSecretName", "kubepact-key-controlplane-cl-a"), "/tokenServer/tlsSecretName", &kind.Not{}},
		{"the token as the serving Secret", values("tokenServer.tlsSecretName", "auth-token"), "/tokenServer/tlsSecretName", &kind.Not{}},
		{"a flag with one dash", values("extraArgs", []any{"-key-namespace=other"}), "/extraArgs/0", &kind.Pattern{}},
		{"a flag and its value in one item", values("extraArgs", []any{"--workers=4", "--key-namespace other"}), "/extraArgs/1", &kind.Not{}},
		{"a flag's value apart", values("extraArgs", []any{"--key-namespace", "other"}), "/extraArgs/0", &kind.Not{}},
		{"a bool flag the chart sets", values("extraArgs", []any{"--leader-elect=false"}), "/extraArgs/0", &kind.Not{}},
		// A peering writer is a ServiceAccount, namespace/name: no user,
		// no group, nothing that would smuggle CEL into the list.
		{"a peering writer without its namespace", values("peeringWriters.serviceAccounts", []any{"argocd-application-controller"}), "/peeringWriters/serviceAccounts/0", &kind.Pattern{}},
		{"a peering writer that is a user", values("peeringWriters.serviceAccounts", []any{"system:serviceaccount:argocd:argocd-application-controller"}), "/peeringWriters/serviceAccounts/0", &kind.Pattern{}},
		{"two peering writers in one item", values("peeringWriters.serviceAccounts", []any{"argocd/a,flux-system/b"}), "/peeringWriters/serviceAccounts/0", &kind.Pattern{}},
		// One enrolment replica: the PodDisruptionBudget (minAvailable 1)
		// would block every drain of its node.
		{"one enrolment replica", values("enrolment.replicas", 1), "/enrolment/replicas", &kind.Minimum{}},
		{"no enrolment rate", values("enrolment.rate", 0), "/enrolment/rate", &kind.ExclusiveMinimum{}},
		{"an unknown enrolment key", values("enrolment.port", 8443), "/enrolment", &kind.AdditionalProperties{}},
		// The helm test hook's tag is the tag of its own image: with none,
		// it runs the controller's image, and a tag there would be ignored.
		{"a helm test tag without its image", values("helmTest.image.tag", "v0.2.0"), "/helmTest/image/repository", &kind.MinLength{}},
		{"a helm test tag that is no tag", values("helmTest.image.repository", "registry.example/kubepact", "helmTest.image.tag", "v0.2.0 --x"), "/helmTest/image/tag", &kind.Pattern{}},
	} {
		t.Run(tt.name, func(t *testing.T) { requireRefused(t, ch, schema, tt.vals, tt.where, tt.kind) })
	}
	// The values as shipped pass, and so do the representative ones.
	for _, vals := range []map[string]any{nil, values("replicas", 1, "roles", []any{"consumer"}, "certificateLifetime", "1h30m",
		"extraArgs", []any{"--workers=4", "--tenant-namespace-pod-security=privileged"}, "tokenServer.enabled", true, "tokenServer.tlsSecretName", "kubepact-auth-tls-2"),
		values("sliceBounds.maxSlicesPerConsumer", -1, "sliceBounds.certificatesPerHour", -1, "sliceBounds.rekeyInterval", "0s")} {
		_, err := renderRelease(ch, vals)
		require.NoError(t, err, "%v", vals)
	}
}

// requireRefused fails t unless Helm refuses to render ch with vals, its
// schema check failing with a chartutil.JSONSchemaValidationError, and the
// schema's failure is one of k at where.
func requireRefused(t *testing.T, ch *chart.Chart, schema *jsonschema.Schema, vals map[string]any, where string, k jsonschema.ErrorKind) {
	t.Helper()
	_, err := renderRelease(ch, vals)
	require.Error(t, err, "Helm renders nothing with %v", vals)

	coalesced, cerr := chartutil.CoalesceValues(ch, vals)
	require.NoError(t, cerr)
	verr := chartutil.ValidateAgainstSingleSchema(coalesced, ch.Schema)
	var schemaErr chartutil.JSONSchemaValidationError
	require.ErrorAs(t, verr, &schemaErr, "Helm's schema check of %v", vals)

	var failed *jsonschema.ValidationError
	require.ErrorAs(t, schema.Validate(asJSON(t, coalesced.AsMap())), &failed)
	leaves := leafErrors(failed)
	found := slices.ContainsFunc(leaves, func(e *jsonschema.ValidationError) bool {
		return "/"+strings.Join(e.InstanceLocation, "/") == where && sameKind(e.ErrorKind, k)
	})
	if !found {
		for _, e := range leaves {
			t.Logf("schema error at /%s: %T %v", strings.Join(e.InstanceLocation, "/"), e.ErrorKind, e.ErrorKind.KeywordPath())
		}
	}
	assert.True(t, found, "a %T at %q", k, where)
	if ak, ok := findKind[*kind.AdditionalProperties](leaves); ok {
		assert.Len(t, ak.Properties, 1, "one unknown key, named: %v", ak.Properties)
	}
}

// TestSchemaRefusesRenderedFlags: extraArgs takes none of the flags the
// chart renders into the controller's args, from a value or fixed, in any
// form the controller's flag package reads: --flag, --flag=v, --flag v in
// one item, and -flag (one dash). Appended after the chart's, one would
// override the value the admission policies (keyNamespace), the probes
// (the probe port) and the replicas' leader election are rendered for. The
// flags are read off the chart's Deployment, with every value that adds
// one set, so a flag the template gains is covered or fails here.
func TestSchemaRefusesRenderedFlags(t *testing.T) {
	ch := loadChart(t, chartDir)
	schema := compileSchema(t, ch)
	var args []string
	for _, vals := range []map[string]any{nil, values("metrics.enabled", false), values(
		"clusterID", "cl-a", "apiServerURL", "https://api.example:6443", "keyNamespace", "liqo-system",
		"policy", "strict", "certificateLifetime", "72h", "localCA.secretName", "kubepact-ca",
		"sliceBounds.maxSlicesPerConsumer", 8, "sliceBounds.rekeyInterval", "1h", "sliceBounds.certificatesPerHour", 16,
		"metrics.certSecretName", "kubepact-metrics-cert", "enrolment.keyRotation", "prepare", "clusterKeyRotation", "switch",
	)} {
		args = append(args, deploymentOf(t, render(t, ch, vals)).Spec.Template.Spec.Containers[0].Args...)
	}
	flags := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		require.True(t, strings.HasPrefix(a, "--"), "the chart renders %q as --flag", a)
		flags[name] = true
	}
	for _, name := range []string{"key-namespace", "cluster-id", "local-ca-key-file", "leader-elect", "max-slices-per-consumer",
		"slice-rekey-interval", "slice-certificates-per-hour", "metrics-cert-dir", "enrolment-key-rotation", "cluster-key-rotation"} {
		require.True(t, flags[name], "the values render --%s: %v", name, slices.Sorted(maps.Keys(flags)))
	}
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		for _, arg := range []string{"--" + name, "--" + name + "=x", "--" + name + " x", "--" + name + "\tx"} {
			t.Run(arg, func(t *testing.T) {
				requireRefused(t, ch, schema, values("extraArgs", []any{"--workers=4", arg}), "/extraArgs/1", &kind.Not{})
			})
		}
		t.Run("-"+name, func(t *testing.T) {
			requireRefused(t, ch, schema, values("extraArgs", []any{"-" + name + "=x"}), "/extraArgs/0", &kind.Pattern{})
		})
	}
}

// compileSchema compiles the chart's values.schema.json as Helm does.
func compileSchema(t *testing.T, ch *chart.Chart) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("file:///values.schema.json", doc))
	s, err := c.Compile("file:///values.schema.json")
	require.NoError(t, err)
	return s
}

// asJSON returns v as the validator reads JSON (numbers as json.Number).
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return out
}

// leafErrors returns the errors of e's tree that have no causes: the
// keywords that failed.
func leafErrors(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leafErrors(c)...)
	}
	return out
}

// sameKind reports whether a and b are failures of the same keyword.
func sameKind(a, b jsonschema.ErrorKind) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }

// findKind returns the first leaf whose kind is K.
func findKind[K jsonschema.ErrorKind](leaves []*jsonschema.ValidationError) (K, bool) {
	for _, e := range leaves {
		if k, ok := e.ErrorKind.(K); ok {
			return k, true
		}
	}
	var zero K
	return zero, false
}

// TestNothingOfLiqos: whatever the values, the chart renders nothing in
// the key namespace (Liqo's: its cluster key and its cluster-ID ConfigMap,
// which the controller records for Liqo's release to adopt) and no
// ConfigMap but its own list of peering writers (kubepact-peering-writers,
// in the release's namespace, which only the chart writes), and with
// peerRoles.create=false none of the peer roles Liqo's release owns.
func TestNothingOfLiqos(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, vals := range []map[string]any{nil,
		values("priorityClass.create", true, "networkPolicy.enabled", true, "tokenServer.enabled", true,
			"serviceAccountIssuer.enabled", true, "localCA.secretName", "kubepact-ca", "peerRoles.create", false),
	} {
		for _, u := range render(t, ch, vals) {
			assert.NotEqual(t, "liqo", u.GetNamespace(), "%s with %v", objectKey(u), vals)
			if u.GetKind() == "ConfigMap" {
				assert.Equal(t, releaseNamespace+"/kubepact-peering-writers", u.GetNamespace()+"/"+u.GetName(), "%s with %v", objectKey(u), vals)
			}
			if vals != nil {
				assert.NotContains(t, []string{"liqo-remote-controlplane", "liqo-virtual-kubelet-remote", "liqo-virtual-kubelet-remote-clusterwide"},
					u.GetName(), "%s with peerRoles.create=false", objectKey(u))
			}
		}
	}
}

package helm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// selectorOf returns the label selector the object of kind and name uses
// to find the controller's pods, read where its kind keeps it.
func selectorOf(t *testing.T, objects []*unstructured.Unstructured, kind, name string) map[string]string {
	t.Helper()
	u := find(objects, kind, name)
	require.NotNil(t, u, "%s %s", kind, name)
	var path []string
	switch kind {
	case "Deployment", "PodDisruptionBudget":
		path = []string{"spec", "selector", "matchLabels"}
	case "Service":
		path = []string{"spec", "selector"}
	case "NetworkPolicy":
		path = []string{"spec", "podSelector", "matchLabels"}
	default:
		t.Fatalf("no selector for %s", kind)
	}
	sel, found, err := unstructured.NestedStringMap(u.Object, path...)
	require.NoError(t, err)
	require.True(t, found, "%s %s has a selector", kind, name)
	return sel
}

// TestPodLabelsAnnotationsPullSecrets: podLabels, podAnnotations and
// imagePullSecrets land on the controller's pods, and the selectors of the
// Deployment, its Service, PodDisruptionBudget and NetworkPolicy stay the
// chart's, still matching the pods. A podLabels entry that sets one of the
// labels the chart puts on the pods (app.kubernetes.io/name, the selector
// the CLI finds the controller by, and the others) is refused: the render
// fails, naming the key, instead of quietly winning or losing.
func TestPodLabelsAnnotationsPullSecrets(t *testing.T) {
	ch := loadChart(t, chartDir)
	base := []any{"networkPolicy.enabled", true}
	defaults := render(t, ch, values(base...))
	objects := render(t, ch, values(append(base,
		"podLabels", map[string]any{"team": "platform", "example.com/cost-center": "42"},
		"podAnnotations", map[string]any{"example.com/scrape-note": "metrics over https", "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
		"imagePullSecrets", []any{map[string]any{"name": "registry-credentials"}},
	)...))
	d := deploymentOf(t, objects)
	pod := d.Spec.Template
	assert.Equal(t, "platform", pod.Labels["team"])
	assert.Equal(t, "42", pod.Labels["example.com/cost-center"])
	assert.Equal(t, map[string]string{"example.com/scrape-note": "metrics over https", "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}, pod.Annotations)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry-credentials"}}, pod.Spec.ImagePullSecrets)
	// The chart's own labels are all still there, with their values.
	for k, v := range deploymentOf(t, defaults).Spec.Template.Labels {
		assert.Equal(t, v, pod.Labels[k], "the pods keep the chart's label %s", k)
	}
	for _, o := range []struct{ kind, name string }{
		{"Deployment", controllerName}, {"Service", "kubepact-controller-metrics"},
		{"PodDisruptionBudget", controllerName}, {"NetworkPolicy", "kubepact-controller-allow-metrics-traffic"},
	} {
		sel := selectorOf(t, objects, o.kind, o.name)
		assert.Equal(t, selectorOf(t, defaults, o.kind, o.name), sel, "%s %s: the selector is the chart's", o.kind, o.name)
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": controllerName}, sel, "%s %s", o.kind, o.name)
		for k, v := range sel {
			assert.Equal(t, v, pod.Labels[k], "%s %s still selects the pods", o.kind, o.name)
		}
	}

	for _, key := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
		"app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
		t.Run(key, func(t *testing.T) {
			_, err := renderRelease(ch, values("podLabels", map[string]any{"team": "platform", key: "other"}))
			require.Error(t, err, "podLabels setting %s", key)
			// Helm's template errors are plain strings: the test reads
			// the sentence the template fails with.
			assert.Contains(t, err.Error(), "podLabels may not set "+key+": the chart sets it on the pods")
		})
	}
}

// TestClearMessages: the values whose refusal the schema could only print
// as a regular expression or as "'allOf' failed" fail, on the path helm
// template and helm install take, with a sentence that says what to set,
// and nothing is rendered.
func TestClearMessages(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, tt := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"an API server URL over http", values("apiServerURL", "http://api:6443"),
			`apiServerURL "http://api:6443" is not an https URL: set it to the URL peers reach this API server at, https://HOST[:PORT][/PATH]`},
		{"an API server URL with no scheme", values("apiServerURL", "api.example.com:6443"),
			`apiServerURL "api.example.com:6443" is not an https URL`},
		{"an API server URL with a query", values("apiServerURL", "https://api.example.com:6443/?x=1"),
			`apiServerURL "https://api.example.com:6443/?x=1" is not an https URL`},
		{"an API server URL with a space", values("apiServerURL", "https://api example"),
			`apiServerURL "https://api example" is not an https URL`},
		{"a NetworkPolicy without metrics", values("networkPolicy.enabled", true, "metrics.enabled", false),
			"networkPolicy.enabled=true needs metrics.enabled=true: the NetworkPolicy admits only metrics scrapes"},
		{"a ServiceMonitor without metrics", values("metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.insecureSkipVerify", true, "metrics.enabled", false),
			"metrics.serviceMonitor.enabled=true needs metrics.enabled=true"},
		{"a ServiceMonitor that cannot trust the certificate", values("metrics.serviceMonitor.enabled", true),
			"metrics.serviceMonitor.enabled=true needs a way for Prometheus to trust the metrics certificate: set metrics.certSecretName"},
		{"a Prometheus ServiceAccount with no namespace", values("metrics.prometheusServiceAccount.name", "prometheus-k8s"),
			`metrics.prometheusServiceAccount.name is "prometheus-k8s" but its namespace is empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rel, err := renderRelease(ch, tt.vals)
			require.Error(t, err, "rendering with %v", tt.vals)
			if rel != nil {
				assert.Empty(t, rel.Manifest, "nothing rendered")
			}
			// Helm returns template failures as plain errors: the test
			// reads the sentence the template fails with.
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "does not match pattern")
			assert.NotContains(t, err.Error(), "allOf")
		})
	}
	for _, url := range []string{"https://api.example.com:6443", "https://10.0.0.1:6443/k8s/clusters/c-1", "https://[fd00::1]:6443"} {
		d := deploymentOf(t, render(t, ch, values("apiServerURL", url)))
		assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--api-server-url="+url)
	}
}

// TestServiceMonitor: off by default (no ServiceMonitor, no binding). On,
// with certSecretName, the controller serves that Secret's certificate
// (--metrics-cert-dir, mounted read-only) and the ServiceMonitor verifies
// it against the Secret's ca.crt as the Service's DNS name; with
// insecureSkipVerify instead, the controller keeps its self-signed one.
// prometheusServiceAccount binds Prometheus' ServiceAccount to the
// metrics-reader ClusterRole. That the ServiceMonitor decodes strictly
// into the Prometheus Operator's type is test/servicemonitor's.
func TestServiceMonitor(t *testing.T) {
	ch := loadChart(t, chartDir)
	defaults := render(t, ch, nil)
	for _, u := range defaults {
		assert.NotEqual(t, "ServiceMonitor", u.GetKind())
		assert.NotEqual(t, "ClusterRoleBinding kubepact-controller-metrics-reader", u.GetKind()+" "+u.GetName())
	}

	objects := render(t, ch, values("metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.labels", map[string]any{"release": "kube-prometheus-stack"},
		"metrics.certSecretName", "kubepact-metrics-cert",
		"metrics.prometheusServiceAccount.name", "prometheus-k8s", "metrics.prometheusServiceAccount.namespace", "monitoring"))
	sm := find(objects, "ServiceMonitor", "kubepact-controller-metrics")
	require.NotNil(t, sm)
	assert.Equal(t, releaseNamespace, sm.GetNamespace())
	assert.Equal(t, "kube-prometheus-stack", sm.GetLabels()["release"])
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.Len(t, eps, 1)
	ep := eps[0].(map[string]any)
	assert.Equal(t, "https-metrics", ep["port"])
	tls := ep["tlsConfig"].(map[string]any)
	assert.Equal(t, "kubepact-controller-metrics."+releaseNamespace+".svc", tls["serverName"])
	assert.Equal(t, map[string]any{"secret": map[string]any{"name": "kubepact-metrics-cert", "key": "ca.crt"}}, tls["ca"])
	assert.NotContains(t, tls, "insecureSkipVerify")
	d := deploymentOf(t, objects)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--metrics-cert-dir=/etc/kubepact/metrics-cert")
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "metrics-cert", MountPath: "/etc/kubepact/metrics-cert", ReadOnly: true})
	assert.Contains(t, d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "metrics-cert",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "kubepact-metrics-cert"}}})
	// The Service the ServiceMonitor selects by these labels carries them.
	svc := find(objects, "Service", "kubepact-controller-metrics")
	require.NotNil(t, svc)
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		assert.Equal(t, v, svc.GetLabels()[k], "the ServiceMonitor selects the metrics Service by %s", k)
	}
	crb := find(objects, "ClusterRoleBinding", "kubepact-controller-metrics-reader")
	require.NotNil(t, crb)
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}, subjects)
	role, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name")
	assert.Equal(t, "kubepact-controller-metrics-reader", role)

	insecure := render(t, ch, values("metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.insecureSkipVerify", true))
	sm = find(insecure, "ServiceMonitor", "kubepact-controller-metrics")
	require.NotNil(t, sm)
	eps, _, _ = unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	assert.Equal(t, map[string]any{"insecureSkipVerify": true}, eps[0].(map[string]any)["tlsConfig"])
	assert.NotContains(t, deploymentOf(t, insecure).Spec.Template.Spec.Containers[0].Args, "--metrics-cert-dir=/etc/kubepact/metrics-cert")
}

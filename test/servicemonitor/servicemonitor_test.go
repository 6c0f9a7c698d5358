// Package servicemonitor holds the chart's ServiceMonitor to the Prometheus
// Operator's own Go type. It is a module of its own, so that neither
// kubepact's go.mod nor test/helm's inherit the Prometheus Operator's
// dependencies.
package servicemonitor

import (
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// render renders charts/kubepact with vals as helm template does, in the
// namespace kubepact-system, and returns its ServiceMonitors' YAML.
func render(t *testing.T, vals map[string]any) []string {
	t.Helper()
	ch, err := loader.Load(filepath.Join("..", "..", "charts", "kubepact"))
	require.NoError(t, err)
	i := action.NewInstall(&action.Configuration{})
	i.DryRun, i.ClientOnly, i.Replace = true, true, true
	i.ReleaseName, i.Namespace = "kubepact", "kubepact-system"
	rel, err := i.Run(ch, vals)
	require.NoError(t, err)
	var out []string
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(m), &head))
		if head.Kind == monitoringv1.ServiceMonitorsKind {
			out = append(out, m)
		}
	}
	return out
}

// TestServiceMonitorDecodesStrictly: with metrics.serviceMonitor.enabled,
// the chart renders one ServiceMonitor that decodes into the Prometheus
// Operator's monitoringv1.ServiceMonitor with no unknown field, scraping
// the metrics Service's https-metrics port over HTTPS with Prometheus'
// ServiceAccount token, trusting the certificate as the values say. With
// the default values there is none.
func TestServiceMonitorDecodesStrictly(t *testing.T) {
	assert.Empty(t, render(t, nil), "no ServiceMonitor by default")

	for _, tt := range []struct {
		name  string
		vals  map[string]any
		check func(t *testing.T, tls *monitoringv1.TLSConfig)
	}{
		{"certificate Secret", map[string]any{"metrics": map[string]any{
			"certSecretName": "kubepact-metrics-cert",
			"serviceMonitor": map[string]any{"enabled": true, "interval": "30s", "scrapeTimeout": "10s", "labels": map[string]any{"release": "kube-prometheus-stack"}},
		}}, func(t *testing.T, tls *monitoringv1.TLSConfig) {
			require.NotNil(t, tls.CA.Secret)
			assert.Equal(t, "kubepact-metrics-cert", tls.CA.Secret.Name)
			assert.Equal(t, "ca.crt", tls.CA.Secret.Key)
			require.NotNil(t, tls.ServerName)
			assert.Equal(t, "kubepact-controller-metrics.kubepact-system.svc", *tls.ServerName)
			assert.Nil(t, tls.InsecureSkipVerify)
		}},
		{"insecureSkipVerify", map[string]any{"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": true, "insecureSkipVerify": true},
		}}, func(t *testing.T, tls *monitoringv1.TLSConfig) {
			require.NotNil(t, tls.InsecureSkipVerify)
			assert.True(t, *tls.InsecureSkipVerify)
			assert.Nil(t, tls.CA.Secret)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			docs := render(t, tt.vals)
			require.Len(t, docs, 1)
			var sm monitoringv1.ServiceMonitor
			require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &sm), "%s", docs[0])
			assert.Equal(t, monitoringv1.SchemeGroupVersion.String(), sm.APIVersion)
			assert.Equal(t, monitoringv1.ServiceMonitorsKind, sm.Kind)
			assert.Equal(t, "kubepact-controller-metrics", sm.Name)
			assert.Equal(t, "kubepact-system", sm.Namespace)
			assert.Equal(t, "kubepact-controller", sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"])
			assert.Equal(t, []string{"kubepact-system"}, sm.Spec.NamespaceSelector.MatchNames)
			require.Len(t, sm.Spec.Endpoints, 1)
			ep := sm.Spec.Endpoints[0]
			assert.Equal(t, "https-metrics", ep.Port)
			require.NotNil(t, ep.Scheme)
			assert.Equal(t, "https", ep.Scheme.String())
			assert.Equal(t, "/metrics", ep.Path)
			assert.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", ep.BearerTokenFile)
			require.NotNil(t, ep.TLSConfig)
			tt.check(t, ep.TLSConfig)
		})
	}
}

package controllers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestMetricSet checks kubepact's metrics as a scraper sees them: their
// names and label names, the counters present at zero from startup for
// every label value the reconcilers use, and promlint's conventions.
func TestMetricSet(t *testing.T) {
	t.Parallel()
	m := newMetricSet()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.register(reg))
	m.setBuildInfo("v1.2.3")

	families, err := reg.Gather()
	require.NoError(t, err)
	labels := map[string][]string{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			var names []string
			for _, l := range metric.GetLabel() {
				names = append(names, l.GetName())
			}
			labels[f.GetName()] = names
		}
	}
	require.Equal(t, map[string][]string{
		metricHandshakes:        {"flow", "reason", "result"},
		metricHandshakeDuration: {"flow"},
		metricRenewals:          {"result", "role"},
		metricTenantTransitions: {"condition"},
		metricBuildInfo:         {"version"},
	}, labels, "the series present before anything happened (the gauges of certificates and the errors come with them)")

	n := 0
	for flow, results := range handshakeReasons() {
		require.Contains(t, []string{flowTenant, flowResourceSlice, flowIdentity}, flow)
		for result, reasons := range results {
			require.Contains(t, []string{resultAccepted, resultRefused, resultFailed}, result)
			for _, reason := range reasons {
				require.Zero(t, testutil.ToFloat64(m.handshakes.WithLabelValues(flow, result, reason)))
				n++
			}
		}
	}
	require.Equal(t, n, testutil.CollectAndCount(m.handshakes), "one series per flow, result and reason")
	require.Equal(t, 6, testutil.CollectAndCount(m.renewals))
	require.Equal(t, 3, testutil.CollectAndCount(m.transitions))
	require.Equal(t, 1.0, testutil.ToFloat64(m.buildInfo.WithLabelValues("v1.2.3")))

	for _, c := range m.collectors() {
		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		require.Empty(t, problems)
	}
}

// TestMetricUpdates checks what the reconcilers' calls do to the series.
func TestMetricUpdates(t *testing.T) {
	t.Parallel()
	m := newMetricSet()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

	m.accepted(flowTenant, contract.ReasonTenantAccepted, now.Add(-3*time.Second), now)
	require.Equal(t, 1.0, testutil.ToFloat64(m.handshakes.WithLabelValues(flowTenant, resultAccepted, contract.ReasonTenantAccepted)))
	require.Equal(t, 3, testutil.CollectAndCount(m.handshakeDuration), "one histogram per flow")

	chain := selfSigned(t, now, 30*time.Hour)
	m.expires(roleProvider, "cl-a", controlPlaneIdentity, chain)
	m.expires(roleProvider, "cl-a", "slice-1", chain)
	m.expires(roleProvider, "cl-b", controlPlaneIdentity, chain)
	m.expires(roleProvider, "cl-c", controlPlaneIdentity, []byte("not a certificate"))
	require.Equal(t, float64(now.Add(30*time.Hour).Unix()), testutil.ToFloat64(m.expiration.WithLabelValues(roleProvider, "cl-a", controlPlaneIdentity)))
	require.Equal(t, 3, testutil.CollectAndCount(m.expiration))
	m.forget(roleProvider, "cl-a", "slice-1")
	require.Equal(t, 2, testutil.CollectAndCount(m.expiration))
	m.forget(roleProvider, "cl-a", "")
	require.Equal(t, 1, testutil.CollectAndCount(m.expiration), "cl-b's stays")

	cause := errors.New("boom")
	require.NoError(t, m.failed(context.Background(), tenantControllerName, contract.ReasonCSRDenied, cause, false), "not retried: logged, not returned")
	err := m.failed(context.Background(), tenantControllerName, contract.ReasonAcceptFailed, cause, true)
	require.ErrorIs(t, err, cause)
	require.Equal(t, "AcceptFailed: boom", err.Error())
	require.Equal(t, 1.0, testutil.ToFloat64(m.reconcileErrors.WithLabelValues(tenantControllerName, contract.ReasonCSRDenied)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.reconcileErrors.WithLabelValues(tenantControllerName, contract.ReasonAcceptFailed)))
}

// TestRegisterMetrics checks that registering on controller-runtime's
// registry is idempotent.
func TestRegisterMetrics(t *testing.T) {
	require.NoError(t, RegisterMetrics())
	require.NoError(t, RegisterMetrics())
	SetBuildInfo("test")
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{metricHandshakes, metricHandshakeDuration, metricRenewals, metricTenantTransitions, metricBuildInfo} {
		require.True(t, slices.Contains(names, want), want)
	}
}

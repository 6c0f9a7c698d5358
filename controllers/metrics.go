package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
)

// Names of kubepact's metrics, served by the manager's metrics endpoint
// (controller-runtime's metrics.Registry) beside controller-runtime's own.
const (
	// metricHandshakes counts handshake decisions: {flow, result, reason}.
	metricHandshakes = "kubepact_handshakes_total"
	// metricHandshakeDuration observes, per flow, the seconds from an
	// object's creation (metadata.creationTimestamp, one-second resolution)
	// to its first acceptance: {flow}.
	metricHandshakeDuration = "kubepact_handshake_duration_seconds"
	// metricCertificateExpiration is the NotAfter, in Unix seconds, of every
	// certificate the provider issued and every certificate the consumer
	// holds in a kubeconfig Secret: {role, peer, identity}.
	metricCertificateExpiration = "kubepact_certificate_expiration_timestamp_seconds"
	// metricRenewals counts certificate renewals: {role, result}.
	metricRenewals = "kubepact_renewals_total"
	// metricTenantTransitions counts changes of a Tenant's
	// spec.tenantCondition the provider enforced: {condition}.
	metricTenantTransitions = "kubepact_tenant_transitions_total"
	// metricReconcileErrors counts every failure a reconciler records,
	// retried or not: {controller, reason}.
	metricReconcileErrors = "kubepact_reconcile_errors_total"
	// metricBuildInfo is 1, labelled with the controller's version: {version}.
	metricBuildInfo = "kubepact_build_info"
)

// Values of the flow label of metricHandshakes and metricHandshakeDuration.
const (
	// flowTenant: the provider judges a Tenant (Provider.Accept).
	flowTenant = "tenant"
	// flowResourceSlice: the provider judges a ResourceSlice's
	// authentication (Provider.AcceptSlice).
	flowResourceSlice = "resourceslice"
	// flowIdentity: the consumer applies an Identity, a ControlPlane one or
	// a ResourceSlice's, into a kubeconfig Secret.
	flowIdentity = "identity"
)

// Values of the result label of metricHandshakes and metricRenewals.
const (
	// resultAccepted: the object was accepted (handshakes).
	resultAccepted = "accepted"
	// resultRenewed: a certificate was renewed (renewals).
	resultRenewed = "renewed"
	// resultRefused: the object itself was refused; retrying it cannot help.
	resultRefused = "refused"
	// resultFailed: the step failed for another reason, such as an API
	// error; it is retried.
	resultFailed = "failed"
)

// Values of the role label of metricCertificateExpiration and
// metricRenewals.
const (
	roleProvider = "provider"
	roleConsumer = "consumer"
)

// controlPlaneIdentity is the identity label of metricCertificateExpiration
// for the certificate a provider issued for a Tenant (its consumer's
// ControlPlane identity); a ResourceSlice's certificate is labelled with
// the slice's name.
const controlPlaneIdentity = "ControlPlane"

// refusalReasons are the reasons reasonOf finds terminal.
var refusalReasons = []string{
	contract.ReasonInvalidTenant, contract.ReasonNonceNotFound, contract.ReasonNonceRedeemed, contract.ReasonNonceExpired, contract.ReasonInvalidSignature,
	contract.ReasonTranscriptRejected, contract.ReasonCSRRejected, contract.ReasonCSRDenied, contract.ReasonPrivilegedUser, contract.ReasonConsumerPrivileged,
	contract.ReasonIdentityHeld, contract.ReasonConsumerRevoked, contract.ReasonTenantDrained, contract.ReasonTransitionRefused,
}

// handshakeReasons returns, for every flow and result, the reasons the
// reconcilers count it with: the series present from startup.
func handshakeReasons() map[string]map[string][]string {
	return map[string]map[string][]string{
		flowTenant: {
			resultAccepted: {contract.ReasonTenantAccepted},
			resultRefused:  refusalReasons,
			resultFailed:   {contract.ReasonAcceptFailed, contract.ReasonPeerRoleMissing, contract.ReasonSigningFailed},
		},
		flowResourceSlice: {
			resultAccepted: {contract.ReasonSliceAccepted, contract.ReasonSliceResourcesDenied},
			resultRefused:  append([]string{contract.ReasonSliceDenied}, refusalReasons...),
			resultFailed:   {contract.ReasonSliceFailed, contract.ReasonPeerRoleMissing, contract.ReasonSigningFailed},
		},
		flowIdentity: {
			resultAccepted: {contract.ReasonIdentityApplied, contract.ReasonSliceIdentityApplied},
			resultRefused:  {contract.ReasonInvalidIdentity, contract.ReasonIdentityRejected, contract.ReasonSliceIdentityRejected, contract.ReasonSliceDenied, contract.ReasonInvalidSlice},
			resultFailed:   {contract.ReasonApplyFailed, contract.ReasonSliceFailed},
		},
	}
}

// metricSet holds kubepact's collectors.
type metricSet struct {
	handshakes        *prometheus.CounterVec
	handshakeDuration *prometheus.HistogramVec
	expiration        *prometheus.GaugeVec
	renewals          *prometheus.CounterVec
	transitions       *prometheus.CounterVec
	reconcileErrors   *prometheus.CounterVec
	buildInfo         *prometheus.GaugeVec
}

// newMetricSet returns kubepact's collectors, every counter initialised to
// zero for each value its labels take, so that rate() and absent() work
// from startup.
func newMetricSet() *metricSet {
	m := &metricSet{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricHandshakes,
			Help: "Handshake decisions by flow (tenant, resourceslice, identity), result (accepted, refused, failed) and Event reason."},
			[]string{"flow", "result", "reason"}),
		handshakeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricHandshakeDuration,
			Help:    "Seconds from an object's creation to its first acceptance, by flow.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)},
			[]string{"flow"}),
		expiration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricCertificateExpiration,
			Help: "NotAfter, in Unix seconds, of each certificate the provider issued (role=provider, peer=consumer ID) or the consumer holds in a kubeconfig Secret (role=consumer, peer=provider ID)."},
			[]string{"role", "peer", "identity"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricRenewals,
			Help: "Certificate renewals by role (provider: re-signed or answered a Renew; consumer: switched its kubeconfig) and result (renewed, refused, failed)."},
			[]string{"role", "result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricTenantTransitions,
			Help: "Changes of a Tenant's spec.tenantCondition the provider enforced, by the condition entered (Active, Cordoned, Drained)."},
			[]string{"condition"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricReconcileErrors,
			Help: "Failures the reconcilers recorded (each also an Event and a log line), retried or not, by controller and reason."},
			[]string{"controller", "reason"}),
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricBuildInfo,
			Help: "Always 1, labelled with the controller's version."},
			[]string{"version"}),
	}
	for flow, results := range handshakeReasons() {
		m.handshakeDuration.WithLabelValues(flow)
		for result, reasons := range results {
			for _, reason := range reasons {
				m.handshakes.WithLabelValues(flow, result, reason)
			}
		}
	}
	for _, role := range []string{roleProvider, roleConsumer} {
		for _, result := range []string{resultRenewed, resultRefused, resultFailed} {
			m.renewals.WithLabelValues(role, result)
		}
	}
	for _, c := range []string{"Active", "Cordoned", "Drained"} {
		m.transitions.WithLabelValues(c)
	}
	return m
}

func (m *metricSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.handshakes, m.handshakeDuration, m.expiration, m.renewals, m.transitions, m.reconcileErrors, m.buildInfo}
}

// register registers m's collectors on reg.
func (m *metricSet) register(reg prometheus.Registerer) error {
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("controllers: registering metrics: %w", err)
		}
	}
	return nil
}

// metrics are the collectors the reconcilers of this process update. They
// are registered on controller-runtime's metrics.Registry once, by
// RegisterMetrics, which SetupProvider and SetupConsumer call.
var (
	metrics         = newMetricSet()
	registerOnce    sync.Once
	errRegistration error
)

// RegisterMetrics registers kubepact's metrics on controller-runtime's
// metrics.Registry, which a manager's metrics endpoint serves. Only the
// first call registers; later calls return its result. SetupProvider and
// SetupConsumer call it.
func RegisterMetrics() error {
	registerOnce.Do(func() { errRegistration = metrics.register(ctrlmetrics.Registry) })
	return errRegistration
}

// SetBuildInfo sets kubepact_build_info{version} to 1, and registers
// kubepact's metrics (RegisterMetrics): should that fail, SetupProvider and
// SetupConsumer return the error.
func SetBuildInfo(version string) {
	_ = RegisterMetrics()
	metrics.setBuildInfo(version)
}

func (m *metricSet) setBuildInfo(version string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version).Set(1)
}

// handshake counts a decision of flow.
func (m *metricSet) handshake(flow, result, reason string) {
	m.handshakes.WithLabelValues(flow, result, reason).Inc()
}

// accepted counts the first acceptance of an object of flow created at
// created, and observes how long it took.
func (m *metricSet) accepted(flow, reason string, created, now time.Time) {
	m.handshake(flow, resultAccepted, reason)
	if !created.IsZero() {
		m.handshakeDuration.WithLabelValues(flow).Observe(max(now.Sub(created).Seconds(), 0))
	}
}

// renewal counts a renewal of role.
func (m *metricSet) renewal(role, result string) {
	m.renewals.WithLabelValues(role, result).Inc()
}

// expires sets the expiration gauge of a certificate from its PEM chain;
// a chain that does not parse leaves the gauge as it is.
func (m *metricSet) expires(role, peer, identity string, chain []byte) {
	cert, err := csr.ParseCertificate(chain)
	if err != nil {
		return
	}
	m.expiration.WithLabelValues(role, peer, identity).Set(float64(cert.NotAfter.Unix()))
}

// forget deletes the expiration gauges of role and peer, of one identity
// or, when identity is empty, of all.
func (m *metricSet) forget(role, peer, identity string) {
	labels := prometheus.Labels{"role": role, "peer": peer}
	if identity != "" {
		labels["identity"] = identity
	}
	m.expiration.DeletePartialMatch(labels)
}

// failed records a failure of controller, with its Event reason, once: it
// counts it in kubepact_reconcile_errors_total and, when retried is false
// (the reconciler returns no error: the object is refused, or waits for
// time), logs it as one structured line with its reason and returns nil.
// When retried is true it returns err wrapped with its reason, for the
// reconciler to return: controller-runtime logs that one line, counts it in
// controller_runtime_reconcile_errors_total and retries with backoff.
// Errors carry no secrets (they go into Events too).
func (m *metricSet) failed(ctx context.Context, controller, reason string, err error, retried bool) error {
	m.reconcileErrors.WithLabelValues(controller, reason).Inc()
	if retried {
		return &reasonError{reason: reason, err: err}
	}
	log.FromContext(ctx).Error(err, "Reconcile failed", "reason", reason)
	return nil
}

// reasonError is an error a reconciler returns, prefixed with its Event
// reason.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/controllers/contract"
)

// TestCurrentWarning: a Warning is shown only while no later Normal Event
// about the same object supersedes it.
func TestCurrentWarning(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(base.Add(d)) }
	obj := objectRef{Kind: authv1beta1.TenantKind, Namespace: "ns", Name: "cl-c"}
	const uid = types.UID("uid-now")
	ev := func(typ, reason string, when metav1.MicroTime) eventsv1.Event {
		return eventsv1.Event{
			Type: typ, Reason: reason, Note: reason + " note", EventTime: when,
			Regarding: corev1.ObjectReference{Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: uid},
		}
	}
	other := func(e eventsv1.Event, change func(*corev1.ObjectReference)) eventsv1.Event {
		change(&e.Regarding)
		return e
	}
	series := func(e eventsv1.Event, last metav1.MicroTime) eventsv1.Event {
		e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: last}
		return e
	}
	core := func(e eventsv1.Event, last time.Time) eventsv1.Event {
		// As the events.k8s.io API shows an Event written through core/v1.
		e.EventTime = metav1.MicroTime{}
		e.CreationTimestamp = metav1.NewTime(base)
		e.DeprecatedLastTimestamp = metav1.NewTime(last)
		return e
	}
	for _, tc := range []struct {
		name   string
		events []eventsv1.Event
		want   string // reason, "" for none
	}{
		{"none", nil, ""},
		{"a warning", []eventsv1.Event{ev("Warning", "PeerRoleMissing", at(0))}, "PeerRoleMissing"},
		{"superseded by a later Normal", []eventsv1.Event{ev("Warning", "PeerRoleMissing", at(0)), ev("Normal", "TenantAccepted", at(time.Second))}, ""},
		{"a Normal before it supersedes nothing", []eventsv1.Event{ev("Normal", "TenantAccepted", at(0)), ev("Warning", "InvalidCSR", at(time.Second))}, "InvalidCSR"},
		{"a Normal at the same time supersedes nothing", []eventsv1.Event{ev("Warning", "InvalidCSR", at(0)), ev("Normal", "TenantAccepted", at(0))}, "InvalidCSR"},
		{"the newest warning", []eventsv1.Event{
			ev("Warning", "InvalidCSR", at(2*time.Second)), ev("Normal", "CertificatePending", at(time.Second)), ev("Warning", "PeerRoleMissing", at(0)),
		}, "InvalidCSR"},
		{"a warning seen again after the Normal", []eventsv1.Event{
			series(ev("Warning", "PeerRoleMissing", at(0)), at(3*time.Second)), ev("Normal", "TenantAccepted", at(time.Second)),
		}, "PeerRoleMissing"},
		{"a core/v1 warning seen again after the Normal", []eventsv1.Event{
			core(ev("Warning", "PeerRoleMissing", at(0)), base.Add(3*time.Second)), ev("Normal", "TenantAccepted", at(time.Second)),
		}, "PeerRoleMissing"},
		{"a Normal about another object supersedes nothing", []eventsv1.Event{
			ev("Warning", "PeerRoleMissing", at(0)),
			other(ev("Normal", "TenantAccepted", at(time.Second)), func(r *corev1.ObjectReference) { r.Name = "cl-other" }),
			other(ev("Normal", "IdentityApplied", at(time.Second)), func(r *corev1.ObjectReference) { r.Kind = authv1beta1.IdentityKind }),
		}, "PeerRoleMissing"},
		{"a warning about an earlier object of the same name is not this one's", []eventsv1.Event{
			other(ev("Warning", "ConsumerRevoked", at(time.Second)), func(r *corev1.ObjectReference) { r.UID = "uid-before" }),
		}, ""},
		{"an Event that names no UID is about the object of its name", []eventsv1.Event{
			other(ev("Warning", "InvalidSignature", at(0)), func(r *corev1.ObjectReference) { r.UID = "" }),
		}, "InvalidSignature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := currentWarning(tc.events, obj, uid)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Reason)
			assert.Equal(t, tc.want+" note", got.Message)
		})
	}
}

// TestStatusOutput: on a real cluster, status -o json|yaml|jsonpath print
// the documented schema, with a Warning only while no later Normal Event
// supersedes it, and the table cuts what -o json prints whole.
func TestStatusOutput(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	peer := unique("cl-status")
	ns := unique("kubepact-status")
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = providerEnv.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	// An Active Tenant: accepted, with a certificate.
	tenant := &authv1beta1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: peer},
		Spec:       authv1beta1.TenantSpec{ClusterID: peer},
	}
	require.NoError(t, providerEnv.typed.Create(ctx, tenant))
	notAfter := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	tenant.Status.AuthParams = &authv1beta1.AuthParams{SignedCRT: selfSigned(t, notAfter), APIServer: "https://provider.example"}
	require.NoError(t, providerEnv.typed.Status().Update(ctx, tenant))

	now := time.Now()
	record := func(typ, reason, note string, when time.Time) {
		t.Helper()
		_, err := providerEnv.client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{GenerateName: peer + "-"},
			EventTime:  metav1.NewMicroTime(when), ReportingController: "kubepact.io/status-test", ReportingInstance: "status-test",
			Action: "Accept", Type: typ, Reason: reason, Note: note,
			Regarding: corev1.ObjectReference{
				APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind,
				Namespace: ns, Name: peer, UID: tenant.UID,
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	status := func(args ...string) string {
		t.Helper()
		r, err := cliErr(t, nil, append([]string{"status", "--kubeconfig", providerEnv.kubeconfig}, args...)...)
		require.NoError(t, err, r.stderr)
		return r.stdout
	}
	mine := func(out string) peerStatus {
		t.Helper()
		var report statusReport
		require.NoError(t, json.Unmarshal([]byte(out), &report), out)
		assert.Equal(t, statusAPIVersion, report.APIVersion)
		assert.Equal(t, statusKind, report.Kind)
		for _, p := range report.Peers {
			if p.ClusterID == peer {
				return p
			}
		}
		t.Fatalf("status lists no peer %s: %s", peer, out)
		return peerStatus{}
	}

	// A Warning the controller got past: the Tenant was accepted after it.
	record("Warning", "PeerRoleMissing", "the ClusterRole liqo-remote-controlplane is missing", now.Add(-3*time.Minute))
	record("Normal", "TenantAccepted", "Tenant status is filled", now.Add(-2*time.Minute))
	got := mine(status("-o", "json"))
	assert.Equal(t, peerStatus{
		ClusterID: peer, Role: consumerRole, Condition: "Active",
		Object:             objectRef{Kind: authv1beta1.TenantKind, Namespace: ns, Name: peer},
		CertificateExpires: &metav1.Time{Time: notAfter},
	}, normalize(got))
	assert.Regexp(t, `(?m)^`+peer+`\s+consumer\s+Active\s+-\s+`+notAfter.Format(time.RFC3339)+`\s+-$`, status())

	// A Warning after the last Normal is current: whole in -o json and -o
	// yaml, cut in the table.
	long := "the CSR is refused: " + strings.Repeat("a reason long enough to be cut in the table ", 3) + "FIX: do this"
	seen := now.Add(-time.Minute).UTC().Truncate(time.Second)
	record("Warning", "InvalidCSR", long, seen)
	start := time.Now()
	j := status("-o", "json")
	t.Logf("status -o json in %s", time.Since(start).Round(time.Millisecond))
	got = mine(j)
	require.NotNil(t, got.Warning)
	assert.Equal(t, "InvalidCSR", got.Warning.Reason)
	assert.Equal(t, long, got.Warning.Message)
	assert.WithinDuration(t, seen, got.Warning.Time.Time, time.Second)
	y := status("-o", "yaml")
	fromYAML, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	assert.Equal(t, got, mine(string(fromYAML)), "-o yaml is the same document")
	assert.True(t, strings.HasPrefix(y, "apiVersion: "+statusAPIVersion+"\n"), y)
	table := status()
	t.Logf("status:\n%s", table)
	assert.Regexp(t, `(?m)^`+peer+`\s+consumer\s+Active\s+-\s+\S+\s+InvalidCSR: the CSR is refused: .*…$`, table)
	assert.NotContains(t, table, "FIX: do this")
	assert.Equal(t, "Active", status("-o", `jsonpath={.peers[?(@.clusterID=="`+peer+`")].condition}`))

	// -o name names nothing: a usage error.
	r, err := cliErr(t, nil, "status", "--kubeconfig", providerEnv.kubeconfig, "-o", "name")
	var usage *usageError
	require.ErrorAs(t, err, &usage)
	assert.Equal(t, exitUsage, r.code)
}

// normalize drops the monotonic clock and location of a peer's times, so
// that assert.Equal compares instants.
func normalize(p peerStatus) peerStatus {
	if p.CertificateExpires != nil {
		p.CertificateExpires = &metav1.Time{Time: p.CertificateExpires.UTC()}
	}
	return p
}

// selfSigned returns a PEM certificate that expires at notAfter.
func selfSigned(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cl-status", Organization: []string{"liqo.io"}},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// kconditions are the three kstatus conditions as the peering controllers
// set them (controllers.setState) for generation gen: holds True (none
// when ""), the others False, each with reason and message.
func kconditions(gen int64, holds, reason, message string) []metav1.Condition {
	var conditions []metav1.Condition
	for _, t := range []string{peeringv1alpha1.ConditionReady, peeringv1alpha1.ConditionReconciling, peeringv1alpha1.ConditionStalled} {
		status := metav1.ConditionFalse
		if t == holds {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen})
	}
	return conditions
}

// TestStatusGitOpsState: a peering object's state is the kstatus
// condition that holds, Stalled first, with its reason and message, and
// it is up to date only when its observedGeneration is its generation.
func TestStatusGitOpsState(t *testing.T) {
	t.Parallel()
	const kind, name = peeringv1alpha1.TrustedProviderKind, "cl-p"
	for _, tc := range []struct {
		name                 string
		generation, observed int64
		conditions           []metav1.Condition
		want                 gitopsStatus
	}{
		{"no status yet", 1, 0, nil,
			gitopsStatus{State: "Unknown"}},
		{"ready", 1, 1, kconditions(1, peeringv1alpha1.ConditionReady, contract.ReasonPeered, "the identity is held"),
			gitopsStatus{State: "Ready", Reason: contract.ReasonPeered, Message: "the identity is held", UpToDate: true}},
		{"reconciling", 2, 2, kconditions(2, peeringv1alpha1.ConditionReconciling, contract.ReasonNotAuthorized, "not authorized"),
			gitopsStatus{State: "Reconciling", Reason: contract.ReasonNotAuthorized, Message: "not authorized", UpToDate: true}},
		{"stalled", 1, 1, kconditions(1, peeringv1alpha1.ConditionStalled, contract.ReasonGrantRejected, "not signed by a committed key"),
			gitopsStatus{State: "Stalled", Reason: contract.ReasonGrantRejected, Message: "not signed by a committed key", UpToDate: true}},
		{"stalled wins over ready", 1, 1, append(kconditions(1, peeringv1alpha1.ConditionReady, contract.ReasonPeered, "held")[:1],
			metav1.Condition{Type: peeringv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: contract.ReasonEndpointUntrusted, Message: "untrusted"}),
			gitopsStatus{State: "Stalled", Reason: contract.ReasonEndpointUntrusted, Message: "untrusted", UpToDate: true}},
		{"revoked: none holds, Ready False", 3, 3, kconditions(3, "", contract.ReasonConsumerRevoked, "spec.revoked: the consumer is revoked"),
			gitopsStatus{State: "NotReady", Reason: contract.ReasonConsumerRevoked, Message: "spec.revoked: the consumer is revoked", UpToDate: true}},
		{"a spec the controller has not observed", 2, 1, kconditions(1, peeringv1alpha1.ConditionReady, contract.ReasonPeered, "held"),
			gitopsStatus{State: "Ready", Reason: contract.ReasonPeered, Message: "held"}},
		{"Ready Unknown", 1, 1, []metav1.Condition{{Type: peeringv1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: "Starting"}},
			gitopsStatus{State: "Unknown", UpToDate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.want.Kind, tc.want.Name = kind, name
			assert.Equal(t, &tc.want, newGitOpsStatus(kind, name, tc.generation, tc.observed, tc.conditions))
		})
	}
}

// TestStatusWithGitOps: a committed object goes to the peers of its role
// and cluster ID; one that no peer has is a Pending peer of its own, with
// no object; with nothing committed the peers are as they were.
func TestStatusWithGitOps(t *testing.T) {
	t.Parallel()
	identity := func(id string) peerStatus {
		return peerStatus{ClusterID: id, Role: providerRole, Condition: "Ready",
			Object: objectRef{Kind: authv1beta1.IdentityKind, Namespace: "liqo-tenant-" + id, Name: id + "-controlplane"}}
	}
	committed := func(id string) *gitopsStatus {
		return &gitopsStatus{Kind: peeringv1alpha1.TrustedProviderKind, Name: id, State: "Ready", Reason: contract.ReasonPeered, UpToDate: true}
	}

	assert.Equal(t, []peerStatus{identity("cl-a"), identity("cl-b")}, withGitOps([]peerStatus{identity("cl-a"), identity("cl-b")}, providerRole, nil),
		"nothing committed (the CRDs not served): the peers as before")

	got := withGitOps([]peerStatus{identity("cl-a"), identity("cl-b")}, providerRole,
		map[string]*gitopsStatus{"cl-d": committed("cl-d"), "cl-b": committed("cl-b"), "cl-c": committed("cl-c")})
	withB := identity("cl-b")
	withB.GitOps = committed("cl-b")
	assert.Equal(t, []peerStatus{
		identity("cl-a"),
		withB,
		{ClusterID: "cl-c", Role: providerRole, Condition: "Pending", Object: objectRef{Kind: peeringv1alpha1.TrustedProviderKind, Name: "cl-c"}, GitOps: committed("cl-c")},
		{ClusterID: "cl-d", Role: providerRole, Condition: "Pending", Object: objectRef{Kind: peeringv1alpha1.TrustedProviderKind, Name: "cl-d"}, GitOps: committed("cl-d")},
	}, got)
}

// failingPeeringLists fails every list of the peering.kubepact.io kinds
// with err, and passes any other call to the client it wraps.
type failingPeeringLists struct {
	client.Client
	err error
}

func (c failingPeeringLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *peeringv1alpha1.AuthorizedConsumerList, *peeringv1alpha1.TrustedProviderList:
		return c.err
	}
	return c.Client.List(ctx, list, opts...)
}

// TestStatusGitOps: on a real cluster, status shows each peering committed
// in Git, beside the peer's Tenant or alone, with its state, in -o json
// and in the table; where the kinds are not served it shows what it showed
// before; a user who may not list them gets the rest, with a note.
func TestStatusGitOps(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// The provider's test cluster runs no AuthorizedConsumer reconciler
	// (no test gives it an enrolment namespace), and no consumer
	// controller: the statuses written here stay as written.
	withTenant, lone, provider := unique("cl-gitops-status-c"), unique("cl-gitops-status-lone"), unique("cl-gitops-status-p")
	ns := unique("kubepact-gitops-status")
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = providerEnv.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	require.NoError(t, providerEnv.typed.Create(ctx, &authv1beta1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: withTenant},
		Spec:       authv1beta1.TenantSpec{ClusterID: withTenant},
	}))

	authorize := func(id, holds, reason, message string) {
		t.Helper()
		ac := &peeringv1alpha1.AuthorizedConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: id},
			Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: id, PublicKeys: []string{"a committed key"},
				Request: peeringv1alpha1.EnrolmentRequest{CSR: "a CSR", Signature: []byte("a signature")}},
		}
		require.NoError(t, providerEnv.typed.Create(ctx, ac))
		t.Cleanup(func() { _ = providerEnv.typed.Delete(context.Background(), ac) })
		ac.Status.ObservedGeneration, ac.Status.Conditions = ac.Generation, kconditions(ac.Generation, holds, reason, message)
		require.NoError(t, providerEnv.typed.Status().Update(ctx, ac))
	}
	authorize(withTenant, peeringv1alpha1.ConditionReady, contract.ReasonGranted, "the grant is signed and served by the enrolment endpoint")
	authorize(lone, peeringv1alpha1.ConditionStalled, contract.ReasonRequestRejected, "the request does not verify with the committed keys")

	// A TrustedProvider the controller saw, then changed in Git: its
	// conditions are about the spec before.
	tp := &peeringv1alpha1.TrustedProvider{
		ObjectMeta: metav1.ObjectMeta{Name: provider},
		Spec: peeringv1alpha1.TrustedProviderSpec{ClusterID: provider, Endpoint: "https://enrol.provider.example",
			CASHA256: "sha256:" + strings.Repeat("0", 64), EnrolmentKeys: []string{"a committed enrolment key"}},
	}
	require.NoError(t, providerEnv.typed.Create(ctx, tp))
	t.Cleanup(func() { _ = providerEnv.typed.Delete(context.Background(), tp) })
	tp.Status.ObservedGeneration = tp.Generation
	tp.Status.Conditions = kconditions(tp.Generation, peeringv1alpha1.ConditionReconciling, contract.ReasonNotAuthorized, "not authorized")
	require.NoError(t, providerEnv.typed.Status().Update(ctx, tp))
	tp.Spec.Endpoint = "https://enrol-2.provider.example"
	require.NoError(t, providerEnv.typed.Update(ctx, tp))
	require.Greater(t, tp.Generation, tp.Status.ObservedGeneration)

	status := func(args ...string) result {
		t.Helper()
		r, err := cliErr(t, nil, append([]string{"status", "--kubeconfig", providerEnv.kubeconfig}, args...)...)
		require.NoError(t, err, r.stderr)
		return r
	}
	mine := func(report *statusReport) []peerStatus {
		var peers []peerStatus
		for _, p := range report.Peers {
			if p.ClusterID == withTenant || p.ClusterID == lone || p.ClusterID == provider {
				peers = append(peers, p)
			}
		}
		return peers
	}
	decode := func(out string) *statusReport {
		t.Helper()
		var report statusReport
		require.NoError(t, json.Unmarshal([]byte(out), &report), out)
		return &report
	}

	t.Run("json", func(t *testing.T) {
		r := status("-o", "json")
		assert.Empty(t, r.stderr, "no note for an admin")
		report := decode(r.stdout)
		assert.Empty(t, report.Unreadable)
		assert.Equal(t, []peerStatus{
			{ClusterID: withTenant, Role: consumerRole, Condition: "Pending", Object: objectRef{Kind: authv1beta1.TenantKind, Namespace: ns, Name: withTenant},
				GitOps: &gitopsStatus{Kind: peeringv1alpha1.AuthorizedConsumerKind, Name: withTenant, State: "Ready", Reason: contract.ReasonGranted,
					Message: "the grant is signed and served by the enrolment endpoint", UpToDate: true}},
			{ClusterID: lone, Role: consumerRole, Condition: "Pending", Object: objectRef{Kind: peeringv1alpha1.AuthorizedConsumerKind, Name: lone},
				GitOps: &gitopsStatus{Kind: peeringv1alpha1.AuthorizedConsumerKind, Name: lone, State: "Stalled", Reason: contract.ReasonRequestRejected,
					Message: "the request does not verify with the committed keys", UpToDate: true}},
			{ClusterID: provider, Role: providerRole, Condition: "Pending", Object: objectRef{Kind: peeringv1alpha1.TrustedProviderKind, Name: provider},
				GitOps: &gitopsStatus{Kind: peeringv1alpha1.TrustedProviderKind, Name: provider, State: "Reconciling", Reason: contract.ReasonNotAuthorized,
					Message: "not authorized"}},
		}, mine(report), "in this order: consumers, then providers, by cluster ID")
		assert.NotContains(t, r.stdout, `"unreadable"`)
		assert.Equal(t, "Stalled", status("-o", `jsonpath={.peers[?(@.clusterID=="`+lone+`")].gitops.state}`).stdout)
	})

	t.Run("table", func(t *testing.T) {
		table := status().stdout
		t.Logf("status:\n%s", table)
		assert.Regexp(t, `(?m)^PEER\s+ROLE\s+CONDITION\s+GITOPS\s+CERTIFICATE EXPIRES\s+LAST ERROR$`, table)
		assert.Regexp(t, `(?m)^`+withTenant+`\s+consumer\s+Pending\s+Ready\s+-\s+-$`, table)
		assert.Regexp(t, `(?m)^`+lone+`\s+consumer\s+Pending\s+Stalled: RequestRejected\s+-\s+-$`, table)
		assert.Regexp(t, `(?m)^`+provider+`\s+provider\s+Pending\s+Reconciling: NotAuthorized \(stale\)\s+-\s+-$`, table)
	})

	local := func(typed client.Client) *cluster {
		return &cluster{role: "local", client: providerEnv.client, typed: typed}
	}
	peering := schema.GroupResource{Group: peeringv1alpha1.SchemeGroupVersion.Group, Resource: "authorizedconsumers"}

	t.Run("kinds not served", func(t *testing.T) {
		for _, unserved := range []error{
			&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: peering.Group, Kind: peeringv1alpha1.AuthorizedConsumerKind}, SearchedVersions: []string{"v1alpha1"}},
			apierrors.NewNotFound(peering, ""),
		} {
			report, err := readStatus(ctx, local(failingPeeringLists{Client: providerEnv.typed, err: unserved}))
			require.NoError(t, err)
			assert.Empty(t, report.Unreadable)
			for _, p := range report.Peers {
				assert.Nil(t, p.GitOps, "%s: nothing committed", p.ClusterID)
				assert.NotNil(t, p.Object, "%s: only Tenants and Identities", p.ClusterID)
			}
			assert.Equal(t, []peerStatus{
				{ClusterID: withTenant, Role: consumerRole, Condition: "Pending", Object: objectRef{Kind: authv1beta1.TenantKind, Namespace: ns, Name: withTenant}},
			}, mine(report))
			b, err := json.Marshal(report)
			require.NoError(t, err)
			assert.NotContains(t, string(b), `"gitops"`)
			assert.NotContains(t, string(b), `"unreadable"`)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		forbidden := apierrors.NewForbidden(peering, "", errors.New("RBAC: not allowed"))
		report, err := readStatus(ctx, local(failingPeeringLists{Client: providerEnv.typed, err: forbidden}))
		require.NoError(t, err, "the rest of the status is still read")
		assert.Equal(t, []unreadableKind{
			{Kind: peeringv1alpha1.AuthorizedConsumerKind, Reason: string(metav1.StatusReasonForbidden), Message: forbidden.Error()},
			{Kind: peeringv1alpha1.TrustedProviderKind, Reason: string(metav1.StatusReasonForbidden), Message: forbidden.Error()},
		}, report.Unreadable)
		assert.Equal(t, []peerStatus{
			{ClusterID: withTenant, Role: consumerRole, Condition: "Pending", Object: objectRef{Kind: authv1beta1.TenantKind, Namespace: ns, Name: withTenant}},
		}, mine(report))
	})

	t.Run("another error fails", func(t *testing.T) {
		_, err := readStatus(ctx, local(failingPeeringLists{Client: providerEnv.typed, err: apierrors.NewInternalError(errors.New("etcd is down"))}))
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		assert.Equal(t, metav1.StatusReasonInternalError, status.Status().Reason)
	})

	t.Run("forbidden as a user", func(t *testing.T) {
		// What the chart's helm test account may do: list Tenants,
		// Identities and Events, nothing of peering.kubepact.io.
		user := unique("status-reader")
		_, err := providerEnv.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{authv1beta1.SchemeGroupVersion.Group}, Resources: []string{"tenants", "identities"}, Verbs: []string{"list"}},
				{APIGroups: []string{eventsv1.GroupName}, Resources: []string{"events"}, Verbs: []string{"list"}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = providerEnv.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = providerEnv.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
			_ = providerEnv.client.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
		})

		var r result
		require.Eventually(t, func() bool {
			r, err = cliErr(t, nil, "status", "--kubeconfig", providerEnv.kubeconfig, "--as", user)
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "status as %s: %v", user, err)
		t.Logf("status as %s:\n%s%s", user, r.stderr, r.stdout)
		for _, kind := range []string{peeringv1alpha1.AuthorizedConsumerKind, peeringv1alpha1.TrustedProviderKind} {
			assert.Contains(t, r.stderr, " WARN  the "+kind+"s committed in Git are not shown: ")
		}
		assert.Regexp(t, `(?m)^`+withTenant+`\s+consumer\s+Pending\s+-\s+-\s+-$`, r.stdout)
		assert.NotContains(t, r.stdout, lone)

		r = status("-o", "json", "--as", user)
		report := decode(r.stdout)
		require.Len(t, report.Unreadable, 2)
		for i, kind := range []string{peeringv1alpha1.AuthorizedConsumerKind, peeringv1alpha1.TrustedProviderKind} {
			assert.Equal(t, kind, report.Unreadable[i].Kind)
			assert.Equal(t, string(metav1.StatusReasonForbidden), report.Unreadable[i].Reason)
			assert.Contains(t, report.Unreadable[i].Message, user)
		}
		assert.Len(t, mine(report), 1)
	})
}

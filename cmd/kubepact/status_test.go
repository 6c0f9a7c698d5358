package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
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
	assert.Regexp(t, `(?m)^`+peer+`\s+consumer\s+Active\s+`+notAfter.Format(time.RFC3339)+`\s+-$`, status())

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
	assert.Regexp(t, `(?m)^`+peer+`\s+consumer\s+Active\s+\S+\s+InvalidCSR: the CSR is refused: .*…$`, table)
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

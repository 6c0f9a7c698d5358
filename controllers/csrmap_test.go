package controllers

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"testing"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// A CertificateSigningRequest requeues the Tenant of the consumer its
// label names or, without the label (a request made before kubepact set
// it, or by Liqo), the consumer its common name names; nothing for a
// request that names no valid cluster ID.
func TestTenantOfCSR(t *testing.T) {
	t.Parallel()
	key := testkeys.Generate(t, keys.Ed25519)
	request := func(cn string) []byte {
		pemBytes, err := csr.Create(rand.Reader, key, pkix.Name{CommonName: cn, Organization: []string{"liqo.io"}})
		require.NoError(t, err)
		return pemBytes
	}
	tenantOf := func(id string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: clusterid.TenantNamespace(id), Name: id}}}
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		request []byte
		want    []reconcile.Request
	}{
		{"label", map[string]string{clusterid.Label: "cl-labelled"}, request("cl-other"), tenantOf("cl-labelled")},
		{"no label: common name", nil, request("cl-unlabelled"), tenantOf("cl-unlabelled")},
		{"invalid label", map[string]string{clusterid.Label: "Not_An_ID"}, request("cl-unlabelled"), nil},
		{"common name not a cluster ID", nil, request("system:admin"), nil},
		{"no PEM", nil, []byte("not a request"), nil},
		{"not a CSR", nil, []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), nil},
		{"oversized", nil, append(request("cl-big"), bytes.Repeat([]byte("\n"), csr.MaxSize)...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			labels := map[string]string{kube.CSRLabel: "true"}
			for k, v := range tc.labels {
				labels[k] = v
			}
			obj := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "liqo-identity-x", Labels: labels},
				Spec:       certificatesv1.CertificateSigningRequestSpec{Request: tc.request},
			}
			require.Equal(t, tc.want, tenantOfCSR(context.Background(), obj))
		})
	}
}

// A settled CertificateSigningRequest requeues only when the signer
// reports it awaited: one whose outcome a Sign waited for and returned was
// handled by the reconcile that called it, and another pass would only
// repeat its reads.
func TestCSRSettledOnlyWhenAwaited(t *testing.T) {
	t.Parallel()
	issued := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-identity-a", Labels: map[string]string{kube.CSRLabel: "true", clusterid.Label: "cl-a"}},
		Status:     certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("issued")},
	}
	pending := issued.DeepCopy()
	pending.Status = certificatesv1.CertificateSigningRequestStatus{}
	for _, tc := range []struct {
		name    string
		awaited bool
		want    bool
	}{
		{"awaited", true, true},
		{"returned by a Sign", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := csrSettled(func(name string) bool { return tc.awaited && name == issued.Name })
			require.Equal(t, tc.want, p.Update(event.UpdateEvent{ObjectOld: pending, ObjectNew: issued}))
			require.Equal(t, tc.want, p.Create(event.CreateEvent{Object: issued}))
			require.False(t, p.Update(event.UpdateEvent{ObjectOld: pending, ObjectNew: pending}), "not settled")
		})
	}
}

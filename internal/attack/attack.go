// Package attack holds the abuses that the tests of kubepact's shipped
// identities (the controller, the token server, the ServiceAccount issuer)
// try as those identities on a real API server, and the assertion that each
// is refused.
package attack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/kube"
)

// Refused checks that err is the API server's Forbidden.
func Refused(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
}

// RefusePodSecurityChanges checks that as may neither add, change nor remove
// a pod-security label of the tenant namespace tenantNS, nor add one to
// default, while other labels of tenantNS stay its to set.
func RefusePodSecurityChanges(t testing.TB, ctx context.Context, admin, as kubernetes.Interface, tenantNS string) {
	t.Helper()
	for _, ns := range []string{tenantNS, metav1.NamespaceDefault} {
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		add := n.DeepCopy()
		if add.Labels == nil {
			add.Labels = map[string]string{}
		}
		add.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
		_, err = as.CoreV1().Namespaces().Update(ctx, add, metav1.UpdateOptions{})
		Refused(t, err)
		add.Labels["pod-security.kubernetes.io/audit"] = "privileged"
		delete(add.Labels, "pod-security.kubernetes.io/enforce")
		_, err = as.CoreV1().Namespaces().Update(ctx, add, metav1.UpdateOptions{})
		Refused(t, err)
	}
	n, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{})
	require.NoError(t, err)
	remove := n.DeepCopy()
	delete(remove.Labels, "pod-security.kubernetes.io/enforce")
	_, err = as.CoreV1().Namespaces().Update(ctx, remove, metav1.UpdateOptions{})
	Refused(t, err)
	other := n.DeepCopy()
	other.Labels["kubepact.io/test"] = "ok"
	_, err = as.CoreV1().Namespaces().Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err, "another label of a tenant namespace")
}

// OthersCSR creates, as admin, a CSR for a cluster administrator's
// certificate and returns it with an approval added, for another user to
// try to write.
func OthersCSR(t testing.TB, ctx context.Context, admin kubernetes.Interface) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}}}, key)
	require.NoError(t, err)
	c, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "attack-", Labels: map[string]string{kube.CSRLabel: "true"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Attack", Message: "attack"})
	return c
}

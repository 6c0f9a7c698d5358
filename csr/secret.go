package csr

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
)

const (
	// CacheSecretCSRKey is the data key of the cached CSR.
	CacheSecretCSRKey = "csr"
	// CacheSecretCertificateKey is the data key of the cached certificate.
	CacheSecretCertificateKey = "certificate"
)

// Namespace is the provider-side namespace of the cache Secret: the tenant
// namespace of the consumer.
func (k CacheKey) Namespace() string { return clusterid.TenantNamespace(k.ConsumerID) }

// CacheSecret returns the Secret that caches e for k.
func CacheSecret(k CacheKey, e CacheEntry) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      k.SecretName(),
			Namespace: k.Namespace(),
			Labels:    map[string]string{clusterid.Label: k.ConsumerID},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{CacheSecretCSRKey: e.CSR, CacheSecretCertificateKey: e.Certificate},
	}
}

// CacheEntryFromSecret reads the entry cached in s.
func CacheEntryFromSecret(s *corev1.Secret) CacheEntry {
	return CacheEntry{CSR: s.Data[CacheSecretCSRKey], Certificate: s.Data[CacheSecretCertificateKey]}
}

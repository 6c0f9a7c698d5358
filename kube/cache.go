package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/csr"
)

// CertificateCache is a csr.Cache over the provider's
// "liqo-remote-certificate[-<slice>]" Secrets in tenant namespaces.
type CertificateCache struct{ client kubernetes.Interface }

var _ csr.Cache = (*CertificateCache)(nil)

// NewCertificateCache returns a CertificateCache using client.
func NewCertificateCache(client kubernetes.Interface) *CertificateCache {
	return &CertificateCache{client: client}
}

// Get returns the entry cached for k.
func (c *CertificateCache) Get(ctx context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	sec, err := c.client.CoreV1().Secrets(k.Namespace()).Get(ctx, k.SecretName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return csr.CacheEntry{}, notFound(csr.ErrNotFound, err, "Secret", k.Namespace(), k.SecretName())
	}
	if err != nil {
		return csr.CacheEntry{}, wrap(err, "reading", "Secret", k.Namespace(), k.SecretName())
	}
	return csr.CacheEntryFromSecret(sec), nil
}

// Put caches e for k.
func (c *CertificateCache) Put(ctx context.Context, k csr.CacheKey, e csr.CacheEntry) error {
	return applySecret(ctx, c.client, csr.CacheSecret(k, e))
}

// Delete removes the entry cached for k.
func (c *CertificateCache) Delete(ctx context.Context, k csr.CacheKey) error {
	return deleteSecret(ctx, c.client, k.Namespace(), k.SecretName())
}

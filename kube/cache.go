package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/csr"
)

// CertificateCache is a csr.Cache over the provider's
// "liqo-remote-certificate[-<slice>]" Secrets in tenant namespaces.
type CertificateCache struct {
	client kubernetes.Interface
	reader ctrlclient.Reader // Get's, when set (WithReader)
}

var _ csr.Cache = (*CertificateCache)(nil)

// NewCertificateCache returns a CertificateCache using client.
func NewCertificateCache(client kubernetes.Interface) *CertificateCache {
	return &CertificateCache{client: client}
}

// WithReader returns a CertificateCache whose Get reads r, such as a
// controller's cache of the Secrets labelled liqo.io/remote-cluster-id,
// which the certificate records are; Put and Delete still write through
// c's client.
func (c *CertificateCache) WithReader(r ctrlclient.Reader) *CertificateCache {
	return &CertificateCache{client: c.client, reader: r}
}

// Get returns the entry cached for k.
func (c *CertificateCache) Get(ctx context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	sec, err := c.get(ctx, k)
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

func (c *CertificateCache) get(ctx context.Context, k csr.CacheKey) (*corev1.Secret, error) {
	if c.reader == nil {
		return c.client.CoreV1().Secrets(k.Namespace()).Get(ctx, k.SecretName(), metav1.GetOptions{})
	}
	sec := &corev1.Secret{}
	return sec, c.reader.Get(ctx, ctrlclient.ObjectKey{Namespace: k.Namespace(), Name: k.SecretName()}, sec)
}

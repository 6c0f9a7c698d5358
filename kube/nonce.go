package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
)

// NonceStore is a nonce.Store over the provider's "liqo-nonce" Secrets, one
// in the tenant namespace of each consumer.
type NonceStore struct{ client kubernetes.Interface }

var _ nonce.Store = (*NonceStore)(nil)

// NewNonceStore returns a NonceStore using client.
func NewNonceStore(client kubernetes.Interface) *NonceStore { return &NonceStore{client: client} }

// Put stores e as the nonce of clusterID, replacing any earlier one.
func (s *NonceStore) Put(ctx context.Context, clusterID string, e nonce.Entry) error {
	return applySecret(ctx, s.client, nonce.Secret(clusterID, e))
}

// Get returns the nonce of clusterID.
func (s *NonceStore) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	sec, err := s.client.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "reading", "Secret", ns, nonce.SecretName)
	}
	return nonce.FromSecret(sec)
}

// MarkRedeemed records r on the nonce Secret of clusterID unless it records
// a redemption already, and returns the entry. The update is conditional on
// the Secret read, so of concurrent callers exactly one records its
// redemption and the others read it back.
func (s *NonceStore) MarkRedeemed(ctx context.Context, clusterID string, r nonce.Redemption) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	secrets := s.client.CoreV1().Secrets(ns)
	var out nonce.Entry
	err := retryOnConflict(ctx, func() error {
		sec, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
		}
		if err != nil {
			return wrap(err, "reading", "Secret", ns, nonce.SecretName)
		}
		e, err := nonce.FromSecret(sec)
		if err != nil {
			return err
		}
		if e.Redemption != nil {
			out = e
			return nil
		}
		e.Redemption = &r
		// The apply carries sec's resourceVersion: a concurrent change
		// conflicts, and the retry reads it. It applies the whole Secret
		// kubepact owns, so the next Put of a fresh nonce drops the
		// redemption with the old nonce.
		marked := nonce.Secret(clusterID, e)
		ac := corev1ac.Secret(marked.Name, marked.Namespace).WithResourceVersion(sec.ResourceVersion).
			WithType(marked.Type).WithLabels(marked.Labels).WithAnnotations(marked.Annotations).WithData(marked.Data)
		if _, err := secrets.Apply(ctx, ac, applyOptions(true)); err != nil {
			return wrap(err, "marking redeemed", "Secret", ns, nonce.SecretName)
		}
		out = e
		return nil
	})
	if err != nil {
		return nonce.Entry{}, err
	}
	return out, nil
}

// Consume deletes the nonce Secret of clusterID and returns what it held.
// The delete is conditional on the Secret read, so of concurrent callers
// exactly one gets the nonce.
func (s *NonceStore) Consume(ctx context.Context, clusterID string) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	secrets := s.client.CoreV1().Secrets(ns)
	sec, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "reading", "Secret", ns, nonce.SecretName)
	}
	err = secrets.Delete(ctx, nonce.SecretName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &sec.UID, ResourceVersion: &sec.ResourceVersion,
	}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Another caller consumed or replaced it first.
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "deleting", "Secret", ns, nonce.SecretName)
	}
	return nonce.FromSecret(sec)
}

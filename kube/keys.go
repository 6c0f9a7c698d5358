package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/keys"
)

// KeyStore is a keys.Store over the "authentication-keys" Secret.
type KeyStore struct {
	client    kubernetes.Interface
	namespace string
}

var _ keys.Store = (*KeyStore)(nil)

// NewKeyStore returns a KeyStore keeping the key in namespace (Liqo uses
// keys.DefaultNamespace).
func NewKeyStore(client kubernetes.Interface, namespace string) *KeyStore {
	return &KeyStore{client: client, namespace: namespace}
}

// Get returns the stored key.
func (s *KeyStore) Get(ctx context.Context) (*keys.PrivateKey, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, keys.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(keys.ErrNotFound, err, "Secret", s.namespace, keys.SecretName)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", s.namespace, keys.SecretName)
	}
	return keys.FromSecret(sec)
}

// Create stores k unless a key is stored, creating the namespace if needed.
func (s *KeyStore) Create(ctx context.Context, k *keys.PrivateKey) error {
	sec, err := keys.Secret(s.namespace, k)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrap(err, "creating", "Namespace", "", s.namespace)
	}
	_, err = s.client.CoreV1().Secrets(s.namespace).Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return notFound(keys.ErrExists, err, "Secret", s.namespace, keys.SecretName)
	}
	if err != nil {
		return wrap(err, "creating", "Secret", s.namespace, keys.SecretName)
	}
	return nil
}

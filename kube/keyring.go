package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/keys"
)

// Keyring is a keys.Keyring over Secrets named "kubepact-key-<name>" in one
// namespace (the Liqo namespace, beside the cluster key).
type Keyring struct {
	client    kubernetes.Interface
	namespace string
}

var _ keys.Keyring = (*Keyring)(nil)

// NewKeyring returns a Keyring keeping its keys in namespace.
func NewKeyring(client kubernetes.Interface, namespace string) *Keyring {
	return &Keyring{client: client, namespace: namespace}
}

// Get returns the key named name.
func (r *Keyring) Get(ctx context.Context, name string) (*keys.PrivateKey, error) {
	secretName := keys.KeyringSecretPrefix + name
	sec, err := r.client.CoreV1().Secrets(r.namespace).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(keys.ErrNotFound, err, "Secret", r.namespace, secretName)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", r.namespace, secretName)
	}
	return keys.FromSecret(sec)
}

// Create stores k as name unless a key of that name exists, creating the
// namespace if needed.
func (r *Keyring) Create(ctx context.Context, name string, k *keys.PrivateKey) error {
	sec, err := keys.KeyringSecret(r.namespace, name, k)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace}}
	if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrap(err, "creating", "Namespace", "", r.namespace)
	}
	_, err = r.client.CoreV1().Secrets(r.namespace).Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return notFound(keys.ErrExists, err, "Secret", r.namespace, sec.Name)
	}
	if err != nil {
		return wrap(err, "creating", "Secret", r.namespace, sec.Name)
	}
	return nil
}

// Delete removes the key named name.
func (r *Keyring) Delete(ctx context.Context, name string) error {
	return deleteSecret(ctx, r.client, r.namespace, keys.KeyringSecretPrefix+name)
}

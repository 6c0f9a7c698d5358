package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/keys"
)

// Keyring is a keys.Keyring over Secrets named "kubepact-key-<name>" in one
// namespace (the Liqo namespace, beside the cluster key), each holding a
// key and its attestation (keys.AttestationSecretKey).
type Keyring struct {
	client    kubernetes.Interface
	namespace string
}

var _ keys.Keyring = (*Keyring)(nil)

// NewKeyring returns a Keyring keeping its keys in namespace.
func NewKeyring(client kubernetes.Interface, namespace string) *Keyring {
	return &Keyring{client: client, namespace: namespace}
}

// Get returns what is stored as name.
func (r *Keyring) Get(ctx context.Context, name string) (keys.Stored, error) {
	sec, err := r.get(ctx, name)
	if err != nil {
		return keys.Stored{}, err
	}
	return keys.FromKeyringSecret(sec)
}

func (r *Keyring) get(ctx context.Context, name string) (*corev1.Secret, error) {
	secretName := keys.KeyringSecretPrefix + name
	sec, err := r.client.CoreV1().Secrets(r.namespace).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(keys.ErrNotFound, err, "Secret", r.namespace, secretName)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", r.namespace, secretName)
	}
	return sec, nil
}

// Create stores s as name unless a key of that name exists, creating the
// namespace if needed.
func (r *Keyring) Create(ctx context.Context, name string, s keys.Stored) error {
	sec, err := keys.KeyringSecret(r.namespace, name, s)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace}}
	if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrap(err, "creating", "Namespace", "", r.namespace)
	}
	_, err = r.client.CoreV1().Secrets(r.namespace).Create(ctx, sec, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return notFound(keys.ErrExists, err, "Secret", r.namespace, sec.Name)
	}
	if err != nil {
		return wrap(err, "creating", "Secret", r.namespace, sec.Name)
	}
	return nil
}

// Attest sets the attestation of the key stored as name, which must be
// s.Key. The patch is held to the resourceVersion the key was read at, so
// a key replaced in between is never attested.
func (r *Keyring) Attest(ctx context.Context, name string, s keys.Stored) error {
	sec, err := r.get(ctx, name)
	if err != nil {
		return err
	}
	held, err := keys.FromKeyringSecret(sec)
	if err != nil {
		return err
	}
	if s.Key == nil || !keys.Equal(held.Key.Public(), s.Key.Public()) {
		return fmt.Errorf("%w: Secret %s/%s holds another key", keys.ErrExists, r.namespace, sec.Name)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": sec.ResourceVersion},
		"data":     map[string]any{keys.AttestationSecretKey: s.Attestation},
	})
	if err != nil {
		return err
	}
	if _, err := r.client.CoreV1().Secrets(r.namespace).Patch(ctx, sec.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return wrap(err, "attesting the key of", "Secret", r.namespace, sec.Name)
	}
	return nil
}

// Delete removes the key named name.
func (r *Keyring) Delete(ctx context.Context, name string) error {
	return deleteSecret(ctx, r.client, r.namespace, keys.KeyringSecretPrefix+name)
}

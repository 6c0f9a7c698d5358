package kube

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/keys"
)

// KeyStore is a keys.RotatingStore over the "authentication-keys" Secret,
// and keys.NextSecretName beside it while the key rotates.
type KeyStore struct {
	client    kubernetes.Interface
	namespace string
}

var _ keys.RotatingStore = (*KeyStore)(nil)

// NewKeyStore returns a KeyStore keeping the key in namespace (Liqo uses
// keys.DefaultNamespace).
func NewKeyStore(client kubernetes.Interface, namespace string) *KeyStore {
	return &KeyStore{client: client, namespace: namespace}
}

// Get returns the stored key.
func (s *KeyStore) Get(ctx context.Context) (*keys.PrivateKey, error) {
	sec, err := s.secret(ctx, keys.SecretName)
	if err != nil {
		return nil, err
	}
	return keys.FromSecret(sec)
}

// GetWithPrevious returns the stored key and the public half of the key
// it replaced (keys.PreviousPublicKeySecretKey), nil when none, from one
// read.
func (s *KeyStore) GetWithPrevious(ctx context.Context) (*keys.PrivateKey, crypto.PublicKey, error) {
	sec, err := s.secret(ctx, keys.SecretName)
	if err != nil {
		return nil, nil, err
	}
	k, err := keys.FromSecret(sec)
	if err != nil {
		return nil, nil, err
	}
	previous, err := keys.PreviousFromSecret(sec)
	if err != nil {
		return nil, nil, err
	}
	return k, previous, nil
}

// Next returns the next key (keys.NextSecretName), nil when no rotation
// overlaps.
func (s *KeyStore) Next(ctx context.Context) (*keys.PrivateKey, error) {
	sec, err := s.secret(ctx, keys.NextSecretName)
	if errors.Is(err, keys.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return keys.FromSecret(sec)
}

// CreateNext stores k as the next key unless one is stored.
func (s *KeyStore) CreateNext(ctx context.Context, k *keys.PrivateKey) error {
	sec, err := keys.NextSecret(s.namespace, k)
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Secrets(s.namespace).Create(ctx, sec, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return notFound(keys.ErrExists, err, "Secret", s.namespace, keys.NextSecretName)
	}
	if err != nil {
		return wrap(err, "creating", "Secret", s.namespace, keys.NextSecretName)
	}
	return nil
}

// Promote makes the next key the key: one merge patch of the key
// Secret's data, held to the resourceVersion it was read at, writes the
// next key and keeps the replaced key's public half; every other field of
// the Secret (Liqo's, a user's) stays. Then the next key's Secret is
// deleted.
func (s *KeyStore) Promote(ctx context.Context) (*keys.PrivateKey, error) {
	next, err := s.Next(ctx)
	switch {
	case err != nil:
		return nil, err
	case next == nil:
		return nil, fmt.Errorf("%w: no next key to promote: Secret %s/%s", keys.ErrNotFound, s.namespace, keys.NextSecretName)
	}
	sec, err := s.secret(ctx, keys.SecretName)
	if err != nil {
		return nil, err
	}
	current, err := keys.FromSecret(sec)
	if err != nil {
		return nil, err
	}
	if !keys.Equal(current.Public(), next.Public()) {
		promoted, err := keys.Secret(s.namespace, next)
		if err != nil {
			return nil, err
		}
		previous, err := keys.MarshalPublicKey(current.Public())
		if err != nil {
			return nil, err
		}
		promoted.Data[keys.PreviousPublicKeySecretKey] = previous
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": sec.ResourceVersion},
			"data":     promoted.Data,
		})
		if err != nil {
			return nil, err
		}
		if _, err := s.client.CoreV1().Secrets(s.namespace).Patch(ctx, keys.SecretName, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return nil, wrap(err, "promoting the next key into", "Secret", s.namespace, keys.SecretName)
		}
	}
	if err := deleteSecret(ctx, s.client, s.namespace, keys.NextSecretName); err != nil {
		return nil, err
	}
	return next, nil
}

// secret reads the Secret name of the key namespace, an error wrapping
// keys.ErrNotFound when there is none.
func (s *KeyStore) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(keys.ErrNotFound, err, "Secret", s.namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", s.namespace, name)
	}
	return sec, nil
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

// The record in which a consumer's kubepact-controller publishes the
// cluster's public key, beside the key Secret, for tools that must know
// the cluster key without reading it (kubepact authenticate checks with it
// the Tenant the controller hands over). Only the public half is in it:
// it is a ConfigMap, readable by whoever may read ConfigMaps in the key
// namespace.
//
// Trust in it rests on who may write it, which the API server enforces:
// the admission policy kubepact-cluster-public-key of config/controller
// lets only kubepact-controller's ServiceAccount create, update or delete
// a ConfigMap of this name in the key namespace, whatever RBAC grants.
const (
	// PublicKeyRecordName is the name of the ConfigMap.
	PublicKeyRecordName = "kubepact-cluster-public-key"
	// PublicKeyRecordKey is its data key: the cluster's public key as PKIX
	// PEM ("PUBLIC KEY"), as keys.MarshalPublicKey encodes it.
	PublicKeyRecordKey = "publicKey"
)

// PublicKeyRecord reads and writes the ConfigMap PublicKeyRecordName in
// one namespace, the key namespace.
type PublicKeyRecord struct {
	client    kubernetes.Interface
	namespace string
	name      string
}

// NewPublicKeyRecord returns the PublicKeyRecord of namespace, the
// namespace of the cluster key Secret (keys.DefaultNamespace for Liqo).
func NewPublicKeyRecord(client kubernetes.Interface, namespace string) *PublicKeyRecord {
	return &PublicKeyRecord{client: client, namespace: namespace, name: PublicKeyRecordName}
}

// PublicKeyRecordConfigMap returns the record of pub in namespace, as
// Publish applies it. It holds no secret.
func PublicKeyRecordConfigMap(namespace string, pub crypto.PublicKey) (*corev1ac.ConfigMapApplyConfiguration, error) {
	pemBytes, err := keys.MarshalPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return corev1ac.ConfigMap(PublicKeyRecordName, namespace).
		WithData(map[string]string{PublicKeyRecordKey: string(pemBytes)}), nil
}

// Publish writes pub into the record with server-side apply as
// FieldManager, taking over the data key from any other manager: the
// record follows the cluster key. Labels and annotations others set stay.
// The namespace must exist (it holds the key).
func (r *PublicKeyRecord) Publish(ctx context.Context, pub crypto.PublicKey) error {
	ac, err := PublicKeyRecordConfigMap(r.namespace, pub)
	if err != nil {
		return err
	}
	ac.WithName(r.name)
	if _, err := r.client.CoreV1().ConfigMaps(r.namespace).Apply(ctx, ac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ConfigMap", r.namespace, r.name)
	}
	return nil
}

// PublishWithNext writes pub into the record as Publish does and, while
// a rotation overlaps, next beside it under EnrolmentNextPublicKeyKey;
// with next nil the record holds pub alone (server-side apply drops the
// key it no longer sends).
func (r *PublicKeyRecord) PublishWithNext(ctx context.Context, pub, next crypto.PublicKey) error {
	ac, err := PublicKeyRecordConfigMap(r.namespace, pub)
	if err != nil {
		return err
	}
	ac.WithName(r.name)
	if next != nil {
		pemBytes, err := keys.MarshalPublicKey(next)
		if err != nil {
			return err
		}
		ac.WithData(map[string]string{EnrolmentNextPublicKeyKey: string(pemBytes)})
	}
	if _, err := r.client.CoreV1().ConfigMaps(r.namespace).Apply(ctx, ac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ConfigMap", r.namespace, r.name)
	}
	return nil
}

// Get returns the public key the record holds. A missing record is an
// error wrapping keys.ErrNotFound; a record without a valid key one
// wrapping keys.ErrMalformed (or what keys.ParsePublicKey returns). API
// errors are wrapped, so apierrors.IsForbidden tells a client that may not
// read it.
func (r *PublicKeyRecord) Get(ctx context.Context) (crypto.PublicKey, error) {
	_, pub, err := r.read(ctx)
	return pub, err
}

// GetNext returns the next key the record publishes beside its key, or
// nil when no rotation overlaps; errors as Get's.
func (r *PublicKeyRecord) GetNext(ctx context.Context) (crypto.PublicKey, error) {
	_, next, err := r.GetWithNext(ctx)
	return next, err
}

// GetWithNext returns, from one read of the record, its key and the next
// key it publishes beside it (nil when no rotation overlaps); errors as
// Get's, a next key that does not parse included.
func (r *PublicKeyRecord) GetWithNext(ctx context.Context) (pub, next crypto.PublicKey, err error) {
	cm, pub, err := r.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := cm.Data[EnrolmentNextPublicKeyKey]
	if !ok {
		return pub, nil, nil
	}
	if next, err = keys.ParsePublicKey([]byte(raw)); err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", r.namespace, r.name, EnrolmentNextPublicKeyKey, err)
	}
	return pub, next, nil
}

// read returns the record and the key it holds, with Get's errors.
func (r *PublicKeyRecord) read(ctx context.Context) (*corev1.ConfigMap, crypto.PublicKey, error) {
	cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, notFound(keys.ErrNotFound, err, "ConfigMap", r.namespace, r.name)
	}
	if err != nil {
		return nil, nil, wrap(err, "reading", "ConfigMap", r.namespace, r.name)
	}
	raw, ok := cm.Data[PublicKeyRecordKey]
	if !ok {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %w: no %s", r.namespace, r.name, keys.ErrMalformed, PublicKeyRecordKey)
	}
	pub, err := keys.ParsePublicKey([]byte(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", r.namespace, r.name, PublicKeyRecordKey, err)
	}
	return cm, pub, nil
}

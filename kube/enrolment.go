package kube

import (
	"context"
	"crypto"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// A provider that peers from Git keeps three objects in its enrolment
// namespace (the controller's own). Only the controller's ServiceAccount
// may write them (the admission policy of config/controller), and only it
// may read the key.
const (
	// EnrolmentKeyName is the Secret of the enrolment key: an Ed25519
	// private key, PKCS#8 PEM under EnrolmentKeyKey. It signs grants and
	// the endpoint's certificates, nothing else.
	EnrolmentKeyName = "kubepact-enrolment-key"
	EnrolmentKeyKey  = "privateKey"
	// EnrolmentNextKeyName is the Secret of the next enrolment key while
	// a rotation overlaps (EnrolmentKeys.EnsureNext), laid out as
	// EnrolmentKeyName; EnrolmentKeys.Promote makes it the enrolment key.
	EnrolmentNextKeyName = "kubepact-enrolment-key-next"
	// EnrolmentNextPublicKeyKey is where a key's record publishes the
	// next key's public half, beside the key's, while a rotation
	// overlaps: what the other cluster commits as its second key. The
	// enrolment key's record and the cluster key's
	// (PublicKeyRecordName) both use it.
	EnrolmentNextPublicKeyKey = "nextPublicKey"
	// EnrolmentPublicKeyRecordName is the ConfigMap that publishes its
	// public half, under PublicKeyRecordKey, as PublicKeyRecordName
	// publishes the cluster key's: what a TrustedProvider commits.
	EnrolmentPublicKeyRecordName = "kubepact-enrolment-public-key"
	// EnrolmentTLSSecretName is the kubernetes.io/tls Secret the enrolment
	// endpoint serves with: its key, and a certificate the enrolment key
	// issued (enrol.ServingCertificate).
	EnrolmentTLSSecretName = "kubepact-enrolment-tls"
)

// NewEnrolmentKeyRecord returns the PublicKeyRecord of the enrolment key
// in namespace, the enrolment namespace.
func NewEnrolmentKeyRecord(client kubernetes.Interface, namespace string) *PublicKeyRecord {
	return &PublicKeyRecord{client: client, namespace: namespace, name: EnrolmentPublicKeyRecordName}
}

// EnrolmentKeys keeps a provider's enrolment key and the enrolment
// endpoint's serving certificate in one namespace.
type EnrolmentKeys struct {
	client    kubernetes.Interface
	namespace string
}

// NewEnrolmentKeys returns the EnrolmentKeys of namespace.
func NewEnrolmentKeys(client kubernetes.Interface, namespace string) *EnrolmentKeys {
	return &EnrolmentKeys{client: client, namespace: namespace}
}

// Ensure returns the enrolment key, making an Ed25519 one with rand when
// there is none. A Secret that does not hold a valid key is an error
// wrapping keys.ErrMalformed: it is never replaced, for consumers commit
// its public half. Where a promotion stopped halfway (the key's Secret
// gone, the next key's still there), the next key becomes the key: a
// fresh one is made only when neither exists.
func (e *EnrolmentKeys) Ensure(ctx context.Context, rand io.Reader) (*keys.PrivateKey, error) {
	k, err := e.read(ctx, EnrolmentKeyName)
	if !errors.Is(err, keys.ErrNotFound) {
		return k, err
	}
	next, err := e.read(ctx, EnrolmentNextKeyName)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return e.create(ctx, EnrolmentKeyName, rand, nil)
	case err != nil:
		return nil, err
	}
	return e.create(ctx, EnrolmentKeyName, rand, next)
}

// EnsureNext returns the next enrolment key, making an Ed25519 one with
// rand when there is none: the first step of a rotation. Its public half
// is published beside the key's (PublicKeyRecord.PublishWithNext), for
// consumers to commit before Promote.
func (e *EnrolmentKeys) EnsureNext(ctx context.Context, rand io.Reader) (*keys.PrivateKey, error) {
	k, err := e.read(ctx, EnrolmentNextKeyName)
	if errors.Is(err, keys.ErrNotFound) {
		return e.create(ctx, EnrolmentNextKeyName, rand, nil)
	}
	return k, err
}

// Next returns the next enrolment key, or nil when no rotation overlaps.
func (e *EnrolmentKeys) Next(ctx context.Context) (*keys.PrivateKey, error) {
	k, err := e.read(ctx, EnrolmentNextKeyName)
	if errors.Is(err, keys.ErrNotFound) {
		return nil, nil
	}
	return k, err
}

// Promote makes the next enrolment key the key, the last step of a
// rotation, and returns the key: the key's Secret is deleted (only the one
// read, by its UID), made again from the next key's, then the next key's
// is deleted. Each step is safe to stop after: Ensure finishes a promotion
// that stopped with the key's Secret gone, and Promote one that stopped
// with both Secrets holding the same key. Without a next key it returns
// the key as it is.
func (e *EnrolmentKeys) Promote(ctx context.Context, rand io.Reader) (*keys.PrivateKey, error) {
	next, err := e.Next(ctx)
	switch {
	case err != nil:
		return nil, err
	case next == nil:
		return e.Ensure(ctx, rand)
	}
	secrets := e.client.CoreV1().Secrets(e.namespace)
	current, err := secrets.Get(ctx, EnrolmentKeyName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, wrap(err, "reading", "Secret", e.namespace, EnrolmentKeyName)
	default:
		k, perr := keys.ParsePrivateKey(current.Data[EnrolmentKeyKey])
		if perr != nil || !keys.Equal(k.Public(), next.Public()) {
			uid := current.UID
			if err := secrets.Delete(ctx, EnrolmentKeyName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
				return nil, wrap(err, "deleting", "Secret", e.namespace, EnrolmentKeyName)
			}
		}
	}
	key, err := e.Ensure(ctx, rand)
	if err != nil {
		return nil, err
	}
	if !keys.Equal(key.Public(), next.Public()) {
		return nil, fmt.Errorf("Secret %s/%s: %w: another key took the place of the next one", e.namespace, EnrolmentKeyName, keys.ErrMalformed)
	}
	if err := secrets.Delete(ctx, EnrolmentNextKeyName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, wrap(err, "deleting", "Secret", e.namespace, EnrolmentNextKeyName)
	}
	return key, nil
}

// read returns the key of the Secret name, an error wrapping
// keys.ErrNotFound when there is none.
func (e *EnrolmentKeys) read(ctx context.Context, name string) (*keys.PrivateKey, error) {
	s, err := e.client.CoreV1().Secrets(e.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(keys.ErrNotFound, err, "Secret", e.namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", e.namespace, name)
	}
	k, err := keys.ParsePrivateKey(s.Data[EnrolmentKeyKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %s: %w", e.namespace, name, EnrolmentKeyKey, err)
	}
	return k, nil
}

// create makes the immutable Secret name holding from, or a new Ed25519
// key made with rand when from is nil, and returns the key it then holds
// (another writer's, when one made it first).
func (e *EnrolmentKeys) create(ctx context.Context, name string, rand io.Reader, from *keys.PrivateKey) (*keys.PrivateKey, error) {
	k := from
	if k == nil {
		var err error
		if k, err = keys.Generate(rand, keys.Ed25519); err != nil {
			return nil, err
		}
	}
	pemBytes, err := keys.MarshalPrivateKey(k)
	if err != nil {
		return nil, err
	}
	immutable := true
	_, err = e.client.CoreV1().Secrets(e.namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": FieldManager}},
		Type:      corev1.SecretTypeOpaque,
		Immutable: &immutable,
		Data:      map[string][]byte{EnrolmentKeyKey: pemBytes},
	}, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		return e.read(ctx, name)
	case err != nil:
		return nil, wrap(err, "creating", "Secret", e.namespace, name)
	}
	return k, nil
}

// EnsureServing keeps the endpoint's serving certificate issued by key,
// for dnsNames: it issues a new one, for a new serving key, when there is
// none, when key did not issue it, or when a third of lifetime is all it
// has left, and applies the Secret with server-side apply.
func (e *EnrolmentKeys) EnsureServing(ctx context.Context, rand io.Reader, key *keys.PrivateKey, providerID string, dnsNames []string,
	now time.Time, lifetime time.Duration) error {
	s, err := e.client.CoreV1().Secrets(e.namespace).Get(ctx, EnrolmentTLSSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return wrap(err, "reading", "Secret", e.namespace, EnrolmentTLSSecretName)
	case servingFresh(s.Data[corev1.TLSCertKey], key, now.Add(lifetime/3)):
		return nil
	}
	serving, err := keys.Generate(rand, keys.Ed25519)
	if err != nil {
		return err
	}
	keyPEM, err := keys.MarshalPrivateKey(serving)
	if err != nil {
		return err
	}
	certPEM, err := enrol.ServingCertificate(rand, key, providerID, serving.Public(), dnsNames, now, lifetime)
	if err != nil {
		return err
	}
	ac := corev1ac.Secret(EnrolmentTLSSecretName, e.namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": FieldManager}).
		WithType(corev1.SecretTypeTLS).
		WithData(map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM})
	if _, err := e.client.CoreV1().Secrets(e.namespace).Apply(ctx, ac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "Secret", e.namespace, EnrolmentTLSSecretName)
	}
	return nil
}

// servingFresh reports whether certPEM is a serving certificate that key
// issued and that is still valid at until.
func servingFresh(certPEM []byte, key *keys.PrivateKey, until time.Time) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	return enrol.VerifyServingCertificate(block.Bytes, []crypto.PublicKey{key.Public()}, until) == nil
}

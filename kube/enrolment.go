package kube

import (
	"context"
	"crypto"
	"encoding/pem"
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
// its public half.
func (e *EnrolmentKeys) Ensure(ctx context.Context, rand io.Reader) (*keys.PrivateKey, error) {
	secrets := e.client.CoreV1().Secrets(e.namespace)
	s, err := secrets.Get(ctx, EnrolmentKeyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		k, genErr := keys.Generate(rand, keys.Ed25519)
		if genErr != nil {
			return nil, genErr
		}
		pemBytes, genErr := keys.MarshalPrivateKey(k)
		if genErr != nil {
			return nil, genErr
		}
		immutable := true
		s, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: EnrolmentKeyName, Namespace: e.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": FieldManager}},
			Type:      corev1.SecretTypeOpaque,
			Immutable: &immutable,
			Data:      map[string][]byte{EnrolmentKeyKey: pemBytes},
		}, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			s, err = secrets.Get(ctx, EnrolmentKeyName, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", e.namespace, EnrolmentKeyName)
	}
	k, err := keys.ParsePrivateKey(s.Data[EnrolmentKeyKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %s: %w", e.namespace, EnrolmentKeyName, EnrolmentKeyKey, err)
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

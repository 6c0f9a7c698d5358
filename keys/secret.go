package keys

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// SecretName is the name of the Secret holding a cluster's key.
	SecretName = "authentication-keys"
	// DefaultNamespace is where Liqo keeps that Secret.
	DefaultNamespace = "liqo"
	// PrivateKeySecretKey is the data key of the PKCS#8 PEM private key.
	PrivateKeySecretKey = "privateKey"
	// PublicKeySecretKey is the data key of the PKIX PEM public key.
	PublicKeySecretKey = "publicKey"
	// AttestationSecretKey is the data key of a Keyring Secret's
	// attestation (Attester).
	AttestationSecretKey = "attestation"
)

// KeyringSecretPrefix prefixes the names of the Secrets of a Keyring.
const KeyringSecretPrefix = "kubepact-key-"

// Secret returns the cluster key Secret that holds k in namespace. Its data
// is secret.
func Secret(namespace string, k *PrivateKey) (*corev1.Secret, error) {
	return namedSecret(namespace, SecretName, k)
}

// KeyringSecret returns the Secret that holds the key named name of a
// Keyring, with its attestation, in namespace. Its data is secret.
func KeyringSecret(namespace, name string, s Stored) (*corev1.Secret, error) {
	sec, err := namedSecret(namespace, KeyringSecretPrefix+name, s.Key)
	if err != nil {
		return nil, err
	}
	if len(s.Attestation) > 0 {
		sec.Data[AttestationSecretKey] = s.Attestation
	}
	return sec, nil
}

// FromKeyringSecret reads what a Keyring Secret holds: the key, as
// FromSecret reads it, and its attestation, unchecked (Attester.Check).
func FromKeyringSecret(sec *corev1.Secret) (Stored, error) {
	k, err := FromSecret(sec)
	if err != nil {
		return Stored{}, err
	}
	return Stored{Key: k, Attestation: sec.Data[AttestationSecretKey]}, nil
}

func namedSecret(namespace, secretName string, k *PrivateKey) (*corev1.Secret, error) {
	priv, err := MarshalPrivateKey(k)
	if err != nil {
		return nil, err
	}
	pub, err := MarshalPublicKey(k.Public())
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{PrivateKeySecretKey: priv, PublicKeySecretKey: pub},
	}, nil
}

// FromSecret reads the private key held by a cluster key Secret. When the
// Secret also holds a public key, it must be the private key's.
func FromSecret(s *corev1.Secret) (*PrivateKey, error) {
	k, err := ParsePrivateKey(s.Data[PrivateKeySecretKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	if pubPEM, ok := s.Data[PublicKeySecretKey]; ok {
		pub, err := ParsePublicKey(pubPEM)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, PublicKeySecretKey, err)
		}
		if !Equal(pub, k.Public()) {
			return nil, fmt.Errorf("secret %s/%s: %w: %s is not the public half of %s", s.Namespace, s.Name, ErrMalformed, PublicKeySecretKey, PrivateKeySecretKey)
		}
	}
	return k, nil
}

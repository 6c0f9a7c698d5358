package nonce

import (
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
)

const (
	// SecretName is the name of the provider's nonce Secret, in the tenant
	// namespace of the consumer.
	SecretName = "liqo-nonce"
	// SecretLabel marks a nonce Secret.
	SecretLabel = "liqo.io/nonce"
	// SecretKey is the data key holding the nonce text.
	SecretKey = "nonce"
	// IssuedAtAnnotation records when the nonce was issued (RFC 3339). A
	// Secret without it, as Liqo writes them, was issued at its creation.
	IssuedAtAnnotation = "kubepact.io/nonce-issued-at"
	// TTLAnnotation records how long the nonce stays valid from its issue
	// (Entry.TTL), as a Go duration ("10m0s"). A Secret without it, as Liqo
	// writes them, is judged by the TTL of whoever reads it.
	TTLAnnotation = "kubepact.io/nonce-ttl"
	// RedeemedByAnnotation records, in standard base64, the digest of the
	// Tenant that redeemed the nonce (Redemption.By).
	RedeemedByAnnotation = "kubepact.io/nonce-redeemed-by"
	// RedeemedAtAnnotation records when the nonce was redeemed (RFC 3339).
	RedeemedAtAnnotation = "kubepact.io/nonce-redeemed-at"
	// RedeemedKeyAnnotation records the fingerprint of the key the
	// redeeming Tenant claimed (Redemption.Key).
	RedeemedKeyAnnotation = "kubepact.io/nonce-redeemed-key"
	// UnpeeredAnnotation records that the Tenant of the redeeming key was
	// accepted and later unpeered, with the fingerprint of the key of the
	// certificate cached for the consumer then (Redemption.Unpeered).
	UnpeeredAnnotation = "kubepact.io/nonce-unpeered"
)

// Secret returns the nonce Secret holding e for consumer clusterID.
func Secret(clusterID string, e Entry) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        SecretName,
			Namespace:   clusterid.TenantNamespace(clusterID),
			Labels:      map[string]string{SecretLabel: "true", clusterid.Label: clusterID},
			Annotations: map[string]string{IssuedAtAnnotation: e.IssuedAt.UTC().Format(time.RFC3339Nano)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{SecretKey: []byte(e.Nonce.Text())},
	}
	if e.TTL > 0 {
		s.Annotations[TTLAnnotation] = e.TTL.String()
	}
	if r := e.Redemption; r != nil {
		s.Annotations[RedeemedByAnnotation] = base64.StdEncoding.EncodeToString(r.By)
		s.Annotations[RedeemedAtAnnotation] = r.At.UTC().Format(time.RFC3339Nano)
		if r.Key != "" {
			s.Annotations[RedeemedKeyAnnotation] = r.Key
		}
		if r.Unpeered != "" {
			s.Annotations[UnpeeredAnnotation] = r.Unpeered
		}
	}
	return s
}

// FromSecret reads the entry held by a nonce Secret. A malformed annotation
// of kubepact's fails it with ErrMalformed: a nonce whose issue time or TTL
// cannot be read is never judged by a guess.
func FromSecret(s *corev1.Secret) (Entry, error) {
	n, err := Parse(string(s.Data[SecretKey]))
	if err != nil {
		return Entry{}, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	issued := s.CreationTimestamp.Time
	if v, ok := s.Annotations[IssuedAtAnnotation]; ok {
		t, err := parseTime(v)
		if err != nil {
			return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s: %w", s.Namespace, s.Name, ErrMalformed, IssuedAtAnnotation, err)
		}
		issued = t
	}
	e := Entry{Nonce: n, IssuedAt: issued}
	if v, ok := s.Annotations[TTLAnnotation]; ok {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl <= 0 {
			return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s is not a positive duration", s.Namespace, s.Name, ErrMalformed, TTLAnnotation)
		}
		e.TTL = ttl
	}
	by, hasBy := s.Annotations[RedeemedByAnnotation]
	at, hasAt := s.Annotations[RedeemedAtAnnotation]
	if !hasBy && !hasAt {
		return e, nil
	}
	digest, err := base64.StdEncoding.Strict().DecodeString(by)
	if err != nil || len(digest) == 0 || len(digest) > MaxRedeemerSize {
		return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s is not base64 of 1 to %d bytes", s.Namespace, s.Name, ErrMalformed, RedeemedByAnnotation, MaxRedeemerSize)
	}
	when, err := parseTime(at)
	if err != nil {
		return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s: %w", s.Namespace, s.Name, ErrMalformed, RedeemedAtAnnotation, err)
	}
	key := s.Annotations[RedeemedKeyAnnotation]
	if len(key) > MaxRedeemerSize {
		return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s longer than %d bytes", s.Namespace, s.Name, ErrMalformed, RedeemedKeyAnnotation, MaxRedeemerSize)
	}
	unpeered := s.Annotations[UnpeeredAnnotation]
	if len(unpeered) > MaxRedeemerSize || (unpeered != "" && key == "") {
		return Entry{}, fmt.Errorf("secret %s/%s: %w: annotation %s longer than %d bytes, or without %s", s.Namespace, s.Name, ErrMalformed, UnpeeredAnnotation, MaxRedeemerSize, RedeemedKeyAnnotation)
	}
	e.Redemption = &Redemption{By: digest, Key: key, At: when, Unpeered: unpeered}
	return e, nil
}

// parseTime parses an RFC 3339 time that Secret can write back.
func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if y := t.UTC().Year(); err == nil && (y < 0 || y > 9999) {
		// Secret could not write it back: RFC 3339 has four-digit years.
		err = fmt.Errorf("year %d in UTC", y)
	}
	return t, err
}

const (
	// SignedSecretName is the name of the consumer's signed-nonce Secret, in
	// its tenant namespace for the provider.
	SignedSecretName = "liqo-signed-nonce"
	// SignedSecretLabel marks a signed-nonce Secret.
	SignedSecretLabel = "liqo.io/signed-nonce"
	// SignedSecretKey is the data key holding the raw signature.
	SignedSecretKey = "signedNonce"
)

// SignedSecret returns the Secret in which a consumer records the nonce n of
// provider providerID and its signature sig over it, as Liqo consumers do.
func SignedSecret(providerID string, n Nonce, sig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      SignedSecretName,
			Namespace: clusterid.TenantNamespace(providerID),
			Labels:    map[string]string{SignedSecretLabel: "true", clusterid.Label: providerID},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{SecretKey: []byte(n.Text()), SignedSecretKey: append([]byte(nil), sig...)},
	}
}

// FromSignedSecret reads the nonce and signature recorded in a signed-nonce
// Secret.
func FromSignedSecret(s *corev1.Secret) (Nonce, []byte, error) {
	n, err := Parse(string(s.Data[SecretKey]))
	if err != nil {
		return Nonce{}, nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	sig := s.Data[SignedSecretKey]
	if len(sig) == 0 {
		return Nonce{}, nil, fmt.Errorf("secret %s/%s: %w: no %s", s.Namespace, s.Name, ErrMalformed, SignedSecretKey)
	}
	return n, append([]byte(nil), sig...), nil
}

package authtoken

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names, keys and labels of the token Secrets, as Liqo v0.2–v0.10 use them.
const (
	// DefaultNamespace is the Liqo namespace, home of both Secrets.
	DefaultNamespace = "liqo"
	// SecretName is the provider's token Secret.
	SecretName = "auth-token"
	// DataKey holds the token's text in both Secrets.
	DataKey = "token"
	// RemoteSecretPrefix begins the name of the consumer's Secret holding a
	// provider's token: "remote-token-<providerID>".
	RemoteSecretPrefix = "remote-token-"
	// ClusterIDLabel names the provider on a remote token Secret.
	ClusterIDLabel = "discovery.liqo.io/cluster-id"
	// AuthTokenLabel, with an empty value, marks a remote token Secret.
	AuthTokenLabel = "discovery.liqo.io/auth-token"
	// StatusAnnotation, on a remote token Secret, holds the Status of the
	// consumer's authentication with that provider.
	StatusAnnotation = "kubepact.io/authentication-status"
)

// Status is where a consumer stands with a provider, as Liqo's consumers
// report it.
type Status string

// The statuses of a consumer's authentication with a provider.
const (
	// StatusNone: the consumer has not tried yet.
	StatusNone Status = "None"
	// StatusPending: the consumer's key is stored and its request sent, or
	// about to be, with no answer yet.
	StatusPending Status = "Pending"
	// StatusEstablished: the identity is stored and its kubeconfig Secret
	// written.
	StatusEstablished Status = "Established"
	// StatusDenied: the provider refused the token or the request.
	StatusDenied Status = "Denied"
	// StatusEmptyDenied: the consumer holds no token and the provider, which
	// requires one, refused it.
	StatusEmptyDenied Status = "EmptyDenied"
)

// Secret returns the provider's token Secret in namespace.
func Secret(namespace string, t Token) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{DataKey: []byte(t.Reveal())},
	}
}

// FromSecret returns the token a Secret holds in its DataKey.
func FromSecret(s *corev1.Secret) (Token, error) {
	if s == nil {
		return Token{}, fmt.Errorf("%w: no Secret", ErrMalformed)
	}
	t, err := Parse(string(s.Data[DataKey]))
	if err != nil {
		return Token{}, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return t, nil
}

// RemoteSecretName is the name of the consumer's Secret holding the token of
// providerID.
func RemoteSecretName(providerID string) string { return RemoteSecretPrefix + providerID }

// Remote is what a consumer keeps about one provider: its token, which is
// zero for a provider that accepts an empty one, and the Status.
type Remote struct {
	ProviderID string
	Token      Token
	Status     Status
}

// RemoteSecret returns the consumer's Secret for r in namespace, with Liqo's
// labels and the status annotation.
func RemoteSecret(namespace string, r Remote) *corev1.Secret {
	status := r.Status
	if status == "" {
		status = StatusNone
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RemoteSecretName(r.ProviderID),
			Namespace:   namespace,
			Labels:      map[string]string{ClusterIDLabel: r.ProviderID, AuthTokenLabel: ""},
			Annotations: map[string]string{StatusAnnotation: string(status)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{DataKey: []byte(r.Token.Reveal())},
	}
}

// ParseRemoteSecret reads a Secret written by RemoteSecret. An empty token
// is the zero Token; a Secret without the annotation has StatusNone.
func ParseRemoteSecret(s *corev1.Secret) (Remote, error) {
	if s == nil {
		return Remote{}, fmt.Errorf("%w: no Secret", ErrMalformed)
	}
	r := Remote{ProviderID: s.Labels[ClusterIDLabel], Status: Status(s.Annotations[StatusAnnotation])}
	if r.Status == "" {
		r.Status = StatusNone
	}
	if text := string(s.Data[DataKey]); text != "" {
		t, err := Parse(text)
		if err != nil {
			return Remote{}, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		r.Token = t
	}
	return r, nil
}

// Secrets reads and writes a cluster's Secrets: the consumer's remote token
// and remote identity Secrets.
//
// Get returns the Secret namespace/name or an error wrapping ErrNotFound.
// Apply creates s or brings the stored Secret up to it, as kubepact's field
// manager: what others set on the Secret stays. Implementations are safe for
// concurrent use and return copies.
type Secrets interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	Apply(ctx context.Context, s *corev1.Secret) error
}

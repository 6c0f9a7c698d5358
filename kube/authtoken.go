package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/authtoken"
)

// TokenStore is an authtoken.Store over the provider's "auth-token" Secret
// in one namespace (the Liqo namespace).
type TokenStore struct {
	client    kubernetes.Interface
	namespace string
}

var _ authtoken.Store = (*TokenStore)(nil)

// NewTokenStore returns a TokenStore keeping the token in namespace.
func NewTokenStore(client kubernetes.Interface, namespace string) *TokenStore {
	return &TokenStore{client: client, namespace: namespace}
}

// Get reads the token. It is one GET: a server that calls it on each
// request sees a rotation at once.
func (s *TokenStore) Get(ctx context.Context) (authtoken.Token, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, authtoken.SecretName, metav1.GetOptions{})
	if isObjectNotFound(err, authtoken.SecretName) {
		return authtoken.Token{}, notFound(authtoken.ErrNotFound, err, "Secret", s.namespace, authtoken.SecretName)
	}
	if err != nil {
		return authtoken.Token{}, wrap(err, "reading", "Secret", s.namespace, authtoken.SecretName)
	}
	return authtoken.FromSecret(sec)
}

// Create stores t unless the Secret exists, creating the namespace if needed.
func (s *TokenStore) Create(ctx context.Context, t authtoken.Token) error {
	if err := s.ensureNamespace(ctx); err != nil {
		return err
	}
	_, err := s.client.CoreV1().Secrets(s.namespace).Create(ctx, authtoken.Secret(s.namespace, t),
		metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return notFound(authtoken.ErrExists, err, "Secret", s.namespace, authtoken.SecretName)
	}
	if err != nil {
		return wrap(err, "creating", "Secret", s.namespace, authtoken.SecretName)
	}
	return nil
}

// Replace applies t over the stored Secret with server-side apply; labels
// and annotations others set stay.
func (s *TokenStore) Replace(ctx context.Context, t authtoken.Token) error {
	if err := s.ensureNamespace(ctx); err != nil {
		return err
	}
	return applySecret(ctx, s.client, authtoken.Secret(s.namespace, t))
}

func (s *TokenStore) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrap(err, "creating", "Namespace", "", s.namespace)
	}
	return nil
}

// Secrets is an authtoken.Secrets over the API server.
type Secrets struct{ client kubernetes.Interface }

var _ authtoken.Secrets = (*Secrets)(nil)

// NewSecrets returns a Secrets using client.
func NewSecrets(client kubernetes.Interface) *Secrets { return &Secrets{client: client} }

// Get reads the Secret namespace/name.
func (s *Secrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if isObjectNotFound(err, name) {
		return nil, notFound(authtoken.ErrNotFound, err, "Secret", namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", "Secret", namespace, name)
	}
	return sec, nil
}

// Apply creates sec or brings the stored Secret up to it with server-side
// apply as FieldManager.
func (s *Secrets) Apply(ctx context.Context, sec *corev1.Secret) error {
	return applySecret(ctx, s.client, sec)
}

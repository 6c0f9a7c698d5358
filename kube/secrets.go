package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/kubeconfig"
)

// isObjectNotFound reports whether err says that the object name does not
// exist. A not-found for the resource type itself, as when a CRD is not
// installed, names no object and is not one: treating it as "absent" would
// let a caller act as if nothing had been stored yet.
func isObjectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

// notFound wraps an API not-found error with the port's sentinel.
func notFound(sentinel, err error, kind, namespace, name string) error {
	return fmt.Errorf("%w: %s %s/%s: %w", sentinel, kind, namespace, name, err)
}

func wrap(err error, verb, kind, namespace, name string) error {
	if namespace == "" {
		return fmt.Errorf("%s %s %s: %w", verb, kind, name, err)
	}
	return fmt.Errorf("%s %s %s/%s: %w", verb, kind, namespace, name, err)
}

// applySecret applies want with server-side apply as FieldManager: kubepact
// owns want's type, data, labels, annotations and owner references, and a
// key it applied before and want no longer has goes. What others set on the
// Secret stays. A Secret of another type is deleted, exactly as read, and
// applied again: a Secret's type is immutable.
func applySecret(ctx context.Context, c kubernetes.Interface, want *corev1.Secret) error {
	_, err := applySecretStored(ctx, c, want)
	return err
}

// applySecretStored is applySecret, returning the Secret as stored.
func applySecretStored(ctx context.Context, c kubernetes.Interface, want *corev1.Secret) (*corev1.Secret, error) {
	secrets := c.CoreV1().Secrets(want.Namespace)
	ac := corev1ac.Secret(want.Name, want.Namespace).WithType(want.Type).
		WithLabels(want.Labels).WithAnnotations(want.Annotations).
		WithOwnerReferences(ownerReferences(want.OwnerReferences)...).WithData(want.Data)
	var stored *corev1.Secret
	err := retryOnConflict(ctx, func() error {
		var err error
		stored, err = secrets.Apply(ctx, ac, applyOptions(true))
		if !apierrors.IsInvalid(err) {
			return err
		}
		cur, gerr := secrets.Get(ctx, want.Name, metav1.GetOptions{})
		if gerr != nil || cur.Type == want.Type {
			return err
		}
		derr := secrets.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if derr != nil && !apierrors.IsNotFound(derr) {
			return derr
		}
		return apierrors.NewConflict(corev1.Resource("secrets"), want.Name, errors.New("type changed"))
	})
	if err != nil {
		return nil, wrap(err, "writing", "Secret", want.Namespace, want.Name)
	}
	return stored, nil
}

func deleteSecret(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	err := c.CoreV1().Secrets(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "Secret", namespace, name)
	}
	return nil
}

// SecretWriter is a kubeconfig.SecretWriter over the API server.
type SecretWriter struct{ client kubernetes.Interface }

var _ kubeconfig.SecretWriter = (*SecretWriter)(nil)

// NewSecretWriter returns a SecretWriter using client.
func NewSecretWriter(client kubernetes.Interface) *SecretWriter { return &SecretWriter{client: client} }

// Write creates s or brings the stored Secret up to it.
func (w *SecretWriter) Write(ctx context.Context, s *corev1.Secret) error {
	return applySecret(ctx, w.client, s)
}

// Delete removes the Secret namespace/name.
func (w *SecretWriter) Delete(ctx context.Context, namespace, name string) error {
	return deleteSecret(ctx, w.client, namespace, name)
}

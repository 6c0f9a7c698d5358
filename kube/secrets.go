package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// applySecret creates want, or updates the Secret of the same name so that
// its type, labels, annotations, owner references and data equal want's.
// It sends no update when they already do.
func applySecret(ctx context.Context, c kubernetes.Interface, want *corev1.Secret) error {
	secrets := c.CoreV1().Secrets(want.Namespace)
	// Most Secrets kubepact writes are new: try to create first.
	_, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return wrap(err, "writing", "Secret", want.Namespace, want.Name)
		}
		return nil
	}
	err = retryOnConflict(ctx, func() error {
		cur, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Lost a race with another writer: retry as an update.
				return apierrors.NewConflict(corev1.Resource("secrets"), want.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if secretMatches(cur, want) {
			return nil
		}
		next := cur.DeepCopy()
		next.Type = want.Type
		next.Labels = maps.Clone(want.Labels)
		next.Annotations = maps.Clone(want.Annotations)
		next.OwnerReferences = want.OwnerReferences
		next.Data = want.Data
		next.StringData = nil
		if next.Type != cur.Type {
			// A Secret's type is immutable: replace it.
			if err := secrets.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return apierrors.NewConflict(corev1.Resource("secrets"), want.Name, errors.New("type changed"))
		}
		_, err = secrets.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return wrap(err, "writing", "Secret", want.Namespace, want.Name)
	}
	return nil
}

func secretMatches(cur, want *corev1.Secret) bool {
	return cur.Type == want.Type &&
		maps.Equal(cur.Labels, want.Labels) &&
		maps.Equal(cur.Annotations, want.Annotations) &&
		reflect.DeepEqual(cur.OwnerReferences, want.OwnerReferences) &&
		len(cur.Data) == len(want.Data) &&
		maps.EqualFunc(cur.Data, want.Data, func(a, b []byte) bool { return string(a) == string(b) })
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

package kube

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/tenant"
)

// Namespaces is a tenant.Namespaces over the API server.
type Namespaces struct {
	client kubernetes.Interface
	// onCreate are labels set on the namespaces it creates only.
	onCreate map[string]string
}

var _ tenant.Namespaces = (*Namespaces)(nil)

// NewNamespaces returns a Namespaces using client.
func NewNamespaces(client kubernetes.Interface) *Namespaces { return &Namespaces{client: client} }

// WithCreateLabels returns a Namespaces that also sets labels on the
// namespaces it creates, and never on one that exists: an administrator's
// labels stay theirs, and an admission policy may forbid changing them (as
// kubepact-controller's does for pod-security.kubernetes.io/*).
func (n *Namespaces) WithCreateLabels(labels map[string]string) *Namespaces {
	return &Namespaces{client: n.client, onCreate: maps.Clone(labels)}
}

// Ensure creates ns, with the labels of WithCreateLabels, or adds ns's
// labels to the existing namespace.
func (n *Namespaces) Ensure(ctx context.Context, ns *corev1.Namespace) error {
	api := n.client.CoreV1().Namespaces()
	if len(n.onCreate) > 0 {
		created := ns.DeepCopy()
		if created.Labels == nil {
			created.Labels = map[string]string{}
		}
		for k, v := range n.onCreate {
			if _, set := created.Labels[k]; !set {
				created.Labels[k] = v
			}
		}
		ns = created
	}
	_, err := api.Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return wrap(err, "ensuring", "Namespace", "", ns.Name)
		}
		return nil
	}
	err = retryOnConflict(ctx, func() error {
		cur, err := api.Get(ctx, ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, ns, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("namespaces"), ns.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		merged := maps.Clone(cur.Labels)
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range ns.Labels {
			if _, onCreate := n.onCreate[k]; !onCreate {
				merged[k] = v
			}
		}
		if maps.Equal(merged, cur.Labels) {
			return nil
		}
		next := cur.DeepCopy()
		next.Labels = merged
		_, err = api.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return wrap(err, "ensuring", "Namespace", "", ns.Name)
	}
	return nil
}

// Delete removes the namespace name.
func (n *Namespaces) Delete(ctx context.Context, name string) error {
	err := n.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "Namespace", "", name)
	}
	return nil
}

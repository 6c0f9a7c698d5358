package kube

import (
	"context"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/tenant"
)

// Namespaces is a tenant.Namespaces over the API server.
type Namespaces struct {
	client kubernetes.Interface
	// onCreate are labels set on the namespaces it creates only.
	onCreate map[string]string
	// readFirst reads the namespace before it creates it.
	readFirst bool
	// reader, when set, is looked at before anything else (WithReader).
	reader ctrlclient.Reader
}

var _ tenant.Namespaces = (*Namespaces)(nil)

// NewNamespaces returns a Namespaces using client.
func NewNamespaces(client kubernetes.Interface) *Namespaces { return &Namespaces{client: client} }

// WithCreateLabels returns a Namespaces that also sets labels on the
// namespaces it creates, and never on one that exists: an administrator's
// labels stay theirs, and an admission policy may forbid changing them (as
// kubepact-controller's does for pod-security.kubernetes.io/*).
func (n *Namespaces) WithCreateLabels(labels map[string]string) *Namespaces {
	c := *n
	c.onCreate = maps.Clone(labels)
	return &c
}

// WithReadFirst returns a Namespaces whose Ensure reads the namespace
// before it creates it, for callers that usually find it, such as a
// controller answering objects in it: one request instead of two when it
// exists with ns's labels, one more when it does not.
func (n *Namespaces) WithReadFirst() *Namespaces {
	c := *n
	c.readFirst = true
	return &c
}

// WithReader returns a Namespaces whose Ensure first looks for the
// namespace in r, such as the cache of a controller's manager, reading
// its metadata only (metav1.PartialObjectMetadata): a namespace found
// there with ns's labels costs no request. A namespace missing from r,
// or lacking one of the labels there, is decided on the API server as
// without r.
func (n *Namespaces) WithReader(r ctrlclient.Reader) *Namespaces {
	c := *n
	c.reader = r
	return &c
}

// Ensure creates ns, with the labels of WithCreateLabels, or adds ns's
// labels to the existing namespace, provided it is already what ns claims
// to be. A tenant namespace ("liqo-tenant-<ID>") that exists without the
// labels Liqo and kubepact give one (liqo.io/tenant-namespace: "true" and
// liqo.io/remote-cluster-id: <ID>, see tenant.CheckNamespace) was made by
// someone else, who may hold rights in it that would reach what kubepact
// keeps there: Ensure refuses it with an error wrapping the
// *tenant.NamespaceError that names it and the label it lacks
// (tenant.ErrNotTenantNamespace), and changes nothing. Only a namespace
// creator who can also set those labels gets past this; an admission
// policy stops that one (config/signed-nonce-policy).
func (n *Namespaces) Ensure(ctx context.Context, ns *corev1.Namespace) error {
	if n.cached(ctx, ns) {
		return nil
	}
	if n.readFirst {
		done, err := n.present(ctx, ns)
		if err != nil {
			return wrap(err, "ensuring", "Namespace", "", ns.Name)
		}
		if done {
			return nil
		}
	}
	ns = n.withCreateLabels(ns)
	_, err := n.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retryOnConflict(ctx, func() error { return n.adopt(ctx, ns) })
	}
	if err != nil {
		return wrap(err, "ensuring", "Namespace", "", ns.Name)
	}
	return nil
}

// cached reports whether n's reader holds ns, adoptable and with its
// labels: then Ensure has nothing to do and makes no request.
func (n *Namespaces) cached(ctx context.Context, ns *corev1.Namespace) bool {
	if n.reader == nil {
		return false
	}
	cur := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	return n.reader.Get(ctx, ctrlclient.ObjectKey{Name: ns.Name}, cur) == nil && adoptable(ns.Name, cur.Labels) == nil && hasLabels(cur.Labels, ns.Labels, n.onCreate)
}

// present reads ns on the API server and reports whether it exists with
// its labels. An existing namespace that is not adoptable is refused with
// adoptable's error; a missing one is no error.
func (n *Namespaces) present(ctx context.Context, ns *corev1.Namespace) (bool, error) {
	cur, err := n.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := adoptable(ns.Name, cur.Labels); err != nil {
		return false, err
	}
	return hasLabels(cur.Labels, ns.Labels, n.onCreate), nil
}

// withCreateLabels returns ns with the labels of WithCreateLabels that ns
// does not set itself, or ns unchanged when there are none.
func (n *Namespaces) withCreateLabels(ns *corev1.Namespace) *corev1.Namespace {
	if len(n.onCreate) == 0 {
		return ns
	}
	created := ns.DeepCopy()
	if created.Labels == nil {
		created.Labels = map[string]string{}
	}
	for k, v := range n.onCreate {
		if _, set := created.Labels[k]; !set {
			created.Labels[k] = v
		}
	}
	return created
}

// adopt adds ns's labels, but those of WithCreateLabels, to the existing
// namespace, provided it is adoptable; it creates ns if it is gone. It
// returns a conflict, for retryOnConflict to run it again, when the
// namespace changed under it.
func (n *Namespaces) adopt(ctx context.Context, ns *corev1.Namespace) error {
	api := n.client.CoreV1().Namespaces()
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
	if err := adoptable(ns.Name, cur.Labels); err != nil {
		return err
	}
	merged := mergeLabels(cur.Labels, ns.Labels, n.onCreate)
	if maps.Equal(merged, cur.Labels) {
		return nil
	}
	next := cur.DeepCopy()
	next.Labels = merged
	// The update carries cur's resourceVersion: labels taken away
	// since the check make it conflict, and the check runs again.
	_, err = api.Update(ctx, next, metav1.UpdateOptions{})
	return err
}

// mergeLabels returns a copy of have with every label of want but those of
// onCreate, which are set on creation only.
func mergeLabels(have, want, onCreate map[string]string) map[string]string {
	merged := maps.Clone(have)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range want {
		if _, created := onCreate[k]; !created {
			merged[k] = v
		}
	}
	return merged
}

// adoptable returns nil when an existing namespace called name with labels
// may be taken for the namespace Ensure was asked for: it is no tenant
// namespace, or it carries the labels of the tenant namespace of the
// cluster its name is for. Otherwise it returns tenant.CheckNamespace's
// *tenant.NamespaceError (or, for a name that holds no valid cluster ID,
// an error wrapping clusterid.ErrInvalid).
func adoptable(name string, labels map[string]string) error {
	remoteID, ok := strings.CutPrefix(name, clusterid.TenantNamespacePrefix)
	if !ok {
		return nil
	}
	return tenant.CheckNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, remoteID)
}

// hasLabels reports whether have holds every label of want but those of
// onCreate, which are set on creation only.
func hasLabels(have, want, onCreate map[string]string) bool {
	for k, v := range want {
		if _, created := onCreate[k]; created {
			continue
		}
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Delete removes the namespace name.
func (n *Namespaces) Delete(ctx context.Context, name string) error {
	err := n.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "Namespace", "", name)
	}
	return nil
}

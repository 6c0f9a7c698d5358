package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/tenant"
)

var (
	_ lifecycle.Conditions  = (*TenantStore)(nil)
	_ lifecycle.Slices      = (*TenantSlices)(nil)
	_ lifecycle.Bindings    = (*RBAC)(nil)
	_ lifecycle.Revocations = (*Revocations)(nil)
)

// NamespaceMapResource is Liqo's offloading.liqo.io NamespaceMaps, which a
// drain deletes where the API server serves them.
var NamespaceMapResource = schema.GroupVersionResource{Group: "offloading.liqo.io", Version: "v1beta1", Resource: "namespacemaps"}

// NewLifecyclePorts returns the lifecycle ports of a provider over the API
// server of client and c, an uncached client whose scheme knows the
// authentication.liqo.io/v1beta1 types (see NewClient). They need, besides what the handshake
// needs: patch on tenants; list, patch and deletecollection on
// resourceslices and namespacemaps; list and delete on rolebindings and
// clusterrolebindings; get, patch and delete on configmaps in tenant
// namespaces.
func NewLifecyclePorts(client kubernetes.Interface, c ctrlclient.Client) lifecycle.Ports {
	return lifecycle.Ports{
		Conditions:  NewTenantStore(c),
		Slices:      NewTenantSlices(c),
		Bindings:    NewRBAC(client),
		Revocations: NewRevocations(client),
	}
}

// SetCondition sets spec.tenantCondition of t's Tenant with a merge patch
// that carries t's resourceVersion, so the API server refuses it (an error
// wrapping lifecycle.ErrConflict) when the Tenant changed since t was read.
// A condition is an administrative transition that must see the condition
// it leaves, which a server-side apply, blind to what it replaces, cannot;
// the field is written as an administrator's kubectl edit writes it, under
// FieldManager.
func (s *TenantStore) SetCondition(ctx context.Context, t *authv1beta1.Tenant, c authv1beta1.TenantCondition) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": t.ResourceVersion},
		"spec":     map[string]any{"tenantCondition": c},
	})
	if err != nil {
		return err
	}
	target := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}}
	err = s.crd.client.Patch(ctx, target, ctrlclient.RawPatch(types.MergePatchType, patch), ctrlclient.FieldOwner(FieldManager))
	switch {
	case err == nil:
		return nil
	case isObjectNotFound(err, t.Name):
		return notFound(tenant.ErrNotFound, err, authv1beta1.TenantKind, t.Namespace, t.Name)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", lifecycle.ErrConflict, wrap(err, "setting the condition of", authv1beta1.TenantKind, t.Namespace, t.Name))
	}
	return wrap(err, "setting the condition of", authv1beta1.TenantKind, t.Namespace, t.Name)
}

// TenantSlices is a lifecycle.Slices over the API server.
type TenantSlices struct{ client ctrlclient.Client }

// NewTenantSlices returns a TenantSlices using c, a client whose scheme
// knows the authentication.liqo.io/v1beta1 types (see NewClient). c may
// list from a cache, as a manager's client does, in a controller that
// watches ResourceSlices and enforces the condition again when one appears:
// SetCordoned patches what it lists, and DeleteAll deletes on the server.
func NewTenantSlices(c ctrlclient.Client) *TenantSlices { return &TenantSlices{client: c} }

// SetCordoned adds or removes lifecycle.CordonAnnotation on every
// ResourceSlice in namespace with a merge patch of that annotation alone,
// so nothing else of the slice is touched. A merge patch, unlike a
// server-side apply, never creates a slice deleted since it was listed.
func (s *TenantSlices) SetCordoned(ctx context.Context, namespace string, cordoned bool) error {
	var l authv1beta1.ResourceSliceList
	if err := s.client.List(ctx, &l, ctrlclient.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing ResourceSlices in %s: %w", namespace, err)
	}
	var value any // null removes the annotation
	if cordoned {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{lifecycle.CordonAnnotation: value}}})
	if err != nil {
		return err
	}
	for i := range l.Items {
		item := &l.Items[i]
		if v, ok := item.GetAnnotations()[lifecycle.CordonAnnotation]; ok == cordoned && (!ok || v == "true") {
			continue
		}
		err := s.client.Patch(ctx, item, ctrlclient.RawPatch(types.MergePatchType, patch), ctrlclient.FieldOwner(FieldManager))
		if err != nil && !apierrors.IsNotFound(err) {
			return wrap(err, "annotating", authv1beta1.ResourceSliceKind, namespace, item.GetName())
		}
	}
	return nil
}

// DeleteAll deletes every ResourceSlice in namespace and, when the API
// server serves them, every NamespaceMap: a kind the client cannot map,
// or a NotFound from the collection, means the resource is not served, and
// there is nothing to delete.
func (s *TenantSlices) DeleteAll(ctx context.Context, namespace string) error {
	maps := &unstructured.Unstructured{}
	maps.SetGroupVersionKind(NamespaceMapResource.GroupVersion().WithKind("NamespaceMap"))
	for _, obj := range []ctrlclient.Object{&authv1beta1.ResourceSlice{}, maps} {
		err := s.client.DeleteAllOf(ctx, obj, ctrlclient.InNamespace(namespace))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting the %T in %s: %w", obj, namespace, err)
		}
	}
	return nil
}

// ListBindings returns the RoleBindings, in every namespace, and the
// ClusterRoleBindings labelled for consumerID.
func (a *RBAC) ListBindings(ctx context.Context, consumerID string) ([]lifecycle.Binding, error) {
	opts := metav1.ListOptions{LabelSelector: labels.Set{clusterid.Label: consumerID}.String()}
	crbs, err := a.client.RbacV1().ClusterRoleBindings().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterRoleBindings of %s: %w", consumerID, err)
	}
	rbs, err := a.client.RbacV1().RoleBindings("").List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing RoleBindings of %s: %w", consumerID, err)
	}
	out := make([]lifecycle.Binding, 0, len(crbs.Items)+len(rbs.Items))
	for _, b := range crbs.Items {
		out = append(out, lifecycle.Binding{Name: b.Name, UID: b.UID, Labels: b.Labels, Subjects: b.Subjects})
	}
	for _, b := range rbs.Items {
		out = append(out, lifecycle.Binding{Namespace: b.Namespace, Name: b.Name, UID: b.UID, Labels: b.Labels, Subjects: b.Subjects})
	}
	return out, nil
}

// DeleteBinding deletes b with a UID precondition: a binding created under
// its name since it was listed is not deleted.
func (a *RBAC) DeleteBinding(ctx context.Context, b lifecycle.Binding) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &b.UID}}
	var err error
	kind := "RoleBinding"
	if b.Namespace == "" {
		kind = "ClusterRoleBinding"
		err = a.client.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, opts)
	} else {
		err = a.client.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, opts)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return wrap(err, "deleting", kind, b.Namespace, b.Name)
	}
	return nil
}

// Revocation records are ConfigMaps named RevocationName in the tenant
// namespace of their consumer, labelled clusterid.Label with the consumer's
// ID and RevocationLabel "true", with data keys RevocationUntilKey (RFC
// 3339) and RevocationReasonKey. Get reads a record by its name, whatever
// its labels, so a record written by hand without them still counts; a
// cache that WithReader reads must select the records by name too (see
// controllers.CacheOptions), not by label.
const (
	RevocationName      = "kubepact-revocation"
	RevocationLabel     = "kubepact.io/revocation"
	RevocationUntilKey  = "until"
	RevocationReasonKey = "reason"
)

// errMalformedRevocation reports a record that does not parse: Get fails
// with it, so a provider refuses to bind rather than ignore the record.
var errMalformedRevocation = errors.New("malformed revocation record")

// Revocations is a lifecycle.Revocations over ConfigMaps.
type Revocations struct {
	client kubernetes.Interface
	reader ctrlclient.Reader // Get's, when set (WithReader)
}

// NewRevocations returns Revocations using client.
func NewRevocations(client kubernetes.Interface) *Revocations { return &Revocations{client: client} }

// WithReader returns Revocations whose Get reads r, such as a controller's
// cache of the ConfigMaps named RevocationName, which the records are;
// Put and Delete still write through rv's client.
func (rv *Revocations) WithReader(r ctrlclient.Reader) *Revocations {
	return &Revocations{client: rv.client, reader: r}
}

func (rv *Revocations) get(ctx context.Context, namespace string) (*corev1.ConfigMap, error) {
	if rv.reader == nil {
		return rv.client.CoreV1().ConfigMaps(namespace).Get(ctx, RevocationName, metav1.GetOptions{})
	}
	cm := &corev1.ConfigMap{}
	return cm, rv.reader.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: RevocationName}, cm)
}

// Get returns the record of consumerID. A record that does not parse is
// an error, not a missing record.
func (r *Revocations) Get(ctx context.Context, consumerID string) (lifecycle.Revocation, error) {
	ns := clusterid.TenantNamespace(consumerID)
	cm, err := r.get(ctx, ns)
	if apierrors.IsNotFound(err) {
		return lifecycle.Revocation{}, notFound(lifecycle.ErrNotFound, err, "ConfigMap", ns, RevocationName)
	}
	if err != nil {
		return lifecycle.Revocation{}, wrap(err, "reading", "ConfigMap", ns, RevocationName)
	}
	until, err := time.Parse(time.RFC3339, cm.Data[RevocationUntilKey])
	if err != nil {
		return lifecycle.Revocation{}, fmt.Errorf("ConfigMap %s/%s: %w: %s is not an RFC 3339 time", ns, RevocationName, errMalformedRevocation, RevocationUntilKey)
	}
	return lifecycle.Revocation{ConsumerID: consumerID, Until: until, Reason: cm.Data[RevocationReasonKey]}, nil
}

// Put applies the record of rec.ConsumerID with server-side apply.
func (r *Revocations) Put(ctx context.Context, rec lifecycle.Revocation) error {
	ns := clusterid.TenantNamespace(rec.ConsumerID)
	ac := corev1ac.ConfigMap(RevocationName, ns).
		WithLabels(map[string]string{clusterid.Label: rec.ConsumerID, RevocationLabel: "true"}).
		WithData(map[string]string{RevocationUntilKey: rec.Until.UTC().Format(time.RFC3339), RevocationReasonKey: rec.Reason})
	if _, err := r.client.CoreV1().ConfigMaps(ns).Apply(ctx, ac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ConfigMap", ns, RevocationName)
	}
	return nil
}

// Delete deletes the record of consumerID.
func (r *Revocations) Delete(ctx context.Context, consumerID string) error {
	ns := clusterid.TenantNamespace(consumerID)
	err := r.client.CoreV1().ConfigMaps(ns).Delete(ctx, RevocationName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", "ConfigMap", ns, RevocationName)
	}
	return nil
}

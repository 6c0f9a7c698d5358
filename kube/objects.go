package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/tenant"
)

// object is an authentication.liqo.io object: Tenant or Identity.
type object[T any] interface {
	*T
	metav1.Object
	runtime.Object
	DeepCopy() *T
}

// objectStore reads and writes one kind of authentication.liqo.io object.
type objectStore[T any, P object[T]] struct {
	client   dynamic.Interface
	resource schema.GroupVersionResource
	kind     string
	notFound error
	// status points into an object.
	status func(P) any
	// finalizer, when set, is kubepact's finalizer on the objects, which
	// delete removes.
	finalizer string
}

func (c *objectStore[T, P]) api(namespace string) dynamic.ResourceInterface {
	return c.client.Resource(c.resource).Namespace(namespace)
}

func (c *objectStore[T, P]) decode(u *unstructured.Unstructured) (P, error) {
	obj := P(new(T))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("decoding %s %s/%s: %w", c.kind, u.GetNamespace(), u.GetName(), err)
	}
	return obj, nil
}

func (c *objectStore[T, P]) encode(obj P) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", c.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(c.kind)
	return u, nil
}

func (c *objectStore[T, P]) get(ctx context.Context, namespace, name string) (P, error) {
	u, err := c.api(namespace).Get(ctx, name, metav1.GetOptions{})
	if isObjectNotFound(err, name) {
		return nil, notFound(c.notFound, err, c.kind, namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", c.kind, namespace, name)
	}
	return c.decode(u)
}

func (c *objectStore[T, P]) list(ctx context.Context, namespace string) ([]P, error) {
	l, err := c.api(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", c.kind, namespace, err)
	}
	out := make([]P, 0, len(l.Items))
	for i := range l.Items {
		obj, err := c.decode(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	slices.SortFunc(out, func(a, b P) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// apply applies want with server-side apply as FieldManager, taking over
// its spec and its labels, annotations, finalizers and owner references;
// when want's status is not zero it also applies the status, through the
// status subresource. What others set on the object stays. It returns what
// is stored.
func (c *objectStore[T, P]) apply(ctx context.Context, want P) (P, error) {
	u, err := c.encode(want)
	if err != nil {
		return nil, err
	}
	pruneServerFields(u)
	delete(u.Object, "status")
	api := c.api(want.GetNamespace())
	applied, err := api.Apply(ctx, want.GetName(), u, applyOptions(true))
	if err == nil && !equality.Semantic.DeepEqual(c.status(want), c.status(new(T))) {
		var status *unstructured.Unstructured
		if status, err = c.statusOnly(want); err == nil {
			applied, err = api.ApplyStatus(ctx, want.GetName(), status, applyOptions(true))
		}
	}
	if err != nil {
		return nil, wrap(err, "applying", c.kind, want.GetNamespace(), want.GetName())
	}
	return c.decode(applied)
}

// statusOnly returns the apply of want's status alone.
func (c *objectStore[T, P]) statusOnly(want P) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.status(want))
	if err != nil {
		return nil, fmt.Errorf("encoding the status of %s %s/%s: %w", c.kind, want.GetNamespace(), want.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": m}}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(c.kind)
	u.SetName(want.GetName())
	u.SetNamespace(want.GetNamespace())
	return u, nil
}

// delete removes c.finalizer, if any, from the object, then deletes it.
// Finalizers others put on it stay, and keep it, terminating, until they
// remove them.
func (c *objectStore[T, P]) delete(ctx context.Context, namespace, name string) error {
	if c.finalizer != "" {
		err := retryOnConflict(ctx, func() error {
			cur, err := c.get(ctx, namespace, name)
			if err != nil {
				return err
			}
			fins := cur.GetFinalizers()
			keep := slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == c.finalizer })
			if len(keep) == len(fins) {
				return nil
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
				"finalizers":      keep,
				"resourceVersion": cur.GetResourceVersion(),
			}})
			if err != nil {
				return err
			}
			_, err = c.api(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		})
		if errors.Is(err, c.notFound) || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrap(err, "removing the finalizer of", c.kind, namespace, name)
		}
	}
	err := c.api(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "deleting", c.kind, namespace, name)
	}
	return nil
}

// TenantStore is a tenant.Store over the API server.
type TenantStore struct {
	crd objectStore[authv1beta1.Tenant, *authv1beta1.Tenant]
}

var _ tenant.Store = (*TenantStore)(nil)

// NewTenantStore returns a TenantStore using client.
func NewTenantStore(client dynamic.Interface) *TenantStore {
	return &TenantStore{crd: objectStore[authv1beta1.Tenant, *authv1beta1.Tenant]{
		client:    client,
		resource:  authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource),
		kind:      authv1beta1.TenantKind,
		notFound:  tenant.ErrNotFound,
		status:    func(t *authv1beta1.Tenant) any { return &t.Status },
		finalizer: tenant.Finalizer,
	}}
}

// Get returns the Tenant namespace/name.
func (s *TenantStore) Get(ctx context.Context, namespace, name string) (*authv1beta1.Tenant, error) {
	return s.crd.get(ctx, namespace, name)
}

// Apply creates t or brings the stored Tenant up to it, status included.
func (s *TenantStore) Apply(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	return s.crd.apply(ctx, t)
}

// Delete removes tenant.Finalizer from the Tenant namespace/name and deletes
// it; finalizers others put on it stay, and keep it until they remove them.
func (s *TenantStore) Delete(ctx context.Context, namespace, name string) error {
	return s.crd.delete(ctx, namespace, name)
}

// IdentityStore is an identity.Store over the API server.
type IdentityStore struct {
	crd objectStore[authv1beta1.Identity, *authv1beta1.Identity]
}

var _ identity.Store = (*IdentityStore)(nil)

// errIdentityNotFound is internal: identity.Store has no Get.
var errIdentityNotFound = errors.New("identity not found")

// NewIdentityStore returns an IdentityStore using client.
func NewIdentityStore(client dynamic.Interface) *IdentityStore {
	return &IdentityStore{crd: objectStore[authv1beta1.Identity, *authv1beta1.Identity]{
		client:   client,
		resource: authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.IdentityResource),
		kind:     authv1beta1.IdentityKind,
		notFound: errIdentityNotFound,
		status:   func(i *authv1beta1.Identity) any { return &i.Status },
	}}
}

// List returns the Identities in namespace, by name.
func (s *IdentityStore) List(ctx context.Context, namespace string) ([]authv1beta1.Identity, error) {
	ids, err := s.crd.list(ctx, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]authv1beta1.Identity, len(ids))
	for i, id := range ids {
		out[i] = *id
	}
	return out, nil
}

// Apply creates id or brings the stored Identity up to it, status included.
func (s *IdentityStore) Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	return s.crd.apply(ctx, id)
}

// Delete deletes the Identity namespace/name. kubepact puts no finalizer
// on Identities; those others put on it stay, and keep it, terminating,
// until they remove them.
func (s *IdentityStore) Delete(ctx context.Context, namespace, name string) error {
	return s.crd.delete(ctx, namespace, name)
}

// RenewStore is a renewal.Store over the API server.
type RenewStore struct {
	crd objectStore[authv1beta1.Renew, *authv1beta1.Renew]
}

var _ renewal.Store = (*RenewStore)(nil)

// NewRenewStore returns a RenewStore using client.
func NewRenewStore(client dynamic.Interface) *RenewStore {
	return &RenewStore{crd: objectStore[authv1beta1.Renew, *authv1beta1.Renew]{
		client:   client,
		resource: authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.RenewResource),
		kind:     authv1beta1.RenewKind,
		notFound: renewal.ErrNotFound,
		status:   func(r *authv1beta1.Renew) any { return &r.Status },
	}}
}

// Get returns the Renew namespace/name.
func (s *RenewStore) Get(ctx context.Context, namespace, name string) (*authv1beta1.Renew, error) {
	return s.crd.get(ctx, namespace, name)
}

// Apply creates r or brings the stored Renew up to it, status included.
func (s *RenewStore) Apply(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.Renew, error) {
	return s.crd.apply(ctx, r)
}

// Delete deletes the Renew namespace/name. kubepact puts no finalizer on
// Renews; those others put on it stay, and keep it, terminating, until they
// remove them.
func (s *RenewStore) Delete(ctx context.Context, namespace, name string) error {
	return s.crd.delete(ctx, namespace, name)
}

// ApplyStatus applies the status of r alone, through the status
// subresource, and returns what is stored. A Renew that does not exist is
// not created: the error wraps renewal.ErrNotFound.
func (s *RenewStore) ApplyStatus(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.Renew, error) {
	u, err := s.crd.statusOnly(r)
	if err != nil {
		return nil, err
	}
	applied, err := s.crd.api(r.Namespace).ApplyStatus(ctx, r.Name, u, applyOptions(true))
	if isObjectNotFound(err, r.Name) {
		return nil, notFound(renewal.ErrNotFound, err, authv1beta1.RenewKind, r.Namespace, r.Name)
	}
	if err != nil {
		return nil, wrap(err, "applying the status of", authv1beta1.RenewKind, r.Namespace, r.Name)
	}
	return s.crd.decode(applied)
}

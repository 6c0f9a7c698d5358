package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/tenant"
)

// NewScheme returns a new scheme holding client-go's built-in types, the
// authentication.liqo.io/v1beta1 types and kubepact's
// peering.kubepact.io/v1alpha1 types. It leaves client-go's global scheme
// alone.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := authv1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := peeringv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewClient returns an uncached, typed controller-runtime client for cfg,
// over httpClient (nil: one made from cfg), whose scheme is NewScheme's: what
// NewTenantStore and NewIdentityStore take. It knows where the
// authentication.liqo.io/v1beta1 kinds are served without asking the API
// server; other kinds are discovered on first use.
func NewClient(cfg *rest.Config, httpClient *http.Client) (client.Client, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if httpClient == nil {
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
	}
	discovered, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{authv1beta1.SchemeGroupVersion, peeringv1alpha1.SchemeGroupVersion})
	for _, kind := range []string{authv1beta1.TenantKind, authv1beta1.IdentityKind, authv1beta1.ResourceSliceKind, authv1beta1.RenewKind} {
		known.Add(authv1beta1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	for _, kind := range []string{peeringv1alpha1.AuthorizedConsumerKind, peeringv1alpha1.TrustedProviderKind} {
		known.Add(peeringv1alpha1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeRoot)
	}
	mapper := meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{known, discovered}}
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return c, nil
}

// object is an authentication.liqo.io object: Tenant, Identity,
// ResourceSlice or Renew.
type object[T any] interface {
	*T
	client.Object
}

// objectList is the list type of one kind of object.
type objectList[T any, L any] interface {
	*L
	client.ObjectList
}

// objectStore reads and writes one kind of authentication.liqo.io object
// through a typed controller-runtime client.
type objectStore[T, L any, P object[T], PL objectList[T, L]] struct {
	client   client.Client
	kind     string
	notFound error
	// items returns a list's objects.
	items func(PL) []T
	// status points into an object.
	status func(P) any
	// finalizer, when set, is kubepact's finalizer on the objects, which
	// delete removes.
	finalizer string
}

func (c *objectStore[T, L, P, PL]) get(ctx context.Context, namespace, name string) (P, error) {
	obj := P(new(T))
	err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if isObjectNotFound(err, name) {
		return nil, notFound(c.notFound, err, c.kind, namespace, name)
	}
	if err != nil {
		return nil, wrap(err, "reading", c.kind, namespace, name)
	}
	c.typeMeta(obj)
	return obj, nil
}

// typeMeta sets obj's apiVersion and kind, which the typed client leaves
// empty, so that what the store returns serialises as a whole object.
func (c *objectStore[T, L, P, PL]) typeMeta(obj P) {
	obj.GetObjectKind().SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(c.kind))
}

func (c *objectStore[T, L, P, PL]) list(ctx context.Context, namespace string) ([]T, error) {
	l := PL(new(L))
	if err := c.client.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", c.kind, namespace, err)
	}
	out := c.items(l)
	for i := range out {
		c.typeMeta(&out[i])
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(P(&a).GetName(), P(&b).GetName()) })
	return out, nil
}

// apply applies want with server-side apply as FieldManager, taking over
// its spec and its labels, annotations, finalizers and owner references;
// when want's status is not zero it also applies the status, through the
// status subresource. What others set on the object stays. It returns what
// is stored.
func (c *objectStore[T, L, P, PL]) apply(ctx context.Context, want P) (P, error) {
	u, err := c.applied(want, false)
	if err != nil {
		return nil, err
	}
	err = c.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	if err == nil && !equality.Semantic.DeepEqual(c.status(want), c.status(new(T))) {
		if u, err = c.applied(want, true); err == nil {
			err = c.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
		}
	}
	if err != nil {
		return nil, wrap(err, "applying", c.kind, want.GetNamespace(), want.GetName())
	}
	return c.decode(u)
}

// applyStatus applies want's status alone, through the status subresource,
// and returns what is stored. It creates nothing: the error wraps
// c.notFound when there is no such object.
func (c *objectStore[T, L, P, PL]) applyStatus(ctx context.Context, want P) (P, error) {
	u, err := c.applied(want, true)
	if err != nil {
		return nil, err
	}
	err = c.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	if isObjectNotFound(err, want.GetName()) {
		return nil, notFound(c.notFound, err, c.kind, want.GetNamespace(), want.GetName())
	}
	if err != nil {
		return nil, wrap(err, "applying the status of", c.kind, want.GetNamespace(), want.GetName())
	}
	return c.decode(u)
}

// decode returns the object u, as the API server answered an apply.
func (c *objectStore[T, L, P, PL]) decode(u *unstructured.Unstructured) (P, error) {
	stored := P(new(T))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
		return nil, fmt.Errorf("decoding %s %s/%s: %w", c.kind, u.GetNamespace(), u.GetName(), err)
	}
	return stored, nil
}

// applied returns the apply of want: without its status and what the API
// server sets, or, when status is true, of its status alone.
func (c *objectStore[T, L, P, PL]) applied(want P, status bool) (*unstructured.Unstructured, error) {
	var from any = want
	if status {
		from = c.status(want)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", c.kind, want.GetNamespace(), want.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	if status {
		u = &unstructured.Unstructured{Object: map[string]any{"status": m}}
		u.SetName(want.GetName())
		u.SetNamespace(want.GetNamespace())
	} else {
		pruneServerFields(u)
		delete(u.Object, "status")
	}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(c.kind)
	return u, nil
}

// delete removes c.finalizer, if any, from the object, then deletes it.
// Finalizers others put on it stay, and keep it, terminating, until they
// remove them.
func (c *objectStore[T, L, P, PL]) delete(ctx context.Context, namespace, name string) error {
	var uid types.UID // of the object whose finalizer was removed
	if c.finalizer != "" {
		err := retryOnConflict(ctx, func() error {
			cur, err := c.get(ctx, namespace, name)
			if err != nil {
				return err
			}
			uid = cur.GetUID()
			if !slices.Contains(cur.GetFinalizers(), c.finalizer) {
				return nil
			}
			before := P(cur.DeepCopyObject().(P))
			cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == c.finalizer }))
			return c.client.Patch(ctx, cur, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
		})
		if errors.Is(err, c.notFound) || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrap(err, "removing the finalizer of", c.kind, namespace, name)
		}
	}
	obj := P(new(T))
	obj.SetNamespace(namespace)
	obj.SetName(name)
	var opts []client.DeleteOption
	if uid != "" {
		// Without its finalizer, a terminating object is gone at once, and
		// its name is free: the delete is held to the object read, so that
		// one created since under the same name stays.
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	err := c.client.Delete(ctx, obj, opts...)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case uid != "" && apierrors.IsConflict(err):
		return nil // the name is another object's now
	}
	return wrap(err, "deleting", c.kind, namespace, name)
}

// TenantStore is a tenant.Store over the API server.
type TenantStore struct {
	crd objectStore[authv1beta1.Tenant, authv1beta1.TenantList, *authv1beta1.Tenant, *authv1beta1.TenantList]
}

var _ tenant.Store = (*TenantStore)(nil)

// NewTenantStore returns a TenantStore using c, a client whose scheme knows
// the authentication.liqo.io/v1beta1 types (see NewClient). It reads
// through c: give it an uncached client, as NewClient returns, not a
// manager's cache, since Provider.Accept decides on what it reads.
func NewTenantStore(c client.Client) *TenantStore {
	return &TenantStore{crd: objectStore[authv1beta1.Tenant, authv1beta1.TenantList, *authv1beta1.Tenant, *authv1beta1.TenantList]{
		client:    c,
		kind:      authv1beta1.TenantKind,
		notFound:  tenant.ErrNotFound,
		items:     func(l *authv1beta1.TenantList) []authv1beta1.Tenant { return l.Items },
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

// ApplyStatus applies t's status alone, through the status subresource. A
// Tenant that does not exist is not created: the error wraps
// tenant.ErrNotFound.
func (s *TenantStore) ApplyStatus(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	return s.crd.applyStatus(ctx, t)
}

// Delete removes tenant.Finalizer from the Tenant namespace/name and deletes
// it; finalizers others put on it stay, and keep it until they remove them.
func (s *TenantStore) Delete(ctx context.Context, namespace, name string) error {
	return s.crd.delete(ctx, namespace, name)
}

// IdentityStore is an identity.Store over the API server.
type IdentityStore struct {
	crd objectStore[authv1beta1.Identity, authv1beta1.IdentityList, *authv1beta1.Identity, *authv1beta1.IdentityList]
}

var (
	_ identity.Getter        = (*IdentityStore)(nil)
	_ identity.StatusApplier = (*IdentityStore)(nil)
)

// NewIdentityStore returns an IdentityStore using c, a client whose scheme
// knows the authentication.liqo.io/v1beta1 types (see NewClient), read
// through: give it an uncached client.
func NewIdentityStore(c client.Client) *IdentityStore {
	return &IdentityStore{crd: objectStore[authv1beta1.Identity, authv1beta1.IdentityList, *authv1beta1.Identity, *authv1beta1.IdentityList]{
		client:   c,
		kind:     authv1beta1.IdentityKind,
		notFound: identity.ErrNotFound,
		items:    func(l *authv1beta1.IdentityList) []authv1beta1.Identity { return l.Items },
		status:   func(i *authv1beta1.Identity) any { return &i.Status },
	}}
}

// List returns the Identities in namespace, by name.
func (s *IdentityStore) List(ctx context.Context, namespace string) ([]authv1beta1.Identity, error) {
	return s.crd.list(ctx, namespace)
}

// Apply creates id or brings the stored Identity up to it, status included.
func (s *IdentityStore) Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	return s.crd.apply(ctx, id)
}

// Get returns the Identity namespace/name, or an error wrapping
// identity.ErrNotFound.
func (s *IdentityStore) Get(ctx context.Context, namespace, name string) (*authv1beta1.Identity, error) {
	return s.crd.get(ctx, namespace, name)
}

// ApplyStatus applies the status of id alone, through the status
// subresource. It creates nothing: the error wraps identity.ErrNotFound
// when there is no such Identity.
func (s *IdentityStore) ApplyStatus(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	return s.crd.applyStatus(ctx, id)
}

// Delete deletes the Identity namespace/name. kubepact puts no finalizer
// on Identities; those others put on it stay, and keep it, terminating,
// until they remove them.
func (s *IdentityStore) Delete(ctx context.Context, namespace, name string) error {
	return s.crd.delete(ctx, namespace, name)
}

// RenewStore is a renewal.Store over the API server.
type RenewStore struct {
	crd objectStore[authv1beta1.Renew, authv1beta1.RenewList, *authv1beta1.Renew, *authv1beta1.RenewList]
}

var _ renewal.Store = (*RenewStore)(nil)

// NewRenewStore returns a RenewStore using c, an uncached client whose
// scheme knows the authentication.liqo.io/v1beta1 types (see NewClient).
func NewRenewStore(c client.Client) *RenewStore {
	return &RenewStore{crd: objectStore[authv1beta1.Renew, authv1beta1.RenewList, *authv1beta1.Renew, *authv1beta1.RenewList]{
		client:   c,
		kind:     authv1beta1.RenewKind,
		notFound: renewal.ErrNotFound,
		items:    func(l *authv1beta1.RenewList) []authv1beta1.Renew { return l.Items },
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
	return s.crd.applyStatus(ctx, r)
}

package intercept

import (
	"context"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// Call is one call of a port method, seen by a Faults hook.
type Call struct {
	// Op names the port and method, such as "Nonces.Consume".
	Op string
	// After is false before the call runs and true after it succeeded: an
	// error returned then models a call that took effect but whose answer
	// was lost (a timeout, a dropped connection).
	After bool
}

// Faults injects failures into ports wrapped by Provider or Consumer. Its zero value injects nothing and records every call.
// Package fake's in-memory ports and package kube's adapters can both be
// wrapped.
// It is safe for concurrent use.
type Faults struct {
	mu     sync.Mutex
	inject func(ctx context.Context, c Call) error
	calls  []Call
}

// Set makes inject decide every later call: a non-nil error is returned to
// the caller instead of (Call.After false) or after (Call.After true)
// running the call. A nil inject stops injecting.
func (f *Faults) Set(inject func(ctx context.Context, c Call) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject = inject
}

// Calls returns the hooks run so far, in order: each call before it runs,
// and again after it succeeded.
func (f *Faults) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

func (f *Faults) hook(ctx context.Context, op string, after bool) error {
	f.mu.Lock()
	inject := f.inject
	f.calls = append(f.calls, Call{Op: op, After: after})
	f.mu.Unlock()
	if !after {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if inject == nil {
		return nil
	}
	return inject(ctx, Call{Op: op, After: after})
}

// call runs fn between the hooks of op.
func call(ctx context.Context, f *Faults, op string, fn func() error) error {
	if err := f.hook(ctx, op, false); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	return f.hook(ctx, op, true)
}

// call1 runs fn, which returns a value, between the hooks of op.
func call1[T any](ctx context.Context, f *Faults, op string, fn func() (T, error)) (T, error) {
	var zero T
	if err := f.hook(ctx, op, false); err != nil {
		return zero, err
	}
	v, err := fn()
	if err != nil {
		return zero, err
	}
	if err := f.hook(ctx, op, true); err != nil {
		return zero, err
	}
	return v, nil
}

// Provider returns ports that call f around every call of p's, and that
// have the optional ports p has: Core.Peek, which is kept as it is,
// and SlicePorts.
func Provider(p provider.Ports, f *Faults) provider.Ports {
	out := provider.Ports{
		Core: provider.Core{
			Namespaces:   namespacesHook{p.Namespaces, f},
			Nonces:       noncesHook{p.Nonces, f},
			Tenants:      tenantsHook{p.Tenants, f},
			Signer:       signerHook{p.Signer, f},
			Certificates: cacheHook{p.Certificates, f},
			RBAC:         rbacHook{p.RBAC, f},
		},
		Lifecycle: interceptLifecycle(p.Lifecycle, f),
	}
	// Peek cannot fail, so it has no hook: it is kept as it is, and the
	// provider peeks as it does without Faults.
	out.Peek = p.Peek
	if p.ClusterRBAC != nil {
		out.ClusterRBAC = clusterBinderHook{p.ClusterRBAC, f}
	}
	if p.Slices != nil {
		out.Slices = slicesHook{p.Slices, f}
	}
	if p.SlicePolicy != nil {
		out.SlicePolicy = slicePolicyHook{p.SlicePolicy, f}
	}
	if p.StorageClasses != nil {
		out.StorageClasses = storageClassesHook{p.StorageClasses, f}
	}
	return out
}

// Consumer returns ports that call f around every call of c's.
func Consumer(c consumer.Ports, f *Faults) consumer.Ports {
	out := consumer.Ports{
		Core: consumer.Core{
			Namespaces: namespacesHook{c.Namespaces, f},
			Keys:       keysHook{c.Keys, f},
			Identities: identitiesHook{c.Identities, f},
			Secrets:    secretsHook{c.Secrets, f},
		},
	}
	if c.IdentityKeys != nil {
		out.IdentityKeys = keyringHook{c.IdentityKeys, f}
	}
	if c.Reviewer != nil {
		out.Reviewer = reviewerHook{c.Reviewer, f}
	}
	if c.Slices != nil {
		out.Slices = slicesHook{c.Slices, f}
	}
	return out
}

type namespacesHook struct {
	next tenant.Namespaces
	f    *Faults
}

func (h namespacesHook) Ensure(ctx context.Context, ns *corev1.Namespace) error {
	return call(ctx, h.f, "Namespaces.Ensure", func() error { return h.next.Ensure(ctx, ns) })
}

func (h namespacesHook) Delete(ctx context.Context, name string) error {
	return call(ctx, h.f, "Namespaces.Delete", func() error { return h.next.Delete(ctx, name) })
}

type noncesHook struct {
	next nonce.Store
	f    *Faults
}

func (h noncesHook) Put(ctx context.Context, id string, e nonce.Entry) error {
	return call(ctx, h.f, "Nonces.Put", func() error { return h.next.Put(ctx, id, e) })
}

func (h noncesHook) Get(ctx context.Context, id string) (nonce.Entry, error) {
	return call1(ctx, h.f, "Nonces.Get", func() (nonce.Entry, error) { return h.next.Get(ctx, id) })
}

func (h noncesHook) MarkRedeemed(ctx context.Context, id string, r nonce.Redemption) (nonce.Entry, error) {
	return call1(ctx, h.f, "Nonces.MarkRedeemed", func() (nonce.Entry, error) { return h.next.MarkRedeemed(ctx, id, r) })
}

func (h noncesHook) Consume(ctx context.Context, id string) (nonce.Entry, error) {
	return call1(ctx, h.f, "Nonces.Consume", func() (nonce.Entry, error) { return h.next.Consume(ctx, id) })
}

type tenantsHook struct {
	next tenant.Store
	f    *Faults
}

func (h tenantsHook) Get(ctx context.Context, ns, name string) (*authv1beta1.Tenant, error) {
	return call1(ctx, h.f, "Tenants.Get", func() (*authv1beta1.Tenant, error) { return h.next.Get(ctx, ns, name) })
}

func (h tenantsHook) Apply(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	return call1(ctx, h.f, "Tenants.Apply", func() (*authv1beta1.Tenant, error) { return h.next.Apply(ctx, t) })
}

func (h tenantsHook) ApplyStatus(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	return call1(ctx, h.f, "Tenants.ApplyStatus", func() (*authv1beta1.Tenant, error) { return h.next.ApplyStatus(ctx, t) })
}

func (h tenantsHook) Delete(ctx context.Context, ns, name string) error {
	return call(ctx, h.f, "Tenants.Delete", func() error { return h.next.Delete(ctx, ns, name) })
}

type signerHook struct {
	next csr.Signer
	f    *Faults
}

func (h signerHook) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	return call1(ctx, h.f, "Signer.Sign", func() ([]byte, error) { return h.next.Sign(ctx, r) })
}

type cacheHook struct {
	next csr.Cache
	f    *Faults
}

func (h cacheHook) Get(ctx context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	return call1(ctx, h.f, "Certificates.Get", func() (csr.CacheEntry, error) { return h.next.Get(ctx, k) })
}

func (h cacheHook) Put(ctx context.Context, k csr.CacheKey, e csr.CacheEntry) error {
	return call(ctx, h.f, "Certificates.Put", func() error { return h.next.Put(ctx, k, e) })
}

func (h cacheHook) Delete(ctx context.Context, k csr.CacheKey) error {
	return call(ctx, h.f, "Certificates.Delete", func() error { return h.next.Delete(ctx, k) })
}

type rbacHook struct {
	next rbac.Binder
	f    *Faults
}

func (h rbacHook) HasClusterRole(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := call(ctx, h.f, "RBAC.HasClusterRole", func() (err error) { ok, err = h.next.HasClusterRole(ctx, name); return err })
	return ok, err
}

func (h rbacHook) ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	return call(ctx, h.f, "RBAC.ApplyRoleBinding", func() error { return h.next.ApplyRoleBinding(ctx, b) })
}

func (h rbacHook) DeleteRoleBinding(ctx context.Context, ns, name string) error {
	return call(ctx, h.f, "RBAC.DeleteRoleBinding", func() error { return h.next.DeleteRoleBinding(ctx, ns, name) })
}

func (h rbacHook) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	return call1(ctx, h.f, "RBAC.Allowed", func() (bool, error) { return h.next.Allowed(ctx, user, groups, attrs) })
}

type keysHook struct {
	next keys.Store
	f    *Faults
}

func (h keysHook) Get(ctx context.Context) (*keys.PrivateKey, error) {
	return call1(ctx, h.f, "Keys.Get", func() (*keys.PrivateKey, error) { return h.next.Get(ctx) })
}

func (h keysHook) Create(ctx context.Context, k *keys.PrivateKey) error {
	return call(ctx, h.f, "Keys.Create", func() error { return h.next.Create(ctx, k) })
}

type keyringHook struct {
	next keys.Keyring
	f    *Faults
}

func (h keyringHook) Get(ctx context.Context, name string) (keys.Stored, error) {
	return call1(ctx, h.f, "IdentityKeys.Get", func() (keys.Stored, error) { return h.next.Get(ctx, name) })
}

func (h keyringHook) Create(ctx context.Context, name string, s keys.Stored) error {
	return call(ctx, h.f, "IdentityKeys.Create", func() error { return h.next.Create(ctx, name, s) })
}

func (h keyringHook) Attest(ctx context.Context, name string, s keys.Stored) error {
	return call(ctx, h.f, "IdentityKeys.Attest", func() error { return h.next.Attest(ctx, name, s) })
}

func (h keyringHook) Delete(ctx context.Context, name string) error {
	return call(ctx, h.f, "IdentityKeys.Delete", func() error { return h.next.Delete(ctx, name) })
}

type identitiesHook struct {
	next identity.Store
	f    *Faults
}

func (h identitiesHook) List(ctx context.Context, ns string) ([]authv1beta1.Identity, error) {
	return call1(ctx, h.f, "Identities.List", func() ([]authv1beta1.Identity, error) { return h.next.List(ctx, ns) })
}

func (h identitiesHook) Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	return call1(ctx, h.f, "Identities.Apply", func() (*authv1beta1.Identity, error) { return h.next.Apply(ctx, id) })
}

func (h identitiesHook) Delete(ctx context.Context, ns, name string) error {
	return call(ctx, h.f, "Identities.Delete", func() error { return h.next.Delete(ctx, ns, name) })
}

type secretsHook struct {
	next kubeconfig.SecretWriter
	f    *Faults
}

func (h secretsHook) Write(ctx context.Context, s *corev1.Secret) error {
	return call(ctx, h.f, "Secrets.Write", func() error { return h.next.Write(ctx, s) })
}

func (h secretsHook) Delete(ctx context.Context, ns, name string) error {
	return call(ctx, h.f, "Secrets.Delete", func() error { return h.next.Delete(ctx, ns, name) })
}

type reviewerHook struct {
	next identity.Reviewer
	f    *Faults
}

func (h reviewerHook) Review(ctx context.Context, cfg *kubeconfig.Config) (string, []string, error) {
	var groups []string
	user, err := call1(ctx, h.f, "Reviewer.Review", func() (string, error) {
		u, g, err := h.next.Review(ctx, cfg)
		groups = g
		return u, err
	})
	if err != nil {
		return "", nil, err
	}
	return user, groups, nil
}

package fake

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

var (
	_ tenant.Namespaces       = (*Namespaces)(nil)
	_ nonce.Store             = (*NonceStore)(nil)
	_ tenant.Store            = (*TenantStore)(nil)
	_ identity.Store          = (*IdentityStore)(nil)
	_ kubeconfig.SecretWriter = (*SecretWriter)(nil)
	_ csr.Cache               = (*CertificateCache)(nil)
	_ rbac.Applier            = (*RBAC)(nil)
	_ keys.Store              = (*KeyStore)(nil)
	_ csr.Approver            = (*Approver)(nil)
	_ csr.Signer              = (*Signer)(nil)
)

// Namespaces is an in-memory tenant.Namespaces.
type Namespaces struct {
	objects[*corev1.Namespace]
	// writeMu makes Ensure's read, merge and write one step, so concurrent
	// Ensures lose no label.
	writeMu sync.Mutex
}

// Ensure creates ns or merges its labels into the stored namespace.
func (n *Namespaces) Ensure(ctx context.Context, ns *corev1.Namespace) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	want := ns.DeepCopy()
	if prev, ok := n.get("", ns.Name); ok {
		want = prev
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		maps.Copy(want.Labels, ns.Labels)
	}
	n.apply(want)
	return nil
}

// Delete removes the namespace named name.
func (n *Namespaces) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	n.delete("", name)
	return nil
}

// Get returns the namespace named name.
func (n *Namespaces) Get(name string) (*corev1.Namespace, bool) { return n.get("", name) }

// NonceStore is an in-memory nonce.Store.
type NonceStore struct {
	mu      sync.Mutex
	entries map[string]nonce.Entry
}

// Put stores e for clusterID.
func (s *NonceStore) Put(ctx context.Context, clusterID string, e nonce.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]nonce.Entry{}
	}
	s.entries[clusterID] = e
	return nil
}

// Get returns the entry of clusterID.
func (s *NonceStore) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nonce.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, fmt.Errorf("%w: cluster %s", nonce.ErrNotFound, clusterID)
	}
	return e, nil
}

// Consume removes and returns the entry of clusterID.
func (s *NonceStore) Consume(ctx context.Context, clusterID string) (nonce.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nonce.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, fmt.Errorf("%w: cluster %s", nonce.ErrNotFound, clusterID)
	}
	delete(s.entries, clusterID)
	return e, nil
}

// TenantStore is an in-memory tenant.Store.
type TenantStore struct{ objects[*authv1beta1.Tenant] }

// Get returns the Tenant namespace/name.
func (s *TenantStore) Get(ctx context.Context, namespace, name string) (*authv1beta1.Tenant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, ok := s.get(namespace, name)
	if !ok {
		return nil, fmt.Errorf("%w: %s/%s", tenant.ErrNotFound, namespace, name)
	}
	return t, nil
}

// Apply creates or replaces t, keeping the stored status when t's is zero.
func (s *TenantStore) Apply(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := reflect.DeepEqual(t.Status, authv1beta1.TenantStatus{})
	return s.applyMerged(t, func(prev, next *authv1beta1.Tenant) {
		if keep {
			next.Status = *prev.Status.DeepCopy()
		}
	}), nil
}

// Delete removes the Tenant namespace/name.
func (s *TenantStore) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.delete(namespace, name)
	return nil
}

// IdentityStore is an in-memory identity.Store.
type IdentityStore struct{ objects[*authv1beta1.Identity] }

// List returns the Identities in namespace.
func (s *IdentityStore) List(ctx context.Context, namespace string) ([]authv1beta1.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []authv1beta1.Identity
	for _, id := range s.list(namespace) {
		out = append(out, *id)
	}
	return out, nil
}

// Apply creates or replaces id, keeping the stored status when id's is zero.
func (s *IdentityStore) Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := reflect.DeepEqual(id.Status, authv1beta1.IdentityStatus{})
	return s.applyMerged(id, func(prev, next *authv1beta1.Identity) {
		if keep {
			next.Status = *prev.Status.DeepCopy()
		}
	}), nil
}

// Delete removes the Identity namespace/name.
func (s *IdentityStore) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.delete(namespace, name)
	return nil
}

// Get returns the Identity namespace/name.
func (s *IdentityStore) Get(namespace, name string) (*authv1beta1.Identity, bool) {
	return s.get(namespace, name)
}

// SecretWriter is an in-memory kubeconfig.SecretWriter.
type SecretWriter struct{ objects[*corev1.Secret] }

// Write creates or replaces sec.
func (w *SecretWriter) Write(ctx context.Context, sec *corev1.Secret) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.apply(sec)
	return nil
}

// Delete removes the Secret namespace/name.
func (w *SecretWriter) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.delete(namespace, name)
	return nil
}

// Get returns the Secret namespace/name.
func (w *SecretWriter) Get(namespace, name string) (*corev1.Secret, bool) {
	return w.get(namespace, name)
}

// CertificateCache is an in-memory csr.Cache.
type CertificateCache struct {
	mu      sync.Mutex
	entries map[csr.CacheKey]csr.CacheEntry
}

// Get returns the entry for k.
func (c *CertificateCache) Get(ctx context.Context, k csr.CacheKey) (csr.CacheEntry, error) {
	if err := ctx.Err(); err != nil {
		return csr.CacheEntry{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return csr.CacheEntry{}, fmt.Errorf("%w: %s of %s", csr.ErrNotFound, k.SecretName(), k.ConsumerID)
	}
	return csr.CacheEntry{CSR: clone(e.CSR), Certificate: clone(e.Certificate)}, nil
}

// Put stores e for k.
func (c *CertificateCache) Put(ctx context.Context, k csr.CacheKey, e csr.CacheEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[csr.CacheKey]csr.CacheEntry{}
	}
	c.entries[k] = csr.CacheEntry{CSR: clone(e.CSR), Certificate: clone(e.Certificate)}
	return nil
}

// Delete removes the entry for k.
func (c *CertificateCache) Delete(ctx context.Context, k csr.CacheKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
	return nil
}

// Len returns the number of cached certificates.
func (c *CertificateCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// RBAC is an in-memory rbac.Applier.
type RBAC struct {
	ClusterRoles objects[*rbacv1.ClusterRole]
	RoleBindings objects[*rbacv1.RoleBinding]
}

// ApplyClusterRole creates or replaces r.
func (a *RBAC) ApplyClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.ClusterRoles.apply(r)
	return nil
}

// ApplyRoleBinding creates or replaces b.
func (a *RBAC) ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.RoleBindings.apply(b)
	return nil
}

// DeleteRoleBinding removes the RoleBinding namespace/name.
func (a *RBAC) DeleteRoleBinding(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.RoleBindings.delete(namespace, name)
	return nil
}

// RoleBinding returns the RoleBinding namespace/name.
func (a *RBAC) RoleBinding(namespace, name string) (*rbacv1.RoleBinding, bool) {
	return a.RoleBindings.get(namespace, name)
}

// KeyStore is an in-memory keys.Store.
type KeyStore struct {
	mu  sync.Mutex
	key *keys.PrivateKey
}

// Get returns the stored key.
func (s *KeyStore) Get(ctx context.Context) (*keys.PrivateKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		return nil, keys.ErrNotFound
	}
	return s.key, nil
}

// Create stores k unless a key is stored.
func (s *KeyStore) Create(ctx context.Context, k *keys.PrivateKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return keys.ErrExists
	}
	s.key = k
	return nil
}

// Approver is an in-memory csr.Approver. With a nil Decide it approves
// every request.
type Approver struct {
	// Decide, when set, returns nil to approve or an error (typically a
	// *csr.DeniedError) to refuse.
	Decide func(name string, c *csr.Checked) error

	mu       sync.Mutex
	approved []string
}

// Approve records name as approved unless Decide refuses it.
func (a *Approver) Approve(ctx context.Context, name string, c *csr.Checked) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.Decide != nil {
		if err := a.Decide(name, c); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.approved = append(a.approved, name)
	return nil
}

// Approved returns the names approved so far, in order.
func (a *Approver) Approved() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.approved...)
}

// Signer is a csr.Signer over a csr.LocalCA that counts what it signs.
type Signer struct {
	CA *csr.LocalCA

	mu    sync.Mutex
	signs int
}

// Sign signs r with the local CA.
func (s *Signer) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	cert, err := s.CA.Sign(ctx, r)
	if err == nil {
		s.mu.Lock()
		s.signs++
		s.mu.Unlock()
	}
	return cert, err
}

// Signed returns the number of certificates issued.
func (s *Signer) Signed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signs
}

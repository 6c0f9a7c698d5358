package fake

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
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
	_ identity.StatusApplier  = (*IdentityStore)(nil)
	_ kubeconfig.SecretWriter = (*SecretWriter)(nil)
	_ csr.Cache               = (*CertificateCache)(nil)
	_ rbac.Applier            = (*RBAC)(nil)
	_ keys.RotatingStore      = (*KeyStore)(nil)
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

// Ensure creates ns or merges its labels into the stored namespace. As
// kube.Namespaces does, it refuses a stored tenant namespace
// ("liqo-tenant-<ID>") that lacks the tenant namespace labels for <ID>
// (tenant.CheckNamespace): the error wraps the *tenant.NamespaceError
// naming it, and nothing changes.
func (n *Namespaces) Ensure(ctx context.Context, ns *corev1.Namespace) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	want := ns.DeepCopy()
	if prev, ok := n.get("", ns.Name); ok {
		if remoteID, tenantNS := strings.CutPrefix(ns.Name, clusterid.TenantNamespacePrefix); tenantNS {
			if err := tenant.CheckNamespace(prev, remoteID); err != nil {
				return fmt.Errorf("ensuring Namespace %s: %w", ns.Name, err)
			}
		}
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

// NonceStore is an in-memory nonce.Store and nonce.Peeker.
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
	s.entries[clusterID] = copyEntry(e)
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
	return copyEntry(e), nil
}

// Peek returns the entry of clusterID as stored, as a controller's
// cache that has caught up would; false when there is none. It is what
// provider.Core.Peek takes.
func (s *NonceStore) Peek(_ context.Context, clusterID string) (nonce.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, false
	}
	return copyEntry(e), true
}

// MarkRedeemed records r on the entry of clusterID unless it has a
// redemption already, and returns the entry.
func (s *NonceStore) MarkRedeemed(ctx context.Context, clusterID string, r nonce.Redemption) (nonce.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nonce.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, fmt.Errorf("%w: cluster %s", nonce.ErrNotFound, clusterID)
	}
	if e.Redemption == nil {
		e.Redemption = &nonce.Redemption{By: bytes.Clone(r.By), Key: r.Key, At: r.At, Unpeered: r.Unpeered}
		s.entries[clusterID] = e
	}
	return copyEntry(e), nil
}

// copyEntry returns e with its redemption copied, so no caller shares the
// stored one.
func copyEntry(e nonce.Entry) nonce.Entry {
	if e.Redemption != nil {
		e.Redemption = &nonce.Redemption{By: bytes.Clone(e.Redemption.By), Key: e.Redemption.Key, At: e.Redemption.At, Unpeered: e.Redemption.Unpeered}
	}
	return e
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

// Apply creates t or sets its spec and metadata over the stored Tenant's,
// as a server-side apply does: labels, annotations, finalizers and owner
// references others set stay. It keeps the stored status when t's is zero,
// and the stored condition when t sets none, as a server-side apply that
// does not name spec.tenantCondition keeps it.
func (s *TenantStore) Apply(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := reflect.DeepEqual(t.Status, authv1beta1.TenantStatus{})
	return s.applyOwned(t, func(prev, next *authv1beta1.Tenant, _ owners) {
		if keep {
			next.Status = *prev.Status.DeepCopy()
		}
		if next.Spec.TenantCondition == "" {
			next.Spec.TenantCondition = prev.Spec.TenantCondition
		}
	}), nil
}

// ApplyStatus sets t's status on the stored Tenant, as a write to the
// status subresource does: nothing else of it changes. It creates nothing.
func (s *TenantStore) ApplyStatus(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stored, ok := s.updateExisting(t.Namespace, t.Name, func(next *authv1beta1.Tenant) {
		next.Status = *t.Status.DeepCopy()
	})
	if !ok {
		return nil, fmt.Errorf("%w: %s/%s", tenant.ErrNotFound, t.Namespace, t.Name)
	}
	return stored, nil
}

// Update stores t whole, as another component (Liqo, a user) does with a
// client-side update: the metadata it adds or changes becomes theirs, and
// Apply keeps it.
func (s *TenantStore) Update(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.writeAsOther(t, nil), nil
}

// Delete removes tenant.Finalizer from the Tenant namespace/name and
// removes it, unless other finalizers stay: then it keeps the Tenant with
// those and a deletionTimestamp, as an API server does.
func (s *TenantStore) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.terminate(namespace, name, func(f string) bool { return f == tenant.Finalizer })
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

// Apply creates id or sets its spec and metadata over the stored
// Identity's, as a server-side apply does: labels, annotations, finalizers
// and owner references others set stay. It keeps the stored status when
// id's is zero.
func (s *IdentityStore) Apply(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := reflect.DeepEqual(id.Status, authv1beta1.IdentityStatus{})
	return s.applyOwned(id, func(prev, next *authv1beta1.Identity, _ owners) {
		if keep {
			next.Status = *prev.Status.DeepCopy()
		}
	}), nil
}

// ApplyStatus sets the status of the stored Identity id.Namespace/id.Name
// to id's. It creates nothing: the error wraps identity.ErrNotFound when
// there is no such Identity.
func (s *IdentityStore) ApplyStatus(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stored, ok := s.updateExisting(id.Namespace, id.Name, func(next *authv1beta1.Identity) {
		next.Status = *id.Status.DeepCopy()
	})
	if !ok {
		return nil, fmt.Errorf("%w: %s/%s", identity.ErrNotFound, id.Namespace, id.Name)
	}
	return stored, nil
}

// Update stores id whole, as another component does with a client-side
// update: the metadata it adds or changes becomes theirs, and Apply keeps it.
func (s *IdentityStore) Update(ctx context.Context, id *authv1beta1.Identity) (*authv1beta1.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.writeAsOther(id, nil), nil
}

// Delete removes the Identity namespace/name, unless it carries finalizers
// (kubepact puts none): then it keeps it with them and a deletionTimestamp,
// as an API server does.
func (s *IdentityStore) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.terminate(namespace, name, nil)
	return nil
}

// Get returns the Identity namespace/name.
func (s *IdentityStore) Get(namespace, name string) (*authv1beta1.Identity, bool) {
	return s.get(namespace, name)
}

// SecretWriter is an in-memory kubeconfig.SecretWriter.
type SecretWriter struct{ objects[*corev1.Secret] }

// Write creates sec or sets its type, data and metadata over the stored
// Secret's; labels, annotations and owner references others set stay.
func (w *SecretWriter) Write(ctx context.Context, sec *corev1.Secret) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.applyOwned(sec, nil)
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

// RBAC is an in-memory rbac.Binder.
//
// Allowed evaluates what it holds as the API server's RBAC authorizer
// does: the ClusterRoleBindings, and for a request in a namespace the
// RoleBindings there, whose subjects match the user (User, or
// ServiceAccount "system:serviceaccount:<namespace>:<name>") or one of the
// groups, and the rules of the ClusterRoles they refer to (verbs, API
// groups, resources and subresources, resource names, each with "*"). It
// holds no Roles and does not aggregate ClusterRoles, and nothing else
// authorizes: no bootstrap roles, no system:masters. A binding to a role
// it does not hold grants nothing. Allowed never fails but on a cancelled
// context. ApplyClusterRoleBinding, which is not part of the port, plants
// bindings made outside kubepact.
type RBAC struct {
	ClusterRoles        objects[*rbacv1.ClusterRole]
	RoleBindings        objects[*rbacv1.RoleBinding]
	ClusterRoleBindings objects[*rbacv1.ClusterRoleBinding]
}

var _ rbac.Binder = (*RBAC)(nil)

// ApplyClusterRoleBinding creates or replaces b.
func (a *RBAC) ApplyClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.ClusterRoleBindings.apply(b)
	return nil
}

// Allowed reports whether the bindings held allow user, a member of
// groups, to make the request attrs describes. It looks at the bindings
// that name user or one of groups, found by subject as the API server's
// authorizer finds them, so its cost does not grow with the bindings of
// other subjects.
func (a *RBAC) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	clusterRoleBindings, roleBindings := bindingsFor(&a.ClusterRoleBindings, &a.RoleBindings, user, groups, attrs.Namespace)
	return authorize(clusterRoleBindings, roleBindings, user, groups, attrs,
		func(_ string, ref rbacv1.RoleRef) []rbacv1.PolicyRule {
			if r, ok := a.ClusterRoles.get("", ref.Name); ok && ref.Kind == "ClusterRole" {
				return r.Rules
			}
			return nil
		}), nil
}

// bindingsFor returns the ClusterRoleBindings, and the RoleBindings in
// namespace (none for ""), with a subject that names user or one of
// groups, found through the stores' subject index (bindingKeys).
func bindingsFor(clusterRoleBindings *objects[*rbacv1.ClusterRoleBinding], roleBindings *objects[*rbacv1.RoleBinding],
	user string, groups []string, namespace string) ([]*rbacv1.ClusterRoleBinding, []*rbacv1.RoleBinding) {
	indexBindings(clusterRoleBindings, roleBindings)
	crbs := clusterRoleBindings.byKeys(subjectKeys("", user, groups)...)
	if namespace == "" {
		return crbs, nil
	}
	return crbs, roleBindings.byKeys(subjectKeys(namespace, user, groups)...)
}

// indexBindings indexes the bindings of clusterRoleBindings and
// roleBindings by bindingKeys, once.
func indexBindings(clusterRoleBindings *objects[*rbacv1.ClusterRoleBinding], roleBindings *objects[*rbacv1.RoleBinding]) {
	clusterRoleBindings.indexBy(func(b *rbacv1.ClusterRoleBinding) []string { return bindingKeys("", b.Subjects, b.Labels) })
	roleBindings.indexBy(func(b *rbacv1.RoleBinding) []string { return bindingKeys(b.Namespace, b.Subjects, b.Labels) })
}

// subjectKeys returns the index keys under which the bindings in namespace
// ("" for ClusterRoleBindings) that may name user or one of groups are
// found.
func subjectKeys(namespace, user string, groups []string) []string {
	out := make([]string, 0, 1+len(groups))
	out = append(out, "user\x00"+namespace+"\x00"+user)
	for _, g := range groups {
		out = append(out, "group\x00"+namespace+"\x00"+g)
	}
	return out
}

// bindingKeys returns the index keys of a binding in namespace ("" for a
// ClusterRoleBinding) with subjects and labels: one per subject, under the
// user or group it names, as subjectMatches reads it (a ServiceAccount is
// the user "system:serviceaccount:<namespace>:<name>", in the binding's
// namespace when it names none, and nobody in a ClusterRoleBinding that
// names none), and one for the peer its clusterid.Label names, empty when
// it has none (consumerKey).
func bindingKeys(namespace string, subjects []rbacv1.Subject, labels map[string]string) []string {
	out := make([]string, 0, len(subjects)+1)
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			out = append(out, "user\x00"+namespace+"\x00"+s.Name)
		case rbacv1.GroupKind:
			out = append(out, "group\x00"+namespace+"\x00"+s.Name)
		case rbacv1.ServiceAccountKind:
			ns := cmp.Or(s.Namespace, namespace)
			if ns != "" {
				out = append(out, "user\x00"+namespace+"\x00system:serviceaccount:"+ns+":"+s.Name)
			}
		}
	}
	return append(out, consumerKey(labels[clusterid.Label]))
}

// consumerKey is the index key of the bindings labelled for consumerID
// (clusterid.Label), or of those without the label for "".
func consumerKey(consumerID string) string { return "consumer\x00" + consumerID }

// authorize reports whether one of clusterRoleBindings, or of
// roleBindings (those of attrs' namespace), names user or one of groups
// and refers to a role whose rules (as rules resolves a binding's roleRef
// in its namespace, "" for a ClusterRoleBinding) allow the request attrs
// describes.
func authorize(clusterRoleBindings []*rbacv1.ClusterRoleBinding, roleBindings []*rbacv1.RoleBinding,
	user string, groups []string, attrs authorizationv1.ResourceAttributes, rules func(namespace string, ref rbacv1.RoleRef) []rbacv1.PolicyRule) bool {
	allows := func(namespace string, subjects []rbacv1.Subject, ref rbacv1.RoleRef) bool {
		if !slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool { return subjectMatches(s, namespace, user, groups) }) {
			return false
		}
		return slices.ContainsFunc(rules(namespace, ref), func(r rbacv1.PolicyRule) bool { return ruleAllows(r, attrs) })
	}
	for _, b := range clusterRoleBindings {
		if allows("", b.Subjects, b.RoleRef) {
			return true
		}
	}
	if attrs.Namespace == "" {
		return false
	}
	for _, b := range roleBindings {
		if b.Namespace == attrs.Namespace && allows(b.Namespace, b.Subjects, b.RoleRef) {
			return true
		}
	}
	return false
}

// subjectMatches reports whether s, in a binding in namespace ("" for a
// ClusterRoleBinding), names user or one of groups.
func subjectMatches(s rbacv1.Subject, namespace, user string, groups []string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return s.Name == user
	case rbacv1.GroupKind:
		return slices.Contains(groups, s.Name)
	case rbacv1.ServiceAccountKind:
		if s.Namespace != "" {
			namespace = s.Namespace
		}
		return namespace != "" && user == "system:serviceaccount:"+namespace+":"+s.Name
	}
	return false
}

// ruleAllows reports whether rule allows the request attrs describes.
func ruleAllows(rule rbacv1.PolicyRule, attrs authorizationv1.ResourceAttributes) bool {
	matches := func(values []string, v string) bool {
		return slices.Contains(values, "*") || slices.Contains(values, v)
	}
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	return matches(rule.Verbs, attrs.Verb) && matches(rule.APIGroups, attrs.Group) &&
		(matches(rule.Resources, resource) || attrs.Subresource != "" && slices.Contains(rule.Resources, "*/"+attrs.Subresource)) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, attrs.Name))
}

// HasClusterRole reports whether a ClusterRole named name is stored.
func (a *RBAC) HasClusterRole(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, ok := a.ClusterRoles.get("", name)
	return ok, nil
}

// DeleteClusterRole removes the ClusterRole name, as an administrator may:
// tests use it to play a provider whose peer roles are missing.
func (a *RBAC) DeleteClusterRole(name string) { a.ClusterRoles.delete("", name) }

// ApplyClusterRole creates r or sets its labels and rules over the stored
// ClusterRole's, as the kube adapter's server-side apply does: labels others
// set stay, and so do rules another component set (UpdateClusterRole) to
// other values.
func (a *RBAC) ApplyClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.ClusterRoles.applyOwned(r, func(prev, next *rbacv1.ClusterRole, own owners) {
		if own.others(rulesField) && !reflect.DeepEqual(prev.Rules, next.Rules) {
			next.Rules = prev.Rules
		}
	})
	return nil
}

// rulesField names a ClusterRole's rules in its owners.
const rulesField = "rules"

// UpdateClusterRole stores r whole, as another component (Liqo's chart, a
// user) does with a client-side update: the labels it adds or changes, and
// its rules, become theirs, and ApplyClusterRole keeps them.
func (a *RBAC) UpdateClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.ClusterRoles.writeAsOther(r, func(prev *rbacv1.ClusterRole, exists bool) []string {
		if len(r.Rules) == 0 || exists && reflect.DeepEqual(prev.Rules, r.Rules) {
			return nil
		}
		return []string{rulesField}
	})
	return nil
}

// ApplyRoleBinding creates b or sets its subjects, labels and owner
// references over the stored RoleBinding's, as the kube adapter's
// server-side apply does: labels and owner references others set stay,
// subjects become b's. A binding whose roleRef differs is replaced whole,
// as an API server re-creates it.
func (a *RBAC) ApplyRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cur, ok := a.RoleBindings.get(b.Namespace, b.Name); ok && cur.RoleRef != b.RoleRef {
		a.RoleBindings.delete(b.Namespace, b.Name)
	}
	a.RoleBindings.applyOwned(b, nil)
	return nil
}

// UpdateRoleBinding stores b whole, as another component does with a
// client-side update: the labels and owner references it adds or changes
// become theirs, and ApplyRoleBinding keeps them.
func (a *RBAC) UpdateRoleBinding(ctx context.Context, b *rbacv1.RoleBinding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.RoleBindings.writeAsOther(b, nil)
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

// KeyStore is an in-memory keys.RotatingStore.
type KeyStore struct {
	mu       sync.Mutex
	key      *keys.PrivateKey
	next     *keys.PrivateKey
	previous crypto.PublicKey
}

// GetWithPrevious returns the stored key and the public half of the key
// it replaced, nil when none.
func (s *KeyStore) GetWithPrevious(ctx context.Context) (*keys.PrivateKey, crypto.PublicKey, error) {
	k, err := s.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return k, s.previous, nil
}

// Next returns the next key, nil when none.
func (s *KeyStore) Next(ctx context.Context) (*keys.PrivateKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, nil
}

// CreateNext stores k as the next key unless one is stored.
func (s *KeyStore) CreateNext(ctx context.Context, k *keys.PrivateKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != nil {
		return keys.ErrExists
	}
	s.next = k
	return nil
}

// Promote makes the next key the key, keeping the replaced key's public
// half as the previous key.
func (s *KeyStore) Promote(ctx context.Context) (*keys.PrivateKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		return nil, fmt.Errorf("%w: no next key to promote", keys.ErrNotFound)
	}
	if s.key != nil && !keys.Equal(s.key.Public(), s.next.Public()) {
		s.previous = s.key.Public()
	}
	s.key, s.next = s.next, nil
	return s.key, nil
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

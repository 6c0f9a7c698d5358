package fake

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/tenant"
)

var (
	_ lifecycle.Conditions  = (*TenantStore)(nil)
	_ lifecycle.Slices      = (*ResourceSlices)(nil)
	_ lifecycle.Bindings    = (*RBAC)(nil)
	_ lifecycle.Revocations = (*Revocations)(nil)
)

// SetCondition sets the condition of the stored Tenant of t's name, provided
// its resourceVersion is still t's, as a patch with a resourceVersion
// precondition does. The condition becomes kubepact's: Apply, which does not
// apply a condition, keeps it.
func (s *TenantStore) SetCondition(ctx context.Context, t *authv1beta1.Tenant, c authv1beta1.TenantCondition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(t.Namespace, t.Name)
	cur, ok := s.items[k]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s/%s", tenant.ErrNotFound, t.Namespace, t.Name)
	case cur.ResourceVersion != t.ResourceVersion:
		return fmt.Errorf("Tenant %s/%s: %w", t.Namespace, t.Name, lifecycle.ErrConflict)
	case cur.Spec.TenantCondition == c:
		return nil
	}
	next := cur.DeepCopy()
	next.Spec.TenantCondition = c
	next.Generation++
	s.version++
	s.writes++
	next.ResourceVersion = strconv.Itoa(s.version)
	s.put(k, next)
	return nil
}

// PutNamespaceMaps plants n NamespaceMaps in namespace.
func (f *ResourceSlices) PutNamespaceMaps(namespace string, n int) {
	f.mapsMu.Lock()
	defer f.mapsMu.Unlock()
	if f.namespaceMaps == nil {
		f.namespaceMaps = map[string]int{}
	}
	f.namespaceMaps[namespace] += n
}

// NamespaceMaps returns how many NamespaceMaps namespace holds.
func (f *ResourceSlices) NamespaceMaps(namespace string) int {
	f.mapsMu.Lock()
	defer f.mapsMu.Unlock()
	return f.namespaceMaps[namespace]
}

// SetCordoned adds or removes lifecycle.CordonAnnotation on every
// ResourceSlice in namespace, as a merge patch of that annotation does.
func (f *ResourceSlices) SetCordoned(ctx context.Context, namespace string, cordoned bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, s := range f.list(namespace) {
		f.store(s, func(prev, next *authv1beta1.ResourceSlice, _ owners) {
			a := maps.Clone(prev.Annotations)
			if cordoned {
				a = setKey(a, lifecycle.CordonAnnotation, "true")
			} else {
				delete(a, lifecycle.CordonAnnotation)
			}
			if len(a) == 0 {
				a = nil
			}
			next.Annotations = a
		}, nil)
	}
	return nil
}

// DeleteAll deletes every ResourceSlice in namespace, and its NamespaceMaps
// when ServesNamespaceMaps is set.
func (f *ResourceSlices) DeleteAll(ctx context.Context, namespace string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, s := range f.list(namespace) {
		f.delete(s.Namespace, s.Name)
	}
	f.mapsMu.Lock()
	defer f.mapsMu.Unlock()
	if f.ServesNamespaceMaps {
		delete(f.namespaceMaps, namespace)
	}
	return nil
}

// ListBindings returns the RoleBindings and ClusterRoleBindings labelled
// for consumerID.
func (a *RBAC) ListBindings(ctx context.Context, consumerID string) ([]lifecycle.Binding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	clusterRoleBindings, roleBindings := a.labelledFor(consumerID)
	var out []lifecycle.Binding
	for _, b := range clusterRoleBindings {
		if b.Labels[clusterid.Label] == consumerID {
			out = append(out, binding("", b.Name, b.UID, b.Labels, b.Subjects))
		}
	}
	for _, b := range roleBindings {
		if b.Labels[clusterid.Label] == consumerID {
			out = append(out, binding(b.Namespace, b.Name, b.UID, b.Labels, b.Subjects))
		}
	}
	return out, nil
}

// labelledFor returns the ClusterRoleBindings and RoleBindings labelled
// for consumerID (clusterid.Label), or without the label for "", found
// through the subject and label index (bindingKeys).
func (a *RBAC) labelledFor(consumerID string) ([]*rbacv1.ClusterRoleBinding, []*rbacv1.RoleBinding) {
	indexBindings(&a.ClusterRoleBindings, &a.RoleBindings)
	return a.ClusterRoleBindings.byKeys(consumerKey(consumerID)), a.RoleBindings.byKeys(consumerKey(consumerID))
}

// DeleteBinding deletes b if the binding of its name still has its UID.
func (a *RBAC) DeleteBinding(ctx context.Context, b lifecycle.Binding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.Namespace == "" {
		if cur, ok := a.ClusterRoleBindings.get("", b.Name); ok && cur.UID == b.UID {
			a.ClusterRoleBindings.delete("", b.Name)
		}
		return nil
	}
	if cur, ok := a.RoleBindings.get(b.Namespace, b.Name); ok && cur.UID == b.UID {
		a.RoleBindings.delete(b.Namespace, b.Name)
	}
	return nil
}

func binding(namespace, name string, uid types.UID, labels map[string]string, subjects []rbacv1.Subject) lifecycle.Binding {
	return lifecycle.Binding{Namespace: namespace, Name: name, UID: uid, Labels: labels, Subjects: subjects}
}

// Revocations is an in-memory lifecycle.Revocations.
type Revocations struct {
	mu      sync.Mutex
	records map[string]lifecycle.Revocation
	writes  int
}

// Get returns the Revocation of consumerID.
func (r *Revocations) Get(ctx context.Context, consumerID string) (lifecycle.Revocation, error) {
	if err := ctx.Err(); err != nil {
		return lifecycle.Revocation{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.records[consumerID]
	if !ok {
		return lifecycle.Revocation{}, fmt.Errorf("revocation of %s: %w", consumerID, lifecycle.ErrNotFound)
	}
	return rec, nil
}

// Put stores rec.
func (r *Revocations) Put(ctx context.Context, rec lifecycle.Revocation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		r.records = map[string]lifecycle.Revocation{}
	}
	r.records[rec.ConsumerID] = rec
	r.writes++
	return nil
}

// Delete removes the Revocation of consumerID.
func (r *Revocations) Delete(ctx context.Context, consumerID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.records[consumerID]; ok {
		delete(r.records, consumerID)
		r.writes++
	}
	return nil
}

// Len returns the number of records.
func (r *Revocations) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

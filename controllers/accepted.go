package controllers

import (
	"context"
	"slices"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/rbac"
)

// ClusterBindingsTTL is how long one list of the ClusterRoleBindings
// kubepact made answers whether a consumer's cluster-wide binding is in
// place (kubepact.Provider.Unchanged), for every Tenant reconciled
// meanwhile: a restart reconciles every Tenant within seconds, with one
// list instead of one request per Tenant. The controller's role may list
// ClusterRoleBindings but not watch them, so a binding someone deletes is
// noticed at the next list: a Tenant reconciled within the TTL may be left
// without it until its next reconcile.
const ClusterBindingsTTL = 30 * time.Second

// bindingReader is a kubepact.BindingReader: RoleBindings from the
// manager's cache, which keeps the ones kubepact makes (CacheOptions);
// ClusterRoleBindings from a list of kubepact's, kept for
// ClusterBindingsTTL. A binding someone deletes is applied again at its
// Tenant's next reconcile (a change of the Tenant, its re-signing, a
// restart), as before there was a cache: the Tenant reconciler does not
// watch bindings, since a provider that unpeers deletes the bindings before
// the Tenant, and a watch would have a controller running beside it bind
// the consumer again in between.
type bindingReader struct {
	cache  client.Reader
	client kubernetes.Interface
	clock  clock.PassiveClock

	mu     sync.Mutex
	listed time.Time
	as     map[string]bool // by name: the ClusterRoleBinding is as applied
}

var _ kubepact.BindingReader = (*bindingReader)(nil)

func newBindingReader(cache client.Reader, cs kubernetes.Interface, clk clock.PassiveClock) *bindingReader {
	return &bindingReader{cache: cache, client: cs, clock: clk}
}

func (r *bindingReader) RoleBindingApplied(ctx context.Context, want *rbacv1.RoleBinding) (bool, error) {
	var got rbacv1.RoleBinding
	err := r.cache.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if !applied(got.ObjectMeta, got.RoleRef, got.Subjects, want.ObjectMeta, want.RoleRef, want.Subjects) {
		return false, nil
	}
	for _, o := range want.OwnerReferences {
		if !slices.ContainsFunc(got.OwnerReferences, func(g metav1.OwnerReference) bool {
			return g.UID == o.UID && g.Kind == o.Kind && g.Name == o.Name && g.APIVersion == o.APIVersion
		}) {
			return false, nil
		}
	}
	return true, nil
}

func (r *bindingReader) ClusterRoleBindingApplied(ctx context.Context, want *rbacv1.ClusterRoleBinding) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.clock.Now(); r.as == nil || now.Sub(r.listed) >= ClusterBindingsTTL {
		list, err := r.client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{rbac.ManagedByLabel: rbac.ManagedByValue}).String(),
		})
		if err != nil {
			return false, err
		}
		r.as, r.listed = make(map[string]bool, len(list.Items)), now
		for i := range list.Items {
			got := &list.Items[i]
			id := got.Labels[clusterid.Label]
			if clusterid.Validate(id) != nil {
				continue
			}
			w := rbac.ResourceSliceClusterRoleBinding(id)
			if got.Name == w.Name && applied(got.ObjectMeta, got.RoleRef, got.Subjects, w.ObjectMeta, w.RoleRef, w.Subjects) {
				r.as[got.Name] = true
			}
		}
	}
	return r.as[want.Name], nil
}

// appliedCluster records that the ClusterRoleBinding name was just applied,
// until the next list says otherwise.
func (r *bindingReader) appliedCluster(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.as != nil {
		r.as[name] = true
	}
}

// applied reports whether a binding stored as got is as want applies it:
// the same roleRef and subjects, and want's labels among got's.
func applied(got metav1.ObjectMeta, gotRef rbacv1.RoleRef, gotSubjects []rbacv1.Subject, want metav1.ObjectMeta, wantRef rbacv1.RoleRef, wantSubjects []rbacv1.Subject) bool {
	if gotRef != wantRef || !slices.Equal(gotSubjects, wantSubjects) {
		return false
	}
	for k, v := range want.Labels {
		if g, ok := got.Labels[k]; !ok || g != v {
			return false
		}
	}
	return true
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// errRolesNotSynced reports a peer ClusterRole whose watch has not yet
// listed it: whether it exists is not known yet.
var errRolesNotSynced = errors.New("the watch of the peer ClusterRole has not listed it yet")

// watchedRoles answers whether each of a few named ClusterRoles exists from
// a watch of each, so that the readiness check, which asks every
// readinessInterval on every replica, makes no request while nothing
// changes: one list and one watch per role, renewed as client-go's
// reflectors renew them, instead of a GET of each role every few seconds.
//
// Each watch is narrowed to one name by a metadata.name field selector: the
// API server authorizes such a list or watch against RBAC's resourceNames,
// so the controller's ClusterRole grants list and watch on these roles
// only, not on every ClusterRole of the cluster.
type watchedRoles struct {
	informers map[string]cache.SharedIndexInformer
}

// newWatchedRoles returns the watches of the ClusterRoles names through cs;
// none runs before Start.
func newWatchedRoles(cs kubernetes.Interface, names []string) *watchedRoles {
	w := &watchedRoles{informers: make(map[string]cache.SharedIndexInformer, len(names))}
	for _, name := range names {
		selector := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = selector
				return cs.RbacV1().ClusterRoles().List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = selector
				return cs.RbacV1().ClusterRoles().Watch(ctx, o)
			},
		}
		inf := cache.NewSharedIndexInformerWithOptions(lw, &rbacv1.ClusterRole{}, cache.SharedIndexInformerOptions{})
		// The rules are not read: keep the name alone in memory.
		_ = inf.SetTransform(func(o any) (any, error) {
			if r, ok := o.(*rbacv1.ClusterRole); ok {
				return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: r.Name, ResourceVersion: r.ResourceVersion}}, nil
			}
			return o, nil
		})
		w.informers[name] = inf
	}
	return w
}

// Start runs the watches until ctx ends: a manager.Runnable.
func (w *watchedRoles) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, inf := range w.informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is false: every replica's readiness reads the roles.
func (w *watchedRoles) NeedLeaderElection() bool { return false }

// HasClusterRole reports whether the watched ClusterRole name exists. It
// fails, wrapping errRolesNotSynced, before its watch has listed it, and
// for a name it does not watch.
func (w *watchedRoles) HasClusterRole(_ context.Context, name string) (bool, error) {
	inf, ok := w.informers[name]
	if !ok {
		return false, fmt.Errorf("ClusterRole %s is not watched: %w", name, errRolesNotSynced)
	}
	if !inf.HasSynced() {
		return false, fmt.Errorf("ClusterRole %s: %w", name, errRolesNotSynced)
	}
	_, exists, err := inf.GetStore().GetByKey(name)
	return exists, err
}

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secrets of every namespace in scope live in one store
// (scopedCache.secrets), kept by one reflector per namespace: a watch of
// that namespace, and nothing else per namespace. A SharedIndexInformer
// per namespace would hold a queue and, per handler, a buffer of its own:
// four times the memory per tenant namespace. The store hands each change
// to the handlers (the controllers' sources) as it takes it, in the order
// of each namespace's watch.

// syncTimeout bounds how long a namespace's first list may take before
// its space is opened again.
const syncTimeout = time.Minute

// cacheSecrets runs ns's reflector, until sp closes, and returns once its
// first list is in the store.
func (c *scopedCache) cacheSecrets(ns string, sp *space) error {
	ctx, stop := context.WithCancel(sp.ctx)
	store := &namespaceStore{c: c, ns: ns, ctx: ctx, synced: make(chan struct{})}
	lw := toolscache.NewFilteredListWatchFromClient(c.cs.CoreV1().RESTClient(), "secrets", ns, func(o *metav1.ListOptions) {
		o.LabelSelector = c.selector
	})
	r := toolscache.NewReflectorWithOptions(lw, &corev1.Secret{}, store, toolscache.ReflectorOptions{Name: "secrets/" + ns})
	go func() {
		defer stop()
		r.RunWithContext(ctx)
	}()
	select {
	case <-store.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(syncTimeout):
		stop()
		return fmt.Errorf("listing the Secrets of %s: not done within %v", ns, syncTimeout)
	}
}

// namespaceStore is the store one namespace's reflector writes: that
// namespace's part of c.secrets. Once ctx ends (the space closed, its
// Secrets purged), it takes nothing more.
type namespaceStore struct {
	c       *scopedCache
	ns      string
	ctx     context.Context
	synced  chan struct{} // closed at the first list
	initial bool          // the first list is in
}

func (s *namespaceStore) Add(obj any) error    { return s.put(obj) }
func (s *namespaceStore) Update(obj any) error { return s.put(obj) }
func (s *namespaceStore) Resync() error        { return nil }

// put adds or updates a Secret a watch brought.
func (s *namespaceStore) put(obj any) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("controllers: a %T among the Secrets of %s", obj, s.ns)
	}
	c := s.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if s.ctx.Err() != nil {
		return nil
	}
	return c.putLocked(s.ns+"/"+secret.Name, stripped(secret), false)
}

func (s *namespaceStore) Delete(obj any) error {
	c := s.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if s.ctx.Err() != nil {
		return nil
	}
	if err := c.secrets.Delete(obj); err != nil {
		return err
	}
	for _, h := range c.handlers {
		h.h.OnDelete(obj)
	}
	return nil
}

// Replace makes list the namespace's Secrets: an add or an update for each
// one listed, a delete (its last state unknown) for each one gone.
func (s *namespaceStore) Replace(list []any, _ string) error {
	c := s.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if s.ctx.Err() != nil {
		return nil
	}
	listed := make(map[string]bool, len(list))
	for _, obj := range list {
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return fmt.Errorf("controllers: a %T among the Secrets of %s", obj, s.ns)
		}
		key := s.ns + "/" + secret.Name
		listed[key] = true
		if err := c.putLocked(key, stripped(secret), !s.initial); err != nil {
			return err
		}
	}
	held, err := c.secrets.ByIndex(toolscache.NamespaceIndex, s.ns)
	if err != nil {
		return err
	}
	for _, old := range held {
		key, err := toolscache.MetaNamespaceKeyFunc(old)
		if err != nil || listed[key] {
			continue
		}
		if err := c.secrets.Delete(old); err != nil {
			return err
		}
		for _, h := range c.handlers {
			h.h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: old})
		}
	}
	if !s.initial {
		s.initial = true
		close(s.synced)
	}
	return nil
}

// putLocked stores secret under key and tells each handler. c.hmu is held.
func (c *scopedCache) putLocked(key string, secret *corev1.Secret, initial bool) error {
	old, exists, err := c.secrets.GetByKey(key)
	if err != nil {
		return err
	}
	if err := c.secrets.Add(secret); err != nil {
		return err
	}
	for _, h := range c.handlers {
		if exists {
			h.h.OnUpdate(old, secret)
		} else {
			h.h.OnAdd(secret, initial)
		}
	}
	return nil
}

// stripped is secret without its managedFields, which no reconciler reads.
func stripped(secret *corev1.Secret) *corev1.Secret {
	secret.ManagedFields = nil
	return secret
}

// purge forgets the Secrets of namespace ns, gone: its space is closed,
// so its store takes nothing more.
func (c *scopedCache) purge(ns string) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	held, err := c.secrets.ByIndex(toolscache.NamespaceIndex, ns)
	if err != nil {
		return
	}
	for _, old := range held {
		_ = c.secrets.Delete(old)
	}
}

// get copies the stored Secret of key into out.
func (c *scopedCache) get(key client.ObjectKey, out *corev1.Secret) error {
	item, exists, err := c.secrets.GetByKey(key.Namespace + "/" + key.Name)
	switch {
	case err != nil:
		return err
	case !exists:
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	item.(*corev1.Secret).DeepCopyInto(out)
	out.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return nil
}

// list copies the stored Secrets that lo selects into out.
func (c *scopedCache) list(lo *client.ListOptions, out *corev1.SecretList) error {
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		return errors.New("controllers: the Secret cache lists by label only")
	}
	held, err := c.secrets.ByIndex(toolscache.NamespaceIndex, lo.Namespace)
	if err != nil {
		return err
	}
	out.Items = make([]corev1.Secret, 0, len(held))
	for _, item := range held {
		secret := item.(*corev1.Secret)
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(secret.Labels)) {
			continue
		}
		out.Items = append(out.Items, *secret.DeepCopy())
	}
	return nil
}

// allReady tells whether every space is ready now.
func (c *scopedCache) allReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sp := range c.spaces {
		select {
		case <-sp.ready:
		default:
			return false
		}
	}
	return true
}

// secretInformer is the informer of the Secrets in scope: its handlers
// get every change of the store.
type secretInformer struct{ c *scopedCache }

func (i *secretInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (i *secretInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

// AddEventHandlerWithOptions adds h, which has every Secret held now at
// once (in its initial list) and every change after. The store has no
// resync: the options' period is not used.
func (i *secretInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	c := i.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	for _, item := range c.secrets.List() {
		h.OnAdd(item, true)
	}
	r := &fanRegistration{c: c, h: h}
	c.handlers = append(c.handlers, r)
	return r, nil
}

func (i *secretInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*fanRegistration)
	if !ok {
		return fmt.Errorf("controllers: not a registration of the Secret cache: %T", handle)
	}
	c := i.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	for k, h := range c.handlers {
		if h == r {
			c.handlers = append(c.handlers[:k], c.handlers[k+1:]...)
			break
		}
	}
	return nil
}

func (i *secretInformer) AddIndexers(toolscache.Indexers) error {
	return errors.New("controllers: the Secret cache has no index")
}

// HasSynced tells whether every namespace present at the start, and every
// one opened since, is in the store.
func (i *secretInformer) HasSynced() bool { return i.c.synced() }

func (i *secretInformer) IsStopped() bool {
	select {
	case <-i.c.started:
		return i.c.ctx.Err() != nil
	default:
		return false
	}
}

// synced tells whether the namespaces are followed and every space is
// ready.
func (c *scopedCache) synced() bool {
	select {
	case <-c.following:
		return c.allReady()
	default:
		return false
	}
}

// fanRegistration is one handler of secretInformer. The store hands it
// each change as it takes it, so it has synced once the store has.
type fanRegistration struct {
	c *scopedCache
	h toolscache.ResourceEventHandler
}

func (r *fanRegistration) HasSynced() bool { return r.c.synced() }

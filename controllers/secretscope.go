package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/peer"
)

// SecretReaderRole names the ClusterRole that grants get, list and watch of
// Secrets, and each RoleBinding that binds it to the controller in one
// namespace (config/controller/rbac/secret_reader_role.yaml).
const SecretReaderRole = "kubepact-controller-secrets"

// ErrSecretOutOfScope is returned for a Secret read, list or watch outside
// the namespaces a SecretScope reads: a tenant namespace, or one it names.
var ErrSecretOutOfScope = errors.New("controllers: Secrets are read only in tenant namespaces and the namespaces the controller names")

// secretGroupKind is the kind a SecretScope serves itself.
var secretGroupKind = schema.GroupKind{Kind: "Secret"}

// SecretScope confines the controller's reads of Secrets to the namespaces
// it works in: the tenant namespaces (liqo-tenant-*), as they come and go,
// and the Namespaces it names (the key namespace, the enrolment
// namespace). Its cache (NewCache, for manager.Options.NewCache) keeps the
// Secrets of each such namespace from a watch of that namespace alone,
// after it binds SecretReaderRole there to Subject, so the controller's
// credentials need no read of Secrets anywhere else: a thief holding them
// lists no Secret of kube-system. Every other object is cached as
// cache.New caches it.
//
// A restart makes no write: a binding found in the cache is kept, and each
// namespace costs one watch (client-go's watch-list). A binding is made
// when missing, and its namespace read once the API server authorizes it.
type SecretScope struct {
	// Subject is who the controller's clients are (NewSecretScope asks
	// the API server), the one subject of each binding.
	Subject rbacv1.Subject
	// Namespaces are read besides the tenant namespaces.
	Namespaces []string
}

// NewSecretScope returns the scope of a controller whose clients cs
// authenticates, as the API server names them (a SelfSubjectReview), that
// reads Secrets in the tenant namespaces and in namespaces.
func NewSecretScope(ctx context.Context, cs kubernetes.Interface, namespaces ...string) (SecretScope, error) {
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return SecretScope{}, fmt.Errorf("controllers: who the controller is (a SelfSubjectReview): %w", err)
	}
	return SecretScope{Subject: subjectOf(review.Status.UserInfo.Username), Namespaces: namespaces}, nil
}

// subjectOf is the RBAC subject of the user name a request authenticates
// as: a ServiceAccount's, or a user's.
func subjectOf(user string) rbacv1.Subject {
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
		}
	}
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
}

// inScope tells whether s reads Secrets in namespace ns.
func (s SecretScope) inScope(ns string) bool {
	if strings.HasPrefix(ns, clusterid.TenantNamespacePrefix) && len(ns) > len(clusterid.TenantNamespacePrefix) {
		return true
	}
	for _, n := range s.Namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// NewCache is a cache.NewCacheFunc: opts's Secret selection
// (CacheOptions's label) applies in each namespace of s.
func (s SecretScope) NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	if s.Subject.Name == "" || s.Subject.Kind == "" {
		return nil, fmt.Errorf("%w: a SecretScope needs the controller's subject", peer.ErrInvalidConfig)
	}
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme // as cache.New defaults it
	}
	if opts.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		opts.HTTPClient = hc
	}
	others, secrets := opts, cache.ByObject{}
	others.ByObject = map[client.Object]cache.ByObject{}
	for o, by := range opts.ByObject {
		if _, ok := o.(*corev1.Secret); ok {
			secrets = by
			continue
		}
		others.ByObject[o] = by
	}
	inner, err := cache.New(cfg, others)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, opts.HTTPClient)
	if err != nil {
		return nil, err
	}
	c := &scopedCache{Cache: inner, scope: s, cs: cs, scheme: opts.Scheme,
		secrets: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}),
		spaces:  map[string]*space{}, started: make(chan struct{}), following: make(chan struct{})}
	if secrets.Label != nil {
		c.selector = secrets.Label.String()
	}
	return c, nil
}

// scopedCache is SecretScope's cache: the Secrets of the namespaces in
// scope in one store, kept by a reflector per namespace (secretstore.go),
// everything else in the embedded cache.
type scopedCache struct {
	cache.Cache
	scope    SecretScope
	cs       kubernetes.Interface
	scheme   *runtime.Scheme
	selector string // the label selector of the Secrets kept

	// hmu orders the store's changes and their handlers: each handler
	// has every Secret once, added when it registers or as it comes.
	hmu      sync.Mutex
	secrets  toolscache.Indexer // by namespace/name, indexed by namespace
	handlers []*fanRegistration

	mu     sync.Mutex
	ctx    context.Context // Start's
	spaces map[string]*space
	// started is closed once Start runs; following once every namespace
	// present at the start has a space.
	started, following chan struct{}
}

// space is one namespace's Secrets: ready is closed once they are in the
// store (its reflector's first list is in) or cannot be (err set).
type space struct {
	ctx   context.Context
	stop  context.CancelFunc
	ready chan struct{}
	err   error
}

// Start runs the embedded cache and follows the namespaces, opening a
// space for each in scope and closing it when the namespace goes.
func (c *scopedCache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.ctx != nil {
		c.mu.Unlock()
		return errors.New("controllers: the Secret cache was already started")
	}
	c.ctx = ctx
	close(c.started)
	c.mu.Unlock()
	done := make(chan error, 2)
	go func() { done <- c.Cache.Start(ctx) }()
	go func() {
		if err := c.follow(ctx); err != nil {
			done <- err
		}
	}()
	return <-done
}

// follow watches the namespaces' metadata (the manager's cache of it), and
// the controller's bindings. Without them no Secret could be read: an
// error ends Start.
func (c *scopedCache) follow(ctx context.Context) error {
	inf, err := c.Cache.GetInformer(ctx, namespaceMetadata())
	if err != nil {
		return fmt.Errorf("controllers: following the namespaces: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.seen,
		UpdateFunc: func(_, o any) { c.seen(o) },
		DeleteFunc: c.gone,
	})
	if err != nil {
		return fmt.Errorf("controllers: following the namespaces: %w", err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // stopped
	}
	close(c.following)
	// A binding taken back or changed is made again: a watch outlives
	// the binding it started under, but not its next relist.
	bindings, err := c.Cache.GetInformer(ctx, &rbacv1.RoleBinding{})
	if err == nil {
		_, err = bindings.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, o any) {
				if b, ok := o.(*rbacv1.RoleBinding); ok && !bindsOnly(b, c.scope.Subject) {
					c.rebind(o)
				}
			},
			DeleteFunc: c.rebind,
		})
	}
	if err != nil {
		return fmt.Errorf("controllers: following the controller's bindings: %w", err)
	}
	return nil
}

// rebind binds SecretReaderRole again in the namespace of o, the
// controller's binding there, deleted or changed, while the namespace has
// a space.
func (c *scopedCache) rebind(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	b, ok := o.(*rbacv1.RoleBinding)
	if !ok || b.Name != SecretReaderRole {
		return
	}
	c.mu.Lock()
	sp := c.spaces[b.Namespace]
	c.mu.Unlock()
	if sp == nil {
		return
	}
	go func() { _ = c.retry(sp, b.Namespace, func() error { return c.bind(sp.ctx, b.Namespace) }) }()
}

// retry runs f until it succeeds, returns that ns is gone, or sp closes;
// it returns f's last error.
func (c *scopedCache) retry(sp *space, ns string, f func() error) error {
	log := logf.FromContext(c.ctx).WithName("secret-scope").WithValues("namespace", ns)
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 8, Cap: 30 * time.Second}
	for {
		err := f()
		if err == nil || apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err
		}
		if sp.ctx.Err() != nil {
			return sp.ctx.Err()
		}
		log.Error(err, "reading the namespace's Secrets; retrying")
		select {
		case <-time.After(backoff.Step()):
		case <-sp.ctx.Done():
			return sp.ctx.Err()
		}
	}
}

// namespaceMetadata is the object of the namespaces' metadata informer,
// the one tenantNamespaces registers.
func namespaceMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
}

// seen opens a space for a namespace in scope, and closes the space of
// one that terminates.
func (c *scopedCache) seen(o any) {
	m, ok := o.(metav1.Object)
	if !ok || !c.scope.inScope(m.GetName()) {
		return
	}
	if m.GetDeletionTimestamp() != nil {
		c.gone(o)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openLocked(m.GetName())
}

// gone closes the space of a namespace deleted, or terminating.
func (c *scopedCache) gone(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	c.mu.Lock()
	sp := c.spaces[m.GetName()]
	delete(c.spaces, m.GetName())
	c.mu.Unlock()
	if sp != nil {
		sp.stop()
		c.purge(m.GetName())
	}
}

// openLocked returns namespace ns's space, opening it when it has none.
// c.mu is held.
func (c *scopedCache) openLocked(ns string) *space {
	if sp := c.spaces[ns]; sp != nil {
		return sp
	}
	ctx, stop := context.WithCancel(c.ctx)
	sp := &space{ctx: ctx, stop: stop, ready: make(chan struct{})}
	c.spaces[ns] = sp
	go c.open(ns, sp)
	return sp
}

// open binds SecretReaderRole in ns, then caches its Secrets, retrying
// with backoff until it can, ns goes, or the cache stops.
func (c *scopedCache) open(ns string, sp *space) {
	err := c.retry(sp, ns, func() error {
		if err := c.bind(sp.ctx, ns); err != nil {
			return err
		}
		return c.cacheSecrets(ns, sp)
	})
	if err != nil {
		c.drop(ns, sp, err)
		return
	}
	close(sp.ready)
}

// drop forgets sp, which could not be opened for err.
func (c *scopedCache) drop(ns string, sp *space, err error) {
	c.mu.Lock()
	current := c.spaces[ns] == sp
	if current {
		delete(c.spaces, ns)
	}
	c.mu.Unlock()
	sp.err = err
	sp.stop()
	if current {
		c.purge(ns) // what a list cut short left
	}
	close(sp.ready)
}

// bind binds SecretReaderRole in ns to the controller, unless the cache
// holds that binding already, and waits until the API server authorizes
// the reads it grants.
func (c *scopedCache) bind(ctx context.Context, ns string) error {
	var held rbacv1.RoleBinding
	err := c.Cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: SecretReaderRole}, &held)
	switch {
	case err == nil && bindsOnly(&held, c.scope.Subject):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	s := c.scope.Subject
	subject := rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name)
	if s.Namespace != "" {
		subject.WithNamespace(s.Namespace)
	}
	if s.APIGroup != "" {
		subject.WithAPIGroup(s.APIGroup)
	}
	binding := rbacv1ac.RoleBinding(SecretReaderRole, ns).
		WithLabels(map[string]string{"app.kubernetes.io/name": "kubepact-controller"}).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(SecretReaderRole)).
		WithSubjects(subject)
	if _, err := c.cs.RbacV1().RoleBindings(ns).Apply(ctx, binding, metav1.ApplyOptions{FieldManager: kube.FieldManager, Force: true}); err != nil {
		return fmt.Errorf("binding %s: %w", SecretReaderRole, err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "watch", Resource: "secrets"}},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	})
}

// bindsOnly tells whether b binds SecretReaderRole to s alone.
func bindsOnly(b *rbacv1.RoleBinding, s rbacv1.Subject) bool {
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != SecretReaderRole || len(b.Subjects) != 1 {
		return false
	}
	got := b.Subjects[0]
	return got.Kind == s.Kind && got.Name == s.Name && got.Namespace == s.Namespace
}

// spaceOf returns namespace ns's space once it is ready.
func (c *scopedCache) spaceOf(ctx context.Context, ns string) (*space, error) {
	if !c.scope.inScope(ns) {
		return nil, fmt.Errorf("%w: namespace %q", ErrSecretOutOfScope, ns)
	}
	c.mu.Lock()
	if c.ctx == nil {
		c.mu.Unlock()
		return nil, &cache.ErrCacheNotStarted{}
	}
	sp := c.openLocked(ns)
	c.mu.Unlock()
	select {
	case <-sp.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if sp.err != nil {
		return nil, sp.err
	}
	return sp, nil
}

// isSecret tells whether obj (or, with list, obj's items) are Secrets.
func (c *scopedCache) isSecret(obj runtime.Object, list bool) bool {
	if _, ok := obj.(*corev1.Secret); ok {
		return true
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return false
	}
	if list {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return gvk.GroupKind() == secretGroupKind
}

// Get reads a Secret from the store, once its namespace's space is ready.
func (c *scopedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !c.isSecret(obj, false) {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	out, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("controllers: the Secret cache keeps typed Secrets only, not %T", obj)
	}
	if _, err := c.spaceOf(ctx, key.Namespace); err != nil {
		return notFoundIfGone(err, key.Name)
	}
	return c.get(key, out)
}

// List lists the Secrets of one namespace from the store.
func (c *scopedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !c.isSecret(list, true) {
		return c.Cache.List(ctx, list, opts...)
	}
	out, ok := list.(*corev1.SecretList)
	if !ok {
		return fmt.Errorf("controllers: the Secret cache keeps typed Secrets only, not %T", list)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if _, err := c.spaceOf(ctx, lo.Namespace); err != nil {
		if apierrors.IsNotFound(notFoundIfGone(err, "")) {
			out.Items = nil
			return nil
		}
		return err
	}
	return c.list(lo, out)
}

// GetInformer returns, for Secrets, an informer whose handlers get the
// events of every namespace in scope, present and to come.
func (c *scopedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if !c.isSecret(obj, false) {
		return c.Cache.GetInformer(ctx, obj, opts...)
	}
	if _, ok := obj.(*corev1.Secret); !ok {
		return nil, fmt.Errorf("controllers: the Secret cache keeps typed Secrets only, not %T", obj)
	}
	return &secretInformer{c: c}, nil
}

// GetInformerForKind is GetInformer for a kind.
func (c *scopedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk.GroupKind() == secretGroupKind {
		return c.GetInformer(ctx, &corev1.Secret{}, opts...)
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer keeps the Secrets' spaces: they go with their namespaces.
func (c *scopedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if c.isSecret(obj, false) {
		return nil
	}
	return c.Cache.RemoveInformer(ctx, obj)
}

// IndexField indexes no Secret: no reconciler looks one up by an index.
func (c *scopedCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if c.isSecret(obj, false) {
		return fmt.Errorf("controllers: the Secret cache has no index (%s)", field)
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// WaitForCacheSync waits for the embedded cache, then for the space of
// every namespace in scope present at the start.
func (c *scopedCache) WaitForCacheSync(ctx context.Context) bool {
	if !c.Cache.WaitForCacheSync(ctx) {
		return false
	}
	select {
	case <-c.following:
	case <-ctx.Done():
		return false
	}
	return c.spacesReady(ctx)
}

// spacesReady waits for every space there is to be ready.
func (c *scopedCache) spacesReady(ctx context.Context) bool {
	c.mu.Lock()
	spaces := make([]*space, 0, len(c.spaces))
	for _, sp := range c.spaces {
		spaces = append(spaces, sp)
	}
	c.mu.Unlock()
	for _, sp := range spaces {
		select {
		case <-sp.ready:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

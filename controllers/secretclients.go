package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The clients the reconcilers' adapters use read around the manager's
// cache. Under a SecretScope's cache, each read of a Secret first waits
// until its namespace may be read (scopedCache.readable).

// readable returns once the Secrets of namespace ns may be read, binding
// SecretReaderRole there first when needed. It returns an error that
// apierrors.IsNotFound recognizes when ns does not exist or terminates,
// and nil for a namespace outside the scope (the API server answers) or
// before the cache starts.
func (c *scopedCache) readable(ctx context.Context, ns string) error {
	c.mu.Lock()
	started := c.ctx != nil
	c.mu.Unlock()
	if !started || !c.scope.inScope(ns) {
		return nil
	}
	_, err := c.spaceOf(ctx, ns)
	return err
}

// secretReadiness is a cache that confines the reads of Secrets:
// scopedCache.
type secretReadiness interface {
	readable(ctx context.Context, ns string) error
}

// scopedClients returns cs and c, or, when mgr's cache confines the reads
// of Secrets, clients whose reads of a Secret in a namespace in scope
// first wait until it may be read: a reconciler that reads before it
// creates, in a tenant namespace it is about to make, gets not found, as
// it would with a cluster-wide grant, instead of forbidden.
func scopedClients(mgr manager.Manager, cs kubernetes.Interface, c client.Client) (kubernetes.Interface, client.Client) {
	r, ok := mgr.GetCache().(secretReadiness)
	if !ok {
		return cs, c
	}
	return &scopedClientset{Interface: cs, r: r}, &scopedClient{Client: c, r: r}
}

// notFoundIfGone turns readable's "namespace gone" into a Secret not found.
func notFoundIfGone(err error, name string) error {
	if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return err
}

type scopedClientset struct {
	kubernetes.Interface
	r secretReadiness
}

func (c *scopedClientset) CoreV1() corev1client.CoreV1Interface {
	return &scopedCoreV1{CoreV1Interface: c.Interface.CoreV1(), r: c.r}
}

type scopedCoreV1 struct {
	corev1client.CoreV1Interface
	r secretReadiness
}

func (c *scopedCoreV1) Secrets(ns string) corev1client.SecretInterface {
	return &scopedSecrets{SecretInterface: c.CoreV1Interface.Secrets(ns), ns: ns, r: c.r}
}

// scopedSecrets waits for readable before each read.
type scopedSecrets struct {
	corev1client.SecretInterface
	ns string
	r  secretReadiness
}

func (s *scopedSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	if err := s.r.readable(ctx, s.ns); err != nil {
		return nil, notFoundIfGone(err, name)
	}
	return s.SecretInterface.Get(ctx, name, opts)
}

func (s *scopedSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	if err := s.r.readable(ctx, s.ns); err != nil {
		if apierrors.IsNotFound(notFoundIfGone(err, "")) {
			return &corev1.SecretList{}, nil
		}
		return nil, err
	}
	return s.SecretInterface.List(ctx, opts)
}

// scopedClient waits for readable before each read of a Secret.
type scopedClient struct {
	client.Client
	r secretReadiness
}

func (c *scopedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		if err := c.r.readable(ctx, key.Namespace); err != nil {
			return notFoundIfGone(err, key.Name)
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *scopedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		if err := c.r.readable(ctx, (&client.ListOptions{}).ApplyOptions(opts).Namespace); err != nil {
			if apierrors.IsNotFound(notFoundIfGone(err, "")) {
				return nil
			}
			return err
		}
	}
	return c.Client.List(ctx, list, opts...)
}

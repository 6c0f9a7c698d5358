package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrolhttp"
)

// newRESTClient returns a REST client of peering.kubepact.io/v1alpha1 that
// knows only that group's types (a scheme of its own: client-go's global
// scheme is left alone).
func newRESTClient(cfg *rest.Config) (*rest.RESTClient, error) {
	scheme := runtime.NewScheme()
	if err := peeringv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &peeringv1alpha1.SchemeGroupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.UserAgent = "kubepact-enrolment/" + Version()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client of %s: %w", peeringv1alpha1.SchemeGroupVersion, err)
	}
	return client, nil
}

// newInformer returns an informer of every AuthorizedConsumer. It lists
// and watches, and never gets one by name.
func newInformer(cfg *rest.Config) (cache.SharedIndexInformer, error) {
	client, err := newRESTClient(cfg)
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(client, peeringv1alpha1.AuthorizedConsumerResource, metav1.NamespaceAll, fields.Everything())
	informer := cache.NewSharedIndexInformer(lw, &peeringv1alpha1.AuthorizedConsumer{}, 0, cache.Indexers{})
	// Only what servedGrant reads is kept.
	if err := informer.SetTransform(func(obj any) (any, error) {
		if ac, ok := obj.(*peeringv1alpha1.AuthorizedConsumer); ok {
			ac.ManagedFields = nil
			ac.Spec.Request = peeringv1alpha1.EnrolmentRequest{}
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	return informer, nil
}

// servedGrants looks grants up in store, a cache of AuthorizedConsumers
// by name.
func servedGrants(store cache.Store) enrolhttp.Grants {
	return func(consumerID string) *peeringv1alpha1.Grant {
		obj, ok, err := store.GetByKey(consumerID)
		if err != nil || !ok {
			return nil
		}
		ac, ok := obj.(*peeringv1alpha1.AuthorizedConsumer)
		if !ok {
			return nil
		}
		return servedGrant(ac, consumerID)
	}
}

// servedGrant returns the grant ac's status holds for consumerID, or nil
// unless the provider's controller says it is in force: Ready is True for
// ac's current generation, ac is not being deleted, and the grant is for
// the consumer ac names. A
// grant from before a change of ac's spec (its keys, its request) is not
// served until the controller has judged the change.
func servedGrant(ac *peeringv1alpha1.AuthorizedConsumer, consumerID string) *peeringv1alpha1.Grant {
	g := ac.Status.Grant
	switch {
	case g == nil,
		ac.Name != consumerID, ac.Spec.ClusterID != consumerID, g.ConsumerID != consumerID,
		ac.DeletionTimestamp != nil,
		ac.Status.ObservedGeneration != ac.Generation,
		!meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady):
		return nil
	}
	if c := meta.FindStatusCondition(ac.Status.Conditions, peeringv1alpha1.ConditionReady); c.ObservedGeneration != 0 && c.ObservedGeneration != ac.Generation {
		return nil
	}
	return g
}

package controllers

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
)

// EnrolmentServiceName is the Service of the enrolment endpoint, in the
// enrolment namespace: its serving certificate names it.
const EnrolmentServiceName = "kubepact-enrolment"

// ServingLifetime is the lifetime of the enrolment endpoint's serving
// certificates; each is replaced with a third of it left.
const ServingLifetime = 90 * 24 * time.Hour

// enrolmentRefresh is how often the leader checks the enrolment key's
// record and the serving certificate, and how soon it tries again after
// a failure.
const (
	enrolmentRefresh = time.Hour
	enrolmentRetry   = time.Minute
)

// enrolmentKeeper keeps, while its replica leads, the enrolment key, its
// public record (what TrustedProviders commit) and the enrolment
// endpoint's serving certificate, issued by that key.
type enrolmentKeeper struct {
	keys       *kube.EnrolmentKeys
	record     *kube.PublicKeyRecord
	providerID string
	namespace  string
	clock      clock.PassiveClock
	log        logr.Logger
}

// Start keeps them until ctx ends.
func (k *enrolmentKeeper) Start(ctx context.Context) error {
	for {
		wait := enrolmentRefresh
		if err := k.keep(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			k.log.Error(err, "keeping the enrolment key, its record and the endpoint's certificate")
			wait = enrolmentRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (k *enrolmentKeeper) keep(ctx context.Context) error {
	key, err := k.keys.Ensure(ctx, rand.Reader)
	if err != nil {
		return err
	}
	if err := k.record.Publish(ctx, key.Public()); err != nil {
		return err
	}
	svc := EnrolmentServiceName + "." + k.namespace
	names := []string{EnrolmentServiceName, svc, svc + ".svc", svc + ".svc.cluster.local"}
	return k.keys.EnsureServing(ctx, rand.Reader, key, k.providerID, names, k.clock.Now(), ServingLifetime)
}

// servesPeering reports whether the cluster serves the peering.kubepact.io
// kinds.
func servesPeering(mgr manager.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(peeringv1alpha1.SchemeGroupVersion.WithKind(peeringv1alpha1.AuthorizedConsumerKind).GroupKind(),
		peeringv1alpha1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}

// setupEnrolment adds the provider's side of peering from Git to mgr: the
// keeper of the enrolment key, leading, and the AuthorizedConsumer
// reconciler.
func setupEnrolment(mgr manager.Manager, cs kubernetes.Interface, p *provider.Provider, cfg ProviderConfig) error {
	keeper := &enrolmentKeeper{
		keys: kube.NewEnrolmentKeys(cs, cfg.EnrolmentNamespace), record: kube.NewEnrolmentKeyRecord(cs, cfg.EnrolmentNamespace),
		providerID: cfg.ClusterID, namespace: cfg.EnrolmentNamespace, clock: realClock(cfg.Clock),
		log: mgr.GetLogger().WithValues("controller", authorizedConsumerControllerName),
	}
	if err := mgr.Add(keeper); err != nil {
		return fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}
	return setupAuthorizedConsumers(mgr, &authorizedConsumerReconciler{
		client: mgr.GetClient(), provider: p, keys: keeper.keys,
		events: mgr.GetEventRecorder(authorizedConsumerControllerName), clock: realClock(cfg.Clock),
	})
}

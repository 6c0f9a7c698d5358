package controllers

import (
	"context"
	"crypto"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/peer"
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

// KeyRotation is a step of a rotation of a key the other cluster
// commits: a provider's enrolment key, which consumers commit in their
// TrustedProviders, or a consumer's cluster key, which providers commit in
// their AuthorizedConsumers (two keys while it overlaps).
type KeyRotation string

const (
	// KeyRotationNone keeps the key, and publishes a next key only while
	// one is held.
	KeyRotationNone KeyRotation = ""
	// KeyRotationPrepare makes a next key and publishes it beside the key
	// (kube.EnrolmentNextPublicKeyKey of the key's record), for the other
	// cluster to commit as its second key; the key still signs. A
	// consumer's enrolment requests are from then on signed by the next
	// key, with the hand-over from the key (enrol.HandOver).
	KeyRotationPrepare KeyRotation = "prepare"
	// KeyRotationSwitch makes the next key the key, and the record
	// publishes it alone. An enrolment key then signs every grant again
	// and the endpoint's certificate. Without a next key it changes
	// nothing.
	KeyRotationSwitch KeyRotation = "switch"
)

func (r KeyRotation) check() error {
	switch r {
	case KeyRotationNone, KeyRotationPrepare, KeyRotationSwitch:
		return nil
	}
	return fmt.Errorf("%w: %q is not prepare or switch", peer.ErrInvalidConfig, string(r))
}

// enrolmentKeeper keeps, while its replica leads, the enrolment key (and
// the next one, through a rotation), its public record (what
// TrustedProviders commit) and the enrolment endpoint's serving
// certificate, issued by that key.
type enrolmentKeeper struct {
	keys       *kube.EnrolmentKeys
	record     *kube.PublicKeyRecord
	rotation   KeyRotation
	providerID string
	namespace  string
	clock      clock.PassiveClock
	log        logr.Logger

	mu  sync.Mutex
	key *keys.PrivateKey // the enrolment key, once read
	// changed hears of each new enrolment key: the grants are signed
	// again.
	changed chan event.GenericEvent
	client  client.Reader
}

// current returns the enrolment key: the one the keeper last kept, else
// the one the Secret holds (made when missing).
func (k *enrolmentKeeper) current(ctx context.Context) (*keys.PrivateKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	key, err := k.keys.Ensure(ctx, rand.Reader)
	if err != nil {
		return nil, err
	}
	k.key = key
	return key, nil
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
	key, next, err := k.rotate(ctx)
	if err != nil {
		return err
	}
	var nextPublic crypto.PublicKey
	if next != nil {
		nextPublic = next.Public()
	}
	if err := k.record.PublishWithNext(ctx, key.Public(), nextPublic); err != nil {
		return err
	}
	svc := EnrolmentServiceName + "." + k.namespace
	names := []string{EnrolmentServiceName, svc, svc + ".svc", svc + ".svc.cluster.local"}
	return k.keys.EnsureServing(ctx, rand.Reader, key, k.providerID, names, k.clock.Now(), ServingLifetime)
}

// rotate takes the step of k.rotation and returns the enrolment key and
// the next one (nil when none). After a switch it hands every
// AuthorizedConsumer to its reconciler, which signs its grant again.
func (k *enrolmentKeeper) rotate(ctx context.Context) (key, next *keys.PrivateKey, err error) {
	if k.rotation == KeyRotationSwitch {
		key, err = k.keys.Promote(ctx, rand.Reader)
	} else {
		key, err = k.keys.Ensure(ctx, rand.Reader)
	}
	if err != nil {
		return nil, nil, err
	}
	switch k.rotation {
	case KeyRotationPrepare:
		next, err = k.keys.EnsureNext(ctx, rand.Reader)
	case KeyRotationNone:
		next, err = k.keys.Next(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	k.mu.Lock()
	changed := k.key != nil && !keys.Equal(k.key.Public(), key.Public())
	k.key = key
	k.mu.Unlock()
	if changed {
		k.log.Info("the enrolment key changed: signing every grant again", "namespace", k.namespace)
		return key, next, k.resign(ctx)
	}
	return key, next, nil
}

// resign hands every AuthorizedConsumer to its reconciler.
func (k *enrolmentKeeper) resign(ctx context.Context) error {
	var list peeringv1alpha1.AuthorizedConsumerList
	if err := k.client.List(ctx, &list); err != nil {
		return err
	}
	for i := range list.Items {
		select {
		case k.changed <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
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
		rotation: cfg.EnrolmentKeyRotation, providerID: cfg.ClusterID, namespace: cfg.EnrolmentNamespace, clock: realClock(cfg.Clock),
		log:     mgr.GetLogger().WithValues("controller", authorizedConsumerControllerName),
		changed: make(chan event.GenericEvent), client: mgr.GetClient(),
	}
	if err := mgr.Add(keeper); err != nil {
		return fmt.Errorf("controllers: provider %q: %w", cfg.ClusterID, err)
	}
	return setupAuthorizedConsumers(mgr, &authorizedConsumerReconciler{
		client: mgr.GetClient(), provider: p, keys: keeper,
		events: mgr.GetEventRecorder(authorizedConsumerControllerName), clock: realClock(cfg.Clock),
	}, keeper.changed)
}

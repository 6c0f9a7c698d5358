package kube

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
)

// NonceStore is a nonce.Store over the provider's "liqo-nonce" Secrets, one
// in the tenant namespace of each consumer.
type NonceStore struct {
	client kubernetes.Interface
	// redeemFrom, when set, is where MarkRedeemed first reads the Secret
	// it marks (WithRedeemReader).
	redeemFrom ctrlclient.Reader

	// written holds the nonce Secrets as this store last wrote them (Put,
	// MarkRedeemed), by cluster ID, at most maxWritten: without
	// redeemFrom, MarkRedeemed first writes on the one of its cluster ID,
	// as on a read.
	mu      sync.Mutex
	written map[string]*corev1.Secret
}

// maxWritten bounds NonceStore.written: past it, the Secrets are
// forgotten, and MarkRedeemed reads them.
const maxWritten = 1024

var _ nonce.Peeker = (*NonceStore)(nil)

// NewNonceStore returns a NonceStore using client.
func NewNonceStore(client kubernetes.Interface) *NonceStore { return &NonceStore{client: client} }

// WithRedeemReader returns a NonceStore whose MarkRedeemed first reads the
// nonce Secret from r, such as the cache of a controller that watches
// nonce Secrets, instead of the API server. The mark it writes carries the
// resourceVersion read, so a Secret read stale conflicts, and is read again
// from the API server: what is marked is always the Secret as stored.
func (s *NonceStore) WithRedeemReader(r ctrlclient.Reader) *NonceStore {
	return &NonceStore{client: s.client, redeemFrom: r}
}

// Put stores e as the nonce of clusterID, replacing any earlier one.
func (s *NonceStore) Put(ctx context.Context, clusterID string, e nonce.Entry) error {
	stored, err := applySecretStored(ctx, s.client, nonce.Secret(clusterID, e))
	s.remember(clusterID, stored)
	return err
}

// PutOver stores e as the nonce of clusterID, as Put does, on the nonce
// Secret as it was at resourceVersion, such as a copy read from a cache:
// when the Secret changed since, it fails with an error for which
// apierrors.IsConflict holds and leaves the Secret as it is. A Secret gone
// is created again, as Put would.
func (s *NonceStore) PutOver(ctx context.Context, clusterID string, e nonce.Entry, resourceVersion string) error {
	stored, err := s.applyAt(ctx, clusterID, e, resourceVersion)
	if err != nil {
		return wrap(err, "writing", "Secret", clusterid.TenantNamespace(clusterID), nonce.SecretName)
	}
	s.remember(clusterID, stored)
	return nil
}

// applyAt applies e as the whole nonce Secret of clusterID that kubepact
// owns, conditional on the Secret being at resourceVersion.
func (s *NonceStore) applyAt(ctx context.Context, clusterID string, e nonce.Entry, resourceVersion string) (*corev1.Secret, error) {
	want := nonce.Secret(clusterID, e)
	ac := corev1ac.Secret(want.Name, want.Namespace).WithResourceVersion(resourceVersion).
		WithType(want.Type).WithLabels(want.Labels).WithAnnotations(want.Annotations).WithData(want.Data)
	return s.client.CoreV1().Secrets(want.Namespace).Apply(ctx, ac, applyOptions(true))
}

// remember keeps sec, nil to forget, as the nonce Secret of clusterID last
// written.
func (s *NonceStore) remember(clusterID string, sec *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec == nil {
		delete(s.written, clusterID)
		return
	}
	if s.written == nil || len(s.written) >= maxWritten {
		s.written = make(map[string]*corev1.Secret)
	}
	s.written[clusterID] = sec
}

// lastWritten returns a copy of the nonce Secret of clusterID last
// written, nil when there is none.
func (s *NonceStore) lastWritten(clusterID string) *corev1.Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec := s.written[clusterID]; sec != nil {
		return sec.DeepCopy()
	}
	return nil
}

// Get returns the nonce of clusterID.
func (s *NonceStore) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	sec, err := s.client.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "reading", "Secret", ns, nonce.SecretName)
	}
	return nonce.FromSecret(sec)
}

// Peek returns the nonce of clusterID as WithRedeemReader's reader holds
// it or, without one, as this store last wrote it, with no request to the
// API server; false when it has none (see nonce.Peeker).
func (s *NonceStore) Peek(ctx context.Context, clusterID string) (nonce.Entry, bool) {
	sec := s.atHand(ctx, clusterID)
	if sec == nil {
		return nonce.Entry{}, false
	}
	e, err := nonce.FromSecret(sec)
	return e, err == nil
}

// atHand returns the nonce Secret of clusterID as WithRedeemReader's
// reader holds it or, without one, as this store last wrote it; nil when
// there is no such copy.
func (s *NonceStore) atHand(ctx context.Context, clusterID string) *corev1.Secret {
	if s.redeemFrom == nil {
		return s.lastWritten(clusterID)
	}
	sec := &corev1.Secret{}
	key := ctrlclient.ObjectKey{Namespace: clusterid.TenantNamespace(clusterID), Name: nonce.SecretName}
	if s.redeemFrom.Get(ctx, key, sec) != nil {
		return nil
	}
	return sec
}

// MarkRedeemed records r on the nonce Secret of clusterID unless it records
// a redemption already, and returns the entry. The update is conditional on
// the Secret read, so of concurrent callers exactly one records its
// redemption and the others read it back. It first writes on the Secret
// as WithRedeemReader's reader holds it or, without one, as this store's
// Put last wrote it, without a read: that copy is only used to write on,
// and any other outcome (a conflict, no copy, one redeemed already, one
// that does not parse) is read again from the API server.
func (s *NonceStore) MarkRedeemed(ctx context.Context, clusterID string, r nonce.Redemption) (nonce.Entry, error) {
	ns := clusterid.TenantNamespace(clusterID)
	secrets := s.client.CoreV1().Secrets(ns)
	read := func() (*corev1.Secret, error) {
		sec, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
		}
		if err != nil {
			return nil, wrap(err, "reading", "Secret", ns, nonce.SecretName)
		}
		return sec, nil
	}
	var out nonce.Entry
	first := true
	err := retryOnConflict(ctx, func() error {
		sec, e, err := s.readToRedeem(ctx, clusterID, first, read)
		first = false
		if err != nil {
			return err
		}
		if e.Redemption != nil {
			out = e
			return nil
		}
		e.Redemption = &r
		// The apply carries sec's resourceVersion: a concurrent change
		// conflicts, and the retry reads it. It applies the whole Secret
		// kubepact owns, so the next Put of a fresh nonce drops the
		// redemption with the old nonce.
		stored, err := s.applyAt(ctx, clusterID, e, sec.ResourceVersion)
		if err != nil {
			s.remember(clusterID, nil)
			return wrap(err, "marking redeemed", "Secret", ns, nonce.SecretName)
		}
		s.remember(clusterID, stored)
		out = e
		return nil
	})
	if err != nil {
		return nonce.Entry{}, err
	}
	return out, nil
}

// readToRedeem returns the nonce Secret of clusterID and its entry: on
// the first attempt, the copy at hand (atHand) when it holds an unredeemed
// nonce; else from read (the API server).
func (s *NonceStore) readToRedeem(ctx context.Context, clusterID string, first bool, read func() (*corev1.Secret, error)) (*corev1.Secret, nonce.Entry, error) {
	if first {
		if sec := s.atHand(ctx, clusterID); sec != nil {
			if e, err := nonce.FromSecret(sec); err == nil && e.Redemption == nil {
				return sec, e, nil
			}
		}
	}
	sec, err := read()
	if err != nil {
		return nil, nonce.Entry{}, err
	}
	e, err := nonce.FromSecret(sec)
	return sec, e, err
}

// Consume deletes the nonce Secret of clusterID and returns what it held.
// The delete is conditional on the Secret read, so of concurrent callers
// exactly one gets the nonce.
func (s *NonceStore) Consume(ctx context.Context, clusterID string) (nonce.Entry, error) {
	s.remember(clusterID, nil)
	ns := clusterid.TenantNamespace(clusterID)
	secrets := s.client.CoreV1().Secrets(ns)
	sec, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "reading", "Secret", ns, nonce.SecretName)
	}
	err = secrets.Delete(ctx, nonce.SecretName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &sec.UID, ResourceVersion: &sec.ResourceVersion,
	}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Another caller consumed or replaced it first.
		return nonce.Entry{}, notFound(nonce.ErrNotFound, err, "Secret", ns, nonce.SecretName)
	}
	if err != nil {
		return nonce.Entry{}, wrap(err, "deleting", "Secret", ns, nonce.SecretName)
	}
	return nonce.FromSecret(sec)
}

package kube_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
)

// staticReader answers every Get with a copy of secret, or NotFound when
// it is nil: a controller's cache, as stale as the test makes it.
type staticReader struct {
	client.Reader
	secret *corev1.Secret
}

func (r staticReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.secret == nil {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	r.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// A NonceStore whose redemption reads a cache marks the nonce stored, never
// the one the cache holds: a stale copy conflicts and is read again from
// the API server, and one the cache holds as redeemed, or not at all, is
// read from the API server before anything is decided.
func TestNonceStoreRedeemsWhatIsStored(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := kube.NewNonceStore(providerEnv.client)
	secretOf := func(id string) *corev1.Secret {
		sec, err := providerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(id)).Get(ctx, nonce.SecretName, metav1.GetOptions{})
		require.NoError(t, err)
		return sec
	}
	issue := func(id string) nonce.Entry {
		n, err := nonce.Generate(nil)
		require.NoError(t, err)
		e := nonce.Entry{Nonce: n, IssuedAt: time.Now().Truncate(time.Second), TTL: time.Hour}
		require.NoError(t, store.Put(ctx, id, e))
		return e
	}
	mark := nonce.Redemption{By: []byte("tenant digest"), Key: "key fingerprint", At: time.Now().Truncate(time.Second)}

	tests := []struct {
		name  string
		cache func(id string, stale *corev1.Secret) *corev1.Secret
	}{
		{"a copy of the nonce replaced since", func(_ string, stale *corev1.Secret) *corev1.Secret { return stale }},
		{"a copy marked redeemed by another Tenant", func(id string, _ *corev1.Secret) *corev1.Secret {
			e, err := store.Get(ctx, id)
			require.NoError(t, err)
			e.Redemption = &nonce.Redemption{By: []byte("another digest"), Key: "another key", At: mark.At}
			forged := nonce.Secret(id, e)
			forged.ResourceVersion = secretOf(id).ResourceVersion
			return forged
		}},
		{"no copy", func(string, *corev1.Secret) *corev1.Secret { return nil }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "cl-redeem-" + shortName(t.Name(), i)
			ensureNamespace(t, clusterid.TenantNamespace(id))
			issue(id)
			stale := secretOf(id)
			stored := issue(id) // a new nonce: the first copy is stale
			got, err := store.WithRedeemReader(staticReader{secret: tt.cache(id, stale)}).MarkRedeemed(ctx, id, mark)
			require.NoError(t, err)
			require.Equal(t, stored.Nonce, got.Nonce, "the nonce stored")
			require.NotNil(t, got.Redemption)
			require.True(t, bytes.Equal(mark.By, got.Redemption.By), "redeemed by this Tenant")
			now, err := store.Get(ctx, id)
			require.NoError(t, err)
			require.Equal(t, stored.Nonce, now.Nonce)
			require.Equal(t, mark.Key, now.Redemption.Key)
		})
	}

	// A fresh copy is written on without a read of the API server.
	id := "cl-redeem-fresh"
	ensureNamespace(t, clusterid.TenantNamespace(id))
	stored := issue(id)
	var requests atomic.Int64
	counted, err := kubernetes.NewForConfig(countingConfig(providerEnv.cluster.AdminConfig(), &requests))
	require.NoError(t, err)
	got, err := kube.NewNonceStore(counted).WithRedeemReader(staticReader{secret: secretOf(id)}).MarkRedeemed(ctx, id, mark)
	require.NoError(t, err)
	require.Equal(t, stored.Nonce, got.Nonce)
	require.Equal(t, int64(1), requests.Load(), "one write, no read")
}

// A NonceStore marks the nonce its own Put wrote without reading it, and
// the nonce stored, never the one it wrote, when another wrote since.
func TestNonceStoreRedeemsWhatItWrote(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var requests atomic.Int64
	counted, err := kubernetes.NewForConfig(countingConfig(providerEnv.cluster.AdminConfig(), &requests))
	require.NoError(t, err)
	mark := nonce.Redemption{By: []byte("tenant digest"), Key: "key fingerprint", At: time.Now().Truncate(time.Second)}
	entry := func() nonce.Entry {
		n, err := nonce.Generate(nil)
		require.NoError(t, err)
		return nonce.Entry{Nonce: n, IssuedAt: time.Now().Truncate(time.Second), TTL: time.Hour}
	}

	id := "cl-redeem-written"
	ensureNamespace(t, clusterid.TenantNamespace(id))
	store := kube.NewNonceStore(counted)
	written := entry()
	require.NoError(t, store.Put(ctx, id, written))
	before := requests.Load()
	got, err := store.MarkRedeemed(ctx, id, mark)
	require.NoError(t, err)
	require.Equal(t, written.Nonce, got.Nonce)
	require.Equal(t, int64(1), requests.Load()-before, "one write, no read")

	id = "cl-redeem-overwritten"
	ensureNamespace(t, clusterid.TenantNamespace(id))
	require.NoError(t, store.Put(ctx, id, entry()))
	other := entry()
	require.NoError(t, kube.NewNonceStore(providerEnv.client).Put(ctx, id, other))
	got, err = store.MarkRedeemed(ctx, id, mark)
	require.NoError(t, err)
	require.Equal(t, other.Nonce, got.Nonce, "the nonce stored")
	stored, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, other.Nonce, stored.Nonce)
	require.Equal(t, mark.Key, stored.Redemption.Key)
}

// Peek returns the nonce as the store last wrote it or, with a redeem
// reader, as the reader holds it, and nothing when it has no such copy or
// the copy holds no nonce (a liqoctl nonce request not yet answered).
func TestNonceStorePeek(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := "cl-peek-" + shortName(t.Name(), 0)
	ensureNamespace(t, clusterid.TenantNamespace(id))
	store := kube.NewNonceStore(providerEnv.client)
	_, ok := store.Peek(ctx, id)
	require.False(t, ok, "nothing written, nothing at hand")

	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	e := nonce.Entry{Nonce: n, IssuedAt: time.Now().Truncate(time.Second), TTL: time.Hour}
	require.NoError(t, store.Put(ctx, id, e))
	got, ok := store.Peek(ctx, id)
	require.True(t, ok)
	require.Equal(t, e.Nonce, got.Nonce)
	_, ok = kube.NewNonceStore(providerEnv.client).Peek(ctx, id)
	require.False(t, ok, "another store wrote nothing")

	sec, err := providerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(id)).Get(ctx, nonce.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	cached := store.WithRedeemReader(staticReader{secret: sec})
	got, ok = cached.Peek(ctx, id)
	require.True(t, ok)
	require.Equal(t, e.Nonce, got.Nonce)

	_, ok = store.WithRedeemReader(staticReader{}).Peek(ctx, id)
	require.False(t, ok, "the reader holds no copy")
	request := sec.DeepCopy()
	delete(request.Data, nonce.SecretKey)
	_, ok = store.WithRedeemReader(staticReader{secret: request}).Peek(ctx, id)
	require.False(t, ok, "a nonce request not answered yet")
}

// PutOver writes on the nonce Secret only as it was at the version given:
// a Secret changed since is left as it is.
func TestNonceStorePutOver(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := "cl-over-" + shortName(t.Name(), 0)
	ns := clusterid.TenantNamespace(id)
	ensureNamespace(t, ns)
	store := kube.NewNonceStore(providerEnv.client)
	secrets := providerEnv.client.CoreV1().Secrets(ns)
	entry := func() nonce.Entry {
		n, err := nonce.Generate(nil)
		require.NoError(t, err)
		return nonce.Entry{Nonce: n, IssuedAt: time.Now().Truncate(time.Second), TTL: time.Hour}
	}
	stored := func() nonce.Entry {
		e, err := store.Get(ctx, id)
		require.NoError(t, err)
		return e
	}

	require.NoError(t, store.Put(ctx, id, entry()))
	read, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	second := entry()
	require.NoError(t, store.PutOver(ctx, id, second, read.ResourceVersion))
	require.Equal(t, second.Nonce, stored().Nonce)

	err = store.PutOver(ctx, id, entry(), read.ResourceVersion)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	require.Equal(t, second.Nonce, stored().Nonce, "a stale version writes nothing")
}

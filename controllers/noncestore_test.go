package controllers_test

import (
	"context"
	"net/http"
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
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// secretCache holds one Secret as a manager's cache may: a copy of some
// past version.
type secretCache struct {
	client.Reader
	secret *corev1.Secret
}

func (c secretCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c.secret == nil || c.secret.Namespace != key.Namespace || c.secret.Name != key.Name {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	c.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// The provider's nonce store answers a nonce request the manager's cache
// holds with one request, the nonce written on the cached Secret. A cache
// behind the Secret never replaces a nonce stored since: the write
// conflicts, and the nonce stays. One behind a Secret that still holds
// no nonce gets it written.
func TestNonceStoreAnswersFromTheCache(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := "cl-nonce-cache"
	ns := clusterid.TenantNamespace(id)
	_, err := providerEnv.core.CoreV1().Namespaces().Create(ctx, tenant.Namespace(id), metav1.CreateOptions{})
	require.NoError(t, err)
	secrets := providerEnv.core.CoreV1().Secrets(ns)
	request := func() *corev1.Secret { // as liqoctl asks for a nonce
		s, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: id}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return s
	}
	stored := func() []byte {
		s, err := secrets.Get(ctx, nonce.SecretName, metav1.GetOptions{})
		require.NoError(t, err)
		return s.Data[nonce.SecretKey]
	}
	var requests atomic.Int64
	cfg := providerEnv.cluster.AdminConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} })
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	asked := request()
	n, err := nonce.Ensure(ctx, controllers.NewProviderNonceStore(cs, secretCache{secret: asked}), id, time.Now(), nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), requests.Load(), "the nonce written, nothing read")
	require.Equal(t, n.Text(), string(stored()))

	_, err = nonce.Ensure(ctx, controllers.NewProviderNonceStore(cs, secretCache{secret: asked}), id, time.Now(), nil)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	require.Equal(t, n.Text(), string(stored()), "the nonce stored since the cached copy stays")

	require.NoError(t, secrets.Delete(ctx, nonce.SecretName, metav1.DeleteOptions{}))
	request()
	again, err := nonce.Ensure(ctx, controllers.NewProviderNonceStore(cs, secretCache{secret: asked}), id, time.Now(), nil)
	require.NoError(t, err)
	require.Equal(t, again.Text(), string(stored()), "a Secret asked again, with no nonce, gets one")
}

package kube_test

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire"
)

// TestConnect connects to the real provider cluster, which serves the CRDs:
// one discovery request checks them, and the Cluster holds every port of
// both roles, the Endpoint from the config, and the config stays as it was.
func TestConnect(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	cfg := countingConfig(providerEnv.cluster.AdminConfig(), &requests)
	qps, burst := cfg.QPS, cfg.Burst

	c, err := wire.Connect(cfg, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), requests.Load(), "one discovery request")
	require.Equal(t, qps, cfg.QPS)
	require.Equal(t, burst, cfg.Burst)
	require.Nil(t, cfg.RateLimiter)

	endpoint, err := c.Endpoint()
	require.NoError(t, err)
	require.Equal(t, provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}, endpoint)

	pp := c.ProviderPorts()
	for name, port := range map[string]any{
		"Namespaces": pp.Namespaces, "Nonces": pp.Nonces, "Tenants": pp.Tenants, "Signer": pp.Signer,
		"Certificates": pp.Certificates, "RBAC": pp.RBAC, "ClusterRBAC": pp.ClusterRBAC, "Slices": pp.Slices,
	} {
		require.NotNil(t, port, "ProviderPorts.%s", name)
	}
	require.True(t, pp.Lifecycle.Complete(), "ProviderPorts.Lifecycle")
	require.Nil(t, pp.StorageClasses, "offers no StorageClasses unless told, as Liqo")
	require.Nil(t, pp.SlicePolicy)
	_, isCSRSigner := pp.Signer.(*kube.CSRSigner)
	require.True(t, isCSRSigner, "signs through the CSR API by default")
	cp := c.ConsumerPorts()
	for name, port := range map[string]any{
		"Namespaces": cp.Namespaces, "Keys": cp.Keys, "Identities": cp.Identities, "Secrets": cp.Secrets,
		"IdentityKeys": cp.IdentityKeys, "Reviewer": cp.Reviewer, "Slices": cp.Slices,
	} {
		require.NotNil(t, port, "ConsumerPorts.%s", name)
	}
	require.NotNil(t, c.Clientset())
	require.NotNil(t, c.Client())

	_, err = c.Provider("cl-provider-connect", nil)
	require.NoError(t, err)
	_, err = c.Consumer("cl-consumer-connect", nil)
	require.NoError(t, err)
}

// TestConnectOptions checks each option of Connect, and the errors of
// what it refuses.
func TestConnectOptions(t *testing.T) {
	t.Parallel()
	ca := providerEnv.cluster.CA()

	t.Run("endpoint option", func(t *testing.T) {
		t.Parallel()
		want := provider.Endpoint{Server: "https://peers.example.com:6443", CA: ca}
		c, err := wire.Connect(providerEnv.cluster.AdminConfig(), &wire.ConnectOptions{Endpoint: &want})
		require.NoError(t, err)
		got, err := c.Endpoint()
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("config without CA: a consumer, no provider", func(t *testing.T) {
		t.Parallel()
		cfg := providerEnv.cluster.AdminConfig()
		cfg.CAData, cfg.Insecure = nil, true
		c, err := wire.Connect(cfg, nil)
		require.NoError(t, err)
		_, err = c.Endpoint()
		require.ErrorIs(t, err, wire.ErrNoCA)
		_, err = c.Provider("cl-provider-no-ca", nil)
		require.ErrorIs(t, err, wire.ErrNoCA)
		_, err = c.Consumer("cl-consumer-no-ca", nil)
		require.NoError(t, err)
	})

	t.Run("offline", func(t *testing.T) {
		t.Parallel()
		c, err := wire.Connect(consumerEnv.cluster.AdminConfig(), &wire.ConnectOptions{Offline: true})
		require.NoError(t, err)
		require.Nil(t, c.ConsumerPorts().Reviewer)
	})

	t.Run("signer", func(t *testing.T) {
		t.Parallel()
		caCert, caKey := providerEnv.cluster.SecondClientCA()
		localCA, err := csr.NewLocalCA(caCert, caKey, nil)
		require.NoError(t, err)
		c, err := wire.Connect(providerEnv.cluster.AdminConfig(), &wire.ConnectOptions{Signer: localCA})
		require.NoError(t, err)
		_, isCSRSigner := c.ProviderPorts().Signer.(*kube.CSRSigner)
		require.False(t, isCSRSigner)
	})

	t.Run("key namespace", func(t *testing.T) {
		t.Parallel()
		c, err := wire.Connect(consumerEnv.cluster.AdminConfig(), &wire.ConnectOptions{KeyNamespace: "keys-connect-option"})
		require.NoError(t, err)
		_, err = keys.Ensure(t.Context(), c.ConsumerPorts().Keys, nil, keys.Ed25519)
		require.NoError(t, err)
		_, err = consumerEnv.client.CoreV1().Secrets("keys-connect-option").Get(t.Context(), keys.SecretName, metav1.GetOptions{})
		require.NoError(t, err, "the cluster key is in the namespace asked")
	})

	t.Run("nil config", func(t *testing.T) {
		t.Parallel()
		_, err := wire.Connect(nil, nil)
		require.ErrorIs(t, err, kube.ErrNoServer)
	})

	t.Run("refused reviewer roots", func(t *testing.T) {
		t.Parallel()
		_, err := wire.Connect(consumerEnv.cluster.AdminConfig(), &wire.ConnectOptions{Reviewer: &kube.IdentityReviewerOptions{RootCAs: []byte("not PEM")}})
		require.ErrorIs(t, err, kube.ErrRootCAsNotPEM)
	})

	t.Run("unreachable server", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		cfg := providerEnv.cluster.AdminConfig()
		cfg.Host = "https://" + addr
		cfg.Timeout = 5 * time.Second
		_, err = wire.Connect(cfg, nil)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr, "the dial error, not a verdict on the CRDs")
		require.False(t, errors.Is(err, wire.ErrCRDNotServed))
	})
}

// TestConnectRateLimits checks that Connect's clients share one limiter:
// the options' QPS and Burst when set, else DefaultQPS and DefaultBurst for
// a config that sets none (client-go's 5 QPS and burst 10 would hold 40
// requests for 6 seconds).
func TestConnectRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("options", func(t *testing.T) {
		t.Parallel()
		c, err := wire.Connect(consumerEnv.cluster.AdminConfig(), &wire.ConnectOptions{KeyNamespace: "keys-connect-rate", QPS: 4, Burst: 1})
		require.NoError(t, err)
		start := time.Now()
		for range 3 {
			_, err := c.ConsumerPorts().Keys.Get(t.Context()) // clientset
			require.ErrorIs(t, err, keys.ErrNotFound)
			_, err = c.ConsumerPorts().Identities.List(t.Context(), "keys-connect-rate") // controller-runtime client
			require.NoError(t, err)
		}
		// Six requests, one token at once and four a second: at least
		// 1.25 s with one limiter, 0.5 s with one per client.
		require.GreaterOrEqual(t, time.Since(start), 1200*time.Millisecond)
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		cfg := consumerEnv.cluster.AdminConfig()
		cfg.QPS, cfg.Burst = 0, 0
		c, err := wire.Connect(cfg, &wire.ConnectOptions{KeyNamespace: "keys-connect-default-rate"})
		require.NoError(t, err)
		start := time.Now()
		for range 40 {
			_, err := c.ConsumerPorts().Keys.Get(t.Context())
			require.ErrorIs(t, err, keys.ErrNotFound)
		}
		require.Less(t, time.Since(start), 4*time.Second)
	})
}

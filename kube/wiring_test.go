package kube_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

// TestWiringAuthenticate builds a Provider and a Consumer on the two real
// clusters from nothing but their rest.Configs, runs the handshake, which
// the consumer confirms online, and uses the kubeconfig it returns. It logs
// the API requests each cluster served, the figures wire.NewProviderPorts
// documents, and holds them to that documentation.
func TestWiringAuthenticate(t *testing.T) {
	caCert, caKey := providerEnv.cluster.SecondClientCA()
	localCA, err := csr.NewLocalCA(caCert, caKey, nil)
	require.NoError(t, err)
	tests := []struct {
		name                   string
		providerID, consumerID string
		signer                 csr.Signer // nil: the CSR API
		strict                 bool
		maxProviderRequests    int
	}{
		{name: "CSR API", providerID: "cl-provider-wiring", consumerID: "cl-consumer-wiring", maxProviderRequests: 30},
		{name: "local CA, strict", providerID: "cl-provider-wiring-ca", consumerID: "cl-consumer-wiring-ca",
			signer: localCA, strict: true, maxProviderRequests: 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			var providerRequests, consumerRequests atomic.Int64
			providerCfg := countingConfig(providerEnv.cluster.AdminConfig(), &providerRequests)
			consumerCfg := countingConfig(consumerEnv.cluster.AdminConfig(), &consumerRequests)

			endpoint, err := wire.EndpointFromConfig(providerCfg)
			require.NoError(t, err)
			require.Equal(t, provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}, endpoint)
			pports, err := wire.NewProviderPorts(providerCfg, &wire.ProviderPortsOptions{Signer: tt.signer})
			require.NoError(t, err)
			keyNS := "keys-" + tt.consumerID
			cports, err := wire.NewConsumerPorts(consumerCfg, &wire.ConsumerPortsOptions{KeyNamespace: keyNS})
			require.NoError(t, err)
			require.NotNil(t, cports.Reviewer, "online by default")
			var popts *provider.Options
			if tt.strict {
				popts = &provider.Options{Policy: tenant.Strict}
			}
			p, err := provider.New(tt.providerID, endpoint, pports, popts)
			require.NoError(t, err)
			c, err := consumer.New(tt.consumerID, cports, &consumer.Options{Strict: tt.strict})
			require.NoError(t, err)

			// The consumer key exists, as on a cluster that has peered
			// before, so the requests counted are those of the handshake.
			_, err = keys.Ensure(ctx, cports.Keys, nil, keys.Ed25519)
			require.NoError(t, err)
			providerBefore, consumerBefore := providerRequests.Load(), consumerRequests.Load()
			done, err := kubepact.Authenticate(ctx, c, p, nil)
			require.NoError(t, err)
			pn, cn := providerRequests.Load()-providerBefore, consumerRequests.Load()-consumerBefore
			t.Logf("one handshake: %d requests to the provider, %d to the consumer", pn, cn)
			require.LessOrEqual(t, pn, int64(tt.maxProviderRequests))
			require.LessOrEqual(t, cn, int64(12))

			// The kubeconfig authenticates on the provider as the consumer,
			// and reaches its tenant namespace.
			restCfg, err := done.Kubeconfig.RESTConfig()
			require.NoError(t, err)
			asConsumer, err := kubernetes.NewForConfig(restCfg)
			require.NoError(t, err)
			review, err := asConsumer.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, tt.consumerID, review.Status.UserInfo.Username)
			require.True(t, slices.Contains(review.Status.UserInfo.Groups, "liqo.io"), "groups %v", review.Status.UserInfo.Groups)
			_, err = asConsumer.CoreV1().Secrets("liqo-tenant-"+tt.consumerID).List(ctx, metav1.ListOptions{})
			require.Error(t, err, "a ControlPlane identity reads no Secrets")

			// Running it again changes nothing.
			again, err := kubepact.Authenticate(ctx, c, p, nil)
			require.NoError(t, err)
			require.Equal(t, done.Identity.UID, again.Identity.UID)
		})
	}
}

// TestWiringOptions checks that the constructors leave the caller's config
// alone and refuse what cannot make a client.
func TestWiringOptions(t *testing.T) {
	t.Parallel()
	cfg := providerEnv.cluster.AdminConfig()
	qps, burst := cfg.QPS, cfg.Burst
	_, err := wire.NewProviderPorts(cfg, &wire.ProviderPortsOptions{QPS: 1, Burst: 1})
	require.NoError(t, err)
	_, err = wire.NewConsumerPorts(cfg, &wire.ConsumerPortsOptions{QPS: 1, Burst: 1})
	require.NoError(t, err)
	require.Equal(t, qps, cfg.QPS)
	require.Equal(t, burst, cfg.Burst)
	require.Nil(t, cfg.RateLimiter)

	offline, err := wire.NewConsumerPorts(cfg, &wire.ConsumerPortsOptions{Offline: true})
	require.NoError(t, err)
	require.Nil(t, offline.Reviewer)

	_, err = wire.NewProviderPorts(nil, nil)
	require.Error(t, err)
	_, err = wire.NewConsumerPorts(nil, nil)
	require.Error(t, err)
	_, err = wire.NewConsumerPorts(cfg, &wire.ConsumerPortsOptions{Reviewer: &kube.IdentityReviewerOptions{RootCAs: []byte("not PEM")}})
	require.Error(t, err)
}

// TestWiringRateLimitShared checks that QPS and Burst apply to the ports,
// through one limiter that the clientset and the dynamic client share.
func TestWiringRateLimitShared(t *testing.T) {
	t.Parallel()
	ports, err := wire.NewConsumerPorts(consumerEnv.cluster.AdminConfig(), &wire.ConsumerPortsOptions{
		KeyNamespace: "keys-wiring-rate", QPS: 4, Burst: 1,
	})
	require.NoError(t, err)
	start := time.Now()
	for range 3 {
		_, err := ports.Keys.Get(t.Context()) // clientset
		require.ErrorIs(t, err, keys.ErrNotFound)
		_, err = ports.Identities.List(t.Context(), "keys-wiring-rate") // dynamic client
		require.NoError(t, err)
	}
	// Six requests, one token at once and four a second: at least 1.25 s
	// with one limiter, 0.5 s with one per client.
	require.GreaterOrEqual(t, time.Since(start), 1200*time.Millisecond)
}

// TestEndpointFromConfig reads the provider's Endpoint from rest.Configs,
// and refuses ones consumers could not use with a typed error that quotes
// no credential.
func TestEndpointFromConfig(t *testing.T) {
	t.Parallel()
	ca := providerEnv.cluster.CA()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca, 0o600))
	const password = "s3cret-password"

	ok := []struct {
		name string
		cfg  *rest.Config
		want provider.Endpoint
	}{
		{"CA data", &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
			provider.Endpoint{Server: "https://127.0.0.1:6443", CA: ca}},
		{"CA file", &rest.Config{Host: "https://api.example.com", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}},
			provider.Endpoint{Server: "https://api.example.com", CA: ca}},
		{"CA data wins over the file", &rest.Config{Host: "https://api.example.com", TLSClientConfig: rest.TLSClientConfig{CAData: ca, CAFile: "/nonexistent"}},
			provider.Endpoint{Server: "https://api.example.com", CA: ca}},
		{"host:port is https", &rest.Config{Host: "127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
			provider.Endpoint{Server: "https://127.0.0.1:6443", CA: ca}},
		{"path prefix kept", &rest.Config{Host: "https://rancher.example.com/k8s/clusters/c-1", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
			provider.Endpoint{Server: "https://rancher.example.com/k8s/clusters/c-1", CA: ca}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.EndpointFromConfig(tt.cfg)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	bad := []struct {
		name string
		cfg  *rest.Config
		want error
	}{
		{"nil config", nil, kube.ErrNoServer},
		{"no host", &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, kube.ErrNoServer},
		{"not a host", &rest.Config{Host: "https://", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, kube.ErrNoServer},
		{"http host", &rest.Config{Host: "http://127.0.0.1:8080", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, wire.ErrNotHTTPS},
		{"password in the URL", &rest.Config{Host: "https://admin:" + password + "@127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, wire.ErrNotHTTPS},
		{"query in the URL", &rest.Config{Host: "https://127.0.0.1:6443?token=" + password, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, wire.ErrNotHTTPS},
		{"no CA", &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: password}, wire.ErrNoCA},
		{"CA not PEM", &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte(password)}}, wire.ErrNoCA},
		{"unreadable CA file", &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(t.TempDir(), "missing.crt")}}, fs.ErrNotExist},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.EndpointFromConfig(tt.cfg)
			require.ErrorIs(t, err, tt.want)
			require.NotContains(t, err.Error(), password)
			if errors.Is(tt.want, fs.ErrNotExist) {
				var pe *fs.PathError
				require.ErrorAs(t, err, &pe)
			}
			require.False(t, strings.Contains(err.Error(), "BEGIN CERTIFICATE"), "error quotes the CA: %v", err)
		})
	}
}

// TestNewClientsetSpeaksProtobuf checks that NewClientset's requests send
// and accept protobuf, that what it reads back from the real API server is
// whole, and that a content type named in the config is kept.
func TestNewClientsetSpeaksProtobuf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, configured, want string
	}{
		{"Default", "", "application/vnd.kubernetes.protobuf"},
		{"Configured", "application/json", "application/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var sent, answered []string
			cfg := providerEnv.cluster.AdminConfig()
			cfg.ContentType = c.configured
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(r)
					mu.Lock()
					defer mu.Unlock()
					if r.Method == http.MethodPost {
						sent = append(sent, r.Header.Get("Content-Type"))
					}
					if err == nil {
						answered = append(answered, resp.Header.Get("Content-Type"))
					}
					return resp, err
				})
			})
			cs, err := kube.NewClientset(cfg, nil)
			require.NoError(t, err)
			ns := "kube-system"
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "protobuf-", Labels: map[string]string{"test": c.name}},
				Data:       map[string][]byte{"k": []byte("v")},
			}
			created, err := cs.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.CoreV1().Secrets(ns).Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })
			got, err := cs.CoreV1().Secrets(ns).Get(t.Context(), created.Name, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, []byte("v"), got.Data["k"])
			require.Equal(t, c.name, got.Labels["test"])
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{c.want}, sent)
			require.Equal(t, []string{c.want, c.want}, answered)
		})
	}
}

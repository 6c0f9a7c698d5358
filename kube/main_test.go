package kube_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
)

// env is one real cluster with admin clients that count their requests.
type env struct {
	cluster  *testcluster.Cluster
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	typed    client.Client
	requests *atomic.Int64
}

var providerEnv, consumerEnv *env

// TestMain starts two independent control planes, the provider and the
// consumer, shared by every test of the package.
func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, 30*time.Minute, testcluster.Options{}, newEnv, &providerEnv, &consumerEnv))
}

func newEnv(ctx context.Context, c *testcluster.Cluster) (*env, error) {
	e := &env{cluster: c, requests: &atomic.Int64{}}
	// Example_realClusters reads the clusters' kubeconfig files as a
	// program would, from PROVIDER_KUBECONFIG and CONSUMER_KUBECONFIG.
	kubeconfig := filepath.Join(c.Dir(), "example.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.AdminKubeconfig(), 0o600); err != nil {
		return nil, err
	}
	if err := os.Setenv(strings.ToUpper(c.Name())+"_KUBECONFIG", kubeconfig); err != nil {
		return nil, err
	}
	cfg := countingConfig(c.AdminConfig(), e.requests)
	var err error
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := kube.InstallCRDs(ctx, cfg); err != nil {
		return nil, err
	}
	if e.typed, err = kube.NewClient(cfg, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// countingConfig returns a copy of cfg whose requests increment n.
func countingConfig(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// shortName returns a DNS-1123 label, unique per test name and n.
func shortName(testName string, n int) string {
	sum := sha256.Sum256([]byte(testName))
	return fmt.Sprintf("%x-%d", sum[:6], n)
}

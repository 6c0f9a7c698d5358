package authserver_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
)

// realCluster is one running control plane with admin clients.
type realCluster struct {
	cluster *testcluster.Cluster
	client  kubernetes.Interface
}

// providerCluster and consumerCluster are shared by every real-cluster test
// and benchmark of the package.
var providerCluster, consumerCluster *realCluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, 30*time.Minute, testcluster.Options{}, newRealCluster, &providerCluster, &consumerCluster))
}

// newRealCluster returns clients of c, with the CRDs installed.
func newRealCluster(ctx context.Context, c *testcluster.Cluster) (*realCluster, error) {
	cfg := c.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	r := &realCluster{cluster: c}
	var err error
	if r.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return r, kube.InstallCRDs(ctx, cfg)
}

// serve runs s over TLS on a loopback port until the test ends and returns
// its URL and the CA of its certificate.
func serve(tb testing.TB, s *authserver.Server) (string, []byte) {
	tb.Helper()
	sec, err := authserver.ServingSecret("liqo", "auth-tls", []string{"127.0.0.1"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := authserver.TLSConfig(sec)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, cfg) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return "https://" + ln.Addr().String(), sec.Data[authserver.CAKey]
}

package authserver_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/wire"
)

var resourceSlices = schema.GroupVersionResource{Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"}

// realProvider is an authentication server over the provider cluster.
type realProvider struct {
	id     string
	tokens *kube.TokenStore
	token  authtoken.Token
	server *authserver.Server
	url    string
	ca     []byte
	logs   *logBuffer
}

// newRealProvider serves the provider cluster as cluster id, with its
// token in the namespace named after id; signer nil signs through the CSR
// API.
func newRealProvider(tb testing.TB, id string, signer csr.Signer) *realProvider {
	tb.Helper()
	ctx := context.Background()
	cfg := providerCluster.cluster.AdminConfig()
	ports, err := wire.NewProviderPorts(cfg, &wire.ProviderPortsOptions{Signer: signer, QPS: 2000, Burst: 4000})
	if err != nil {
		tb.Fatal(err)
	}
	endpoint, err := wire.EndpointFromConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	p := &realProvider{id: id, tokens: kube.NewTokenStore(providerCluster.client, "liqo-"+id), logs: &logBuffer{}}
	if p.token, err = authtoken.Ensure(ctx, p.tokens, rand.Reader); err != nil {
		tb.Fatal(err)
	}
	if p.server, err = authserver.New(id, endpoint, ports, p.tokens, &authserver.Options{Logger: p.logs.logger()}); err != nil {
		tb.Fatal(err)
	}
	p.url, p.ca = serve(tb, p.server)
	return p
}

func (p *realProvider) remote(tok authtoken.Token) authserver.Remote {
	return authserver.Remote{ProviderID: p.id, URL: p.url, CA: p.ca, Token: tok}
}

// realConsumer is a consumer over the consumer cluster, confirming its
// kubeconfig with the provider's API server.
func realConsumer(t *testing.T, id string) (*kubepact.Consumer, authserver.ConsumerPorts) {
	t.Helper()
	ports, err := wire.NewConsumerPorts(consumerCluster.cluster.AdminConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(id, ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, authserver.ConsumerPorts{Namespaces: ports.Namespaces, Secrets: kube.NewSecrets(consumerCluster.client)}
}

// TestClusterEndToEnd: the provider cluster serves, the consumer cluster
// authenticates with the token, and the kubeconfig it gets works on the
// provider's API server in its tenant namespace only.
func TestClusterEndToEnd(t *testing.T) {
	ctx := context.Background()
	p := newRealProvider(t, "provider-e2e", nil)
	c, ports := realConsumer(t, "consumer-e2e")
	done, err := authserver.Authenticate(ctx, c, ports, p.remote(p.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	restCfg, err := done.Kubeconfig.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(resourceSlices).Namespace("liqo-tenant-consumer-e2e").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing resourceslices in the tenant namespace: %v", err)
	}
	if _, err := dyn.Resource(resourceSlices).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing resourceslices elsewhere: %v, want Forbidden", err)
	}
	remoteClient, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remoteClient.CoreV1().Secrets("liqo-tenant-consumer-e2e").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets in the tenant namespace: %v, want Forbidden", err)
	}

	// The consumer's tools read the status from the remote token Secret.
	sec, err := consumerCluster.client.CoreV1().Secrets(authtoken.DefaultNamespace).Get(ctx, authtoken.RemoteSecretName(p.id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sec.Annotations[authtoken.StatusAnnotation]; got != string(authtoken.StatusEstablished) {
		t.Fatalf("status %q, want Established", got)
	}
	if sec.Labels[authtoken.ClusterIDLabel] != p.id {
		t.Fatalf("labels %v", sec.Labels)
	}

	// Running again changes nothing and signs nothing.
	before := csrCount(t)
	if _, err := authserver.Authenticate(ctx, c, ports, p.remote(p.token), nil); err != nil {
		t.Fatal(err)
	}
	if after := csrCount(t); after != before {
		t.Fatalf("running again made %d CSR objects", after-before)
	}
	if strings.Contains(p.logs.String(), p.token.Reveal()) {
		t.Fatal("the token reached the server's log")
	}
}

// csrCount counts kubepact's CSR objects on the provider.
func csrCount(t *testing.T) int {
	t.Helper()
	list, err := providerCluster.client.CertificatesV1().CertificateSigningRequests().List(context.Background(),
		metav1.ListOptions{LabelSelector: "liqo.io/remote-tenant-csr=true"})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestClusterRefusals: on a real provider, a wrong or old token writes
// nothing there: no CSR object, no tenant namespace, no binding.
func TestClusterRefusals(t *testing.T) {
	ctx := context.Background()
	p := newRealProvider(t, "provider-refusals", nil)
	wrong, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old := p.token
	if _, err := authtoken.Rotate(ctx, p.tokens, rand.Reader); err != nil {
		t.Fatal(err)
	}
	before := csrCount(t)
	for i, tok := range []authtoken.Token{wrong, old, {}} {
		id := fmt.Sprintf("consumer-refused-%d", i)
		c, ports := realConsumer(t, id)
		if _, err := authserver.Authenticate(ctx, c, ports, p.remote(tok), nil); !errors.Is(err, authserver.ErrUnauthorized) {
			t.Fatalf("token %d: %v, want ErrUnauthorized", i, err)
		}
		if _, err := providerCluster.client.CoreV1().Namespaces().Get(ctx, "liqo-tenant-"+id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("tenant namespace of %s: %v, want NotFound", id, err)
		}
		if _, err := providerCluster.client.RbacV1().RoleBindings("liqo-tenant-"+id).Get(ctx, "liqo-binding-liqo-remote-controlplane", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("binding of %s: %v, want NotFound", id, err)
		}
	}
	if after := csrCount(t); after != before {
		t.Fatalf("refused requests made %d CSR objects", after-before)
	}
	for _, tok := range []authtoken.Token{wrong, old, p.token} {
		if strings.Contains(p.logs.String(), tok.Reveal()) {
			t.Fatal("a token reached the server's log")
		}
	}
}

// BenchmarkConcurrentConsumers: 200 consumers (in memory) authenticate at
// once against one server on the real provider cluster, which signs with
// a local CA or through the CSR API. It reports failures, throughput and
// the 99th percentile latency; run with -benchtime=1x.
func BenchmarkConcurrentConsumers(b *testing.B) {
	ca, key := providerCluster.cluster.SecondClientCA()
	local, err := csr.NewLocalCA(ca, key, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		signer csr.Signer
	}{{"LocalCA", local}, {"CSRAPI", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			p := newRealProvider(b, "provider-bench-"+strings.ToLower(bc.name), bc.signer)
			const consumers = 200
			var latencies []time.Duration
			failures := 0
			start := time.Now()
			for iter := range b.N {
				var (
					mu sync.Mutex
					wg sync.WaitGroup
				)
				for i := range consumers {
					c := newConsumer(b, fmt.Sprintf("bench-%s-%d-%d", strings.ToLower(bc.name), iter, i))
					wg.Add(1)
					go func() {
						defer wg.Done()
						t0 := time.Now()
						_, err := authserver.Authenticate(context.Background(), c.c, c.ports(), p.remote(p.token), nil)
						d := time.Since(t0)
						mu.Lock()
						defer mu.Unlock()
						latencies = append(latencies, d)
						if err != nil {
							failures++
							b.Logf("consumer %d: %v", i, err)
						}
					}()
				}
				wg.Wait()
			}
			elapsed := time.Since(start)
			slices.Sort(latencies)
			b.ReportMetric(float64(failures), "failures")
			b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "auth/s")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Milliseconds()), "p99-ms")
			b.ReportMetric(float64(latencies[len(latencies)/2].Milliseconds()), "p50-ms")
			if failures > 0 {
				b.Errorf("%d of %d authentications failed", failures, len(latencies))
			}
		})
	}
}

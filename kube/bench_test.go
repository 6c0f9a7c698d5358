package kube_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// BenchmarkAuthenticate runs the whole handshake between the two real
// clusters and reports the median latency and the API requests made on each
// cluster per handshake. Every iteration is a new pair of cluster IDs whose
// consumer key already exists, so every handshake really signs a CSR.
//
//	go test -run '^$' -bench Authenticate -benchtime 20x ./kube/
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	run := time.Now().UnixNano() % 1e6
	type pair struct {
		p *kubepact.Provider
		c *kubepact.Consumer
	}
	pairs := make([]pair, b.N)
	for i := range pairs {
		providerID := fmt.Sprintf("bp-%d-%d", run, i)
		consumerID := fmt.Sprintf("bc-%d-%d", run, i)
		keyNS := "keys-" + consumerID
		if _, err := keys.Ensure(ctx, kube.NewKeyStore(consumer.client, keyNS), nil, keys.Ed25519); err != nil {
			b.Fatal(err)
		}
		pairs[i] = pair{p: newProvider(b, providerID), c: newConsumer(b, consumerID, keyNS)}
	}
	durations := make([]time.Duration, 0, b.N)
	providerBefore, consumerBefore := provider.requests.Load(), consumer.requests.Load()
	b.ResetTimer()
	for _, pr := range pairs {
		start := time.Now()
		if _, err := kubepact.Authenticate(ctx, pr.c, pr.p, nil); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	n := float64(b.N)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(provider.requests.Load()-providerBefore)/n, "provider-requests/op")
	b.ReportMetric(float64(consumer.requests.Load()-consumerBefore)/n, "consumer-requests/op")
}

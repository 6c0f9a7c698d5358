package kube_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/internal/floor"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// BenchmarkAuthenticate runs the whole handshake between the two real
// clusters and reports the median latency and the API requests made on each
// cluster per handshake. Every iteration is a new pair of cluster IDs whose
// consumer key already exists, so every handshake really signs a CSR. It
// then measures the floor on the provider's API server (package floor: 6
// writes and 1 CSR round, one after another) and reports the median's
// ratio to it, p50-x-floor.
//
// The floor is 6 writes and a CSR round one after another; a handshake
// makes 9 round trips and the CSR round one after another (each side's
// other requests go beside them), for these reasons:
//
//   - the provider's tenant namespace, created while the nonce is read,
//     then the nonce written: 2 (the floor's nonce, and the namespace a
//     consumer's first handshake does not find). The reads Accept starts
//     with go beside them: the stored Tenant and the revocation record (a
//     drained or revoked consumer is refused), the certificate cache
//     (another key holding the consumer ID is refused) and the peer roles.
//   - the nonce's redemption, written on the nonce Secret as the provider
//     wrote it, so that a nonce serves one Tenant: 1 (the floor counts
//     none). The 7 SubjectAccessReviews (a consumer ID that names a
//     privileged user is refused) go beside it, once the Tenant verifies
//     against the nonce issued, and so do the consumer's signed-nonce
//     Secret and the read of the Identity it holds.
//   - the CSR created, then approved while its watch starts, then issued:
//     the floor's CSR round.
//   - the certificate cached, the Tenant recorded and the cluster-wide
//     slice role bound at once, then the ControlPlane binding, which the
//     Tenant owns and so waits for its UID, then the Tenant's status,
//     which hands the certificate out once it is bound: 3 (the floor's 3).
//   - the consumer's Identity, then its kubeconfig Secret, owned by the
//     Identity, then the Identity's status, which points at the Secret once
//     it exists: 3 (the floor counts 2).
//
// Each write is a server-side apply, which costs the API server more than
// the floor's plain creates.
//
// Run it with:
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
		if _, err := keys.Ensure(ctx, kube.NewKeyStore(consumerEnv.client, keyNS), nil, keys.Ed25519); err != nil {
			b.Fatal(err)
		}
		pairs[i] = pair{p: newProvider(b, providerID), c: newConsumer(b, consumerID, keyNS)}
	}
	durations := make([]time.Duration, 0, b.N)
	providerBefore, consumerBefore := providerEnv.requests.Load(), consumerEnv.requests.Load()
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
	p50 := durations[len(durations)/2]
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(providerEnv.requests.Load()-providerBefore)/n, "provider-requests/op")
	b.ReportMetric(float64(consumerEnv.requests.Load()-consumerBefore)/n, "consumer-requests/op")
	reportFloor(ctx, b, providerEnv, p50)
}

// reportFloor measures, on e's API server and in this run, the floor of a
// handshake (floor.Writes writes and floor.CSRRounds CSR rounds, one after
// another), and reports it with p50's ratio to it.
func reportFloor(ctx context.Context, b *testing.B, e *env, p50 time.Duration) {
	b.Helper()
	cs, err := kubernetes.NewForConfig(e.cluster.AdminConfig())
	if err != nil {
		b.Fatal(err)
	}
	f, err := floor.Measure(ctx, cs, metav1.NamespaceDefault, 20)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(f.Write.Microseconds())/1000, "write-ms")
	b.ReportMetric(float64(f.CSRRound.Microseconds())/1000, "csr-round-ms")
	b.ReportMetric(float64(f.Handshake.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(p50)/float64(f.Handshake), "p50-x-floor")
}

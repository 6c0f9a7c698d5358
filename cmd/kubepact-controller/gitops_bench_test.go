package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// committedAtOnce is how many consumers BenchmarkCommittedAtOnce commits.
const committedAtOnce = 100

// BenchmarkCommittedAtOnce commits committedAtOnce AuthorizedConsumers at
// once on a provider whose controller runs as shipped (config/ applied,
// the Deployment's args, as its ServiceAccount), each with a consumer's
// request made beforehand (its cluster key, its identity's CSR), and
// measures the time until every one is Ready: recorded as a Tenant,
// accepted, its CSR signed and its grant signed. It reports that time, and
// the median and 95th percentile of the time each took.
//
//	go test -run '^$' -bench CommittedAtOnce -benchtime 1x ./cmd/kubepact-controller/
func BenchmarkCommittedAtOnce(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for n := range b.N {
		b.StopTimer()
		a := peer{providerEnv, fmt.Sprintf("ctl-bench-p%d", n)}
		replica := startCurrent(ctx, b, a)
		acs := make([]*peeringv1alpha1.AuthorizedConsumer, committedAtOnce)
		for i := range acs {
			id := fmt.Sprintf("ctl-bench-c%d-%03d", n, i)
			clusterKey, err := keys.Generate(rand.Reader, keys.Ed25519)
			require.NoError(b, err)
			identityKey, err := keys.Generate(rand.Reader, keys.Ed25519)
			require.NoError(b, err)
			r, err := enrol.NewRequest(rand.Reader, a.id, id, clusterKey, identityKey)
			require.NoError(b, err)
			pem, err := keys.MarshalPublicKey(clusterKey.Public())
			require.NoError(b, err)
			acs[i] = &peeringv1alpha1.AuthorizedConsumer{ObjectMeta: metav1.ObjectMeta{Name: id},
				Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: id, PublicKeys: []string{string(pem)}, Request: r.API()}}
		}
		b.StartTimer()
		begin := time.Now()
		for _, ac := range acs {
			require.NoError(b, a.typed.Create(ctx, ac))
		}
		took := map[string]time.Duration{}
		for len(took) < len(acs) {
			var list peeringv1alpha1.AuthorizedConsumerList
			require.NoError(b, a.typed.List(ctx, &list))
			for _, ac := range list.Items {
				if _, done := took[ac.Name]; !done && meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) {
					took[ac.Name] = time.Since(begin)
				}
			}
			require.NoError(b, ctx.Err(), "%d of %d Ready", len(took), len(acs))
			time.Sleep(100 * time.Millisecond)
		}
		all := time.Since(begin)
		b.StopTimer()
		times := make([]time.Duration, 0, len(took))
		for _, d := range took {
			times = append(times, d)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		b.ReportMetric(all.Seconds(), "s-until-all-ready")
		b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(times[len(times)*95/100].Milliseconds()), "p95-ms")
		for _, ac := range acs {
			require.NoError(b, a.typed.Delete(ctx, ac))
		}
		replica.stop()
	}
}

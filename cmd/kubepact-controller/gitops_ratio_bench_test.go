package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
)

// ratioConsumers is how many consumers each flow of
// BenchmarkDeclarativeVsAuthenticate peers.
var ratioConsumers = flag.Int("ratio-consumers", 8, "consumers of each flow in BenchmarkDeclarativeVsAuthenticate")

// ratioWait bounds each wait of BenchmarkDeclarativeVsAuthenticate: a
// leader elected, an object Ready or gone, a review that passes.
const ratioWait = time.Minute

// BenchmarkDeclarativeVsAuthenticate compares, on the package's two
// clusters with both controllers as shipped, the time a consumer takes to
// a working ControlPlane identity on the provider by each flow, for
// -ratio-consumers consumers of each, of fresh IDs, taken in turn:
//
//   - declarative: the provider's AuthorizedConsumer of the consumer's
//     request (made from its keyring, as kubepact generate
//     authorized-consumer does, before the clock starts) is committed and
//     granted, then the consumer's TrustedProvider is applied, until it is
//     Ready;
//   - authenticate: kubepact authenticate --local with both clusters'
//     kubeconfigs, as TestCLIAgainstControllers runs it, until it returns.
//
// Each ends when a SelfSubjectReview on the provider with the kubeconfig
// the consumer holds answers the consumer's ID. The consumer's controller
// is started with its ID and elected before the clock starts; everything
// is removed after each consumer. It reports the median of each flow and
// their ratio.
//
//	go test -run '^$' -bench DeclarativeVsAuthenticate -benchtime 1x ./cmd/kubepact-controller/
func BenchmarkDeclarativeVsAuthenticate(b *testing.B) {
	b.StopTimer() // only the consumers' flows are timed: ns/op is their sum
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+time.Duration(*ratioConsumers)*2*time.Minute)
	defer cancel()
	dir := b.TempDir()
	providerKubeconfig := filepath.Join(dir, "provider.kubeconfig")
	consumerKubeconfig := filepath.Join(dir, "consumer.kubeconfig")
	require.NoError(b, os.WriteFile(providerKubeconfig, providerEnv.cluster.AdminKubeconfig(), 0o600))
	require.NoError(b, os.WriteFile(consumerKubeconfig, consumerEnv.cluster.AdminKubeconfig(), 0o600))
	kubepactCLI(b) // built before any clock starts

	for n := range b.N {
		a := peer{providerEnv, fmt.Sprintf("ctl-ratio-p%d", n)}
		providerReplica := startCurrent(ctx, b, a)
		_, served := enrolmentEndpoint(ctx, b, a, enrolhttp.Limits{PerClient: 100, Burst: 100}, nil)
		tpSpec := served.Spec

		var declarative, authenticate []time.Duration
		for i := range *ratioConsumers {
			c := peer{consumerEnv, fmt.Sprintf("ctl-ratio-d%d-%02d", n, i)}
			declarative = append(declarative, declarativeOnce(ctx, b, a, c, tpSpec))
			c = peer{consumerEnv, fmt.Sprintf("ctl-ratio-a%d-%02d", n, i)}
			authenticate = append(authenticate, authenticateOnce(ctx, b, a, c, providerKubeconfig, consumerKubeconfig))
		}
		providerReplica.stop()

		d, au := median(declarative), median(authenticate)
		b.Logf("declarative %v", declarative)
		b.Logf("authenticate %v", authenticate)
		b.ReportMetric(d.Seconds(), "declarative-p50-s")
		b.ReportMetric(au.Seconds(), "authenticate-p50-s")
		b.ReportMetric(d.Seconds()/au.Seconds(), "ratio-p50")
	}
}

// startElected starts c's controller as shipped and waits for it to lead.
func startElected(ctx context.Context, b *testing.B, c peer) *replica {
	b.Helper()
	r := startCurrent(ctx, b, c)
	require.Eventually(b, r.elected, ratioWait, 50*time.Millisecond, "%s's controller elected", c.id)
	return r
}

// requireReviewed waits until a SelfSubjectReview on p with the
// ControlPlane kubeconfig c holds answers c's ID.
func requireReviewed(ctx context.Context, b *testing.B, p, c peer) {
	b.Helper()
	var user string
	var err error
	require.Eventually(b, func() bool {
		user, err = selfSubjectReview(ctx, p, c)
		return err == nil && user == c.id
	}, ratioWait, 50*time.Millisecond, "a SelfSubjectReview on %s as %s: %q, %v", p.id, c.id, user, err)
}

// declarativeOnce peers c with a from Git, provider first, and returns the
// time from the AuthorizedConsumer's commit to the identity working.
func declarativeOnce(ctx context.Context, b *testing.B, a, c peer, tpSpec peeringv1alpha1.TrustedProviderSpec) time.Duration {
	b.Helper()
	r := startElected(ctx, b, c)
	defer r.stop()
	cons := adminConsumer(b, c)
	req, err := cons.EnrolmentRequest(ctx, a.id, nil)
	require.NoError(b, err)
	pub, err := cons.PublicKey(ctx)
	require.NoError(b, err)
	pubPEM, err := keys.MarshalPublicKey(pub)
	require.NoError(b, err)
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: c.id},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: c.id, PublicKeys: []string{string(pubPEM)}, Request: req.API()},
	}
	tp := &peeringv1alpha1.TrustedProvider{ObjectMeta: metav1.ObjectMeta{Name: a.id}, Spec: tpSpec}

	b.StartTimer()
	begin := time.Now()
	require.NoError(b, a.typed.Create(ctx, ac))
	require.Eventually(b, func() bool {
		require.NoError(b, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
	}, ratioWait, 20*time.Millisecond, "%s's AuthorizedConsumer granted", c.id)
	require.NoError(b, c.typed.Create(ctx, tp))
	require.Eventually(b, func() bool {
		require.NoError(b, c.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	}, ratioWait, 20*time.Millisecond, "%s's TrustedProvider Ready", c.id)
	requireReviewed(ctx, b, a, c)
	took := time.Since(begin)
	b.StopTimer()

	require.NoError(b, a.typed.Delete(ctx, ac))
	require.NoError(b, c.typed.Delete(ctx, tp))
	require.Eventually(b, func() bool {
		return apierrors.IsNotFound(a.typed.Get(ctx, client.ObjectKeyFromObject(ac), &peeringv1alpha1.AuthorizedConsumer{})) &&
			apierrors.IsNotFound(c.typed.Get(ctx, client.ObjectKeyFromObject(tp), &peeringv1alpha1.TrustedProvider{}))
	}, ratioWait, 50*time.Millisecond, "%s's objects gone, through their controllers", c.id)
	return took
}

// authenticateOnce peers c with a by kubepact authenticate --local and
// returns the time from its start to the identity working.
func authenticateOnce(ctx context.Context, b *testing.B, a, c peer, providerKubeconfig, consumerKubeconfig string) time.Duration {
	b.Helper()
	r := startElected(ctx, b, c)
	defer r.stop()
	ids := []string{"--cluster-id", c.id, "--remote-cluster-id", a.id}
	pair := append([]string{"--local", "--kubeconfig", consumerKubeconfig, "--remote-kubeconfig", providerKubeconfig}, ids...)

	b.StartTimer()
	begin := time.Now()
	runCLI(b, "", append([]string{"authenticate"}, pair...)...)
	requireReviewed(ctx, b, a, c)
	took := time.Since(begin)
	b.StopTimer()

	runCLI(b, "", append([]string{"unauthenticate"}, pair...)...)
	runCLI(b, "", "readmit", "tenant", "--remote-cluster-id", c.id, "--kubeconfig", providerKubeconfig, "--cluster-id", a.id)
	return took
}

// median is the median of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

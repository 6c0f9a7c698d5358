package kubepact_test

import (
	"context"
	"crypto/x509"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

// resignLifetime is the lifetime of the certificates of resignProvider: the
// shortest the Kubernetes CSR API issues, so the window is the narrowest.
const resignLifetime = 10 * time.Minute

// resignProvider is an in-memory provider, on a fake clock, that accepted
// Tenants in one burst: every certificate was issued in the same instant.
type resignProvider struct {
	clock    *clocktesting.FakeClock
	cluster  *memory.Cluster
	provider *kubepact.Provider
	key      *keys.PrivateKey
	tenants  []*authv1beta1.Tenant
	certs    []*x509.Certificate
}

// newResignProvider accepts n Tenants at once on a new provider.
func newResignProvider(tb testing.TB, n int) *resignProvider {
	tb.Helper()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(tb, err)
	provider, err := provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(),
		&provider.Options{Clock: clk, CertificateLifetime: resignLifetime})
	require.NoError(tb, err)
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(tb, err)
	r := &resignProvider{clock: clk, cluster: pc, provider: provider, key: key}
	for i := range n {
		id := "cl-burst-" + strconv.Itoa(i)
		done, err := kubepact.Authenticate(ctx, r.consumer(tb, id), provider, nil)
		require.NoError(tb, err)
		cert, err := done.Kubeconfig.ClientCertificate()
		require.NoError(tb, err)
		tn, err := pc.Tenants.Get(ctx, clusterid.TenantNamespace(id), id)
		require.NoError(tb, err)
		r.tenants, r.certs = append(r.tenants, tn), append(r.certs, cert)
	}
	return r
}

// consumer returns a new in-memory consumer called id, on r's clock.
func (r *resignProvider) consumer(tb testing.TB, id string) *kubepact.Consumer {
	tb.Helper()
	ks := &fake.KeyStore{}
	require.NoError(tb, ks.Create(context.Background(), r.key))
	ports := consumer.Ports{Core: consumer.Core{Namespaces: &fake.Namespaces{}, Keys: ks, Identities: &fake.IdentityStore{}, Secrets: &fake.SecretWriter{}}, IdentityKeys: &fake.Keyring{}}
	c, err := consumer.New(id, ports, &consumer.Options{Clock: r.clock})
	require.NoError(tb, err)
	return c
}

// busiestSecond returns the second in which most of r's certificates fall
// due for re-signing (csr.RenewAt), and the Tenants that do.
func (r *resignProvider) busiestSecond() (time.Time, []*authv1beta1.Tenant) {
	due := map[time.Time][]*authv1beta1.Tenant{}
	var busiest time.Time
	for i, c := range r.certs {
		at := csr.RenewAt(c).Truncate(time.Second)
		due[at] = append(due[at], r.tenants[i])
		if len(due[at]) > len(due[busiest]) {
			busiest = at
		}
	}
	return busiest, due[busiest]
}

// twoThirds returns two thirds into the lifetime of r's certificates, where
// Liqo's providers re-sign every one of them, and where all are due.
func (r *resignProvider) twoThirds() time.Time {
	c := r.certs[0]
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(life - life/3)
}

// resign accepts each of tenants again, as the Tenant reconciler does when
// the certificate of one falls due: Accept signs it anew.
func (r *resignProvider) resign(ctx context.Context, tenants []*authv1beta1.Tenant) error {
	for _, tn := range tenants {
		if _, err := r.provider.Accept(ctx, tn); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkHandshakeBesideResigns measures a new consumer's in-memory
// handshake on a provider that accepted 1,000 Tenants in one burst, with
// certificates of the shortest lifetime (10 minutes, backdated 5), while
// the re-signs that fall due in one instant run beside it on another
// goroutine, as the provider's Tenant reconciler runs them beside new
// Tenants:
//
//   - resigns=none: no re-sign runs; the baseline.
//   - resigns=busiest-second: the Tenants csr.RenewAt puts in its busiest
//     second.
//   - resigns=all-at-two-thirds: all 1,000, which is what falls due in one
//     instant when every certificate is re-signed at two thirds of its
//     lifetime, as Liqo's providers do.
//
// Each reports resigns (how many ran beside the handshakes; each must
// sign), resign-spread-fraction (the width of the window the burst's
// re-signs use, as a fraction of the lifetime: csr.RenewSpread) and
// busiest-second-share (the share of the burst due in its busiest second).
// Run with -benchtime 200x: the handshakes then take about as long as the
// full burst of re-signs, which overlaps all of them.
func BenchmarkHandshakeBesideResigns(b *testing.B) {
	const tenants = 1000
	for _, mode := range []string{"none", "busiest-second", "all-at-two-thirds"} {
		b.Run("resigns="+mode, func(b *testing.B) {
			ctx := context.Background()
			r := newResignProvider(b, tenants)
			at, resigns := r.busiestSecond()
			spread, busiest := csr.RenewSpread(r.certs), float64(len(resigns))/tenants
			switch mode {
			case "none":
				resigns = nil
			case "all-at-two-thirds":
				at, resigns = r.twoThirds(), r.tenants
			}
			r.clock.SetTime(at)
			consumers := make([]*kubepact.Consumer, b.N)
			for i := range consumers {
				consumers[i] = r.consumer(b, "cl-new-"+strconv.Itoa(i))
			}
			signed := r.cluster.Signer.Signed()
			var wg sync.WaitGroup
			var resignErr error
			b.ReportAllocs()
			b.ResetTimer()
			wg.Go(func() { resignErr = r.resign(ctx, resigns) })
			for i := range b.N {
				if _, err := kubepact.Authenticate(ctx, consumers[i], r.provider, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wg.Wait()
			if resignErr != nil {
				b.Fatal(resignErr)
			}
			if got, want := r.cluster.Signer.Signed()-signed, b.N+len(resigns); got != want {
				b.Fatalf("%d certificates signed, want %d: one per handshake and per re-sign", got, want)
			}
			b.ReportMetric(float64(len(resigns)), "resigns")
			b.ReportMetric(spread, "resign-spread-fraction")
			b.ReportMetric(busiest, "busiest-second-share")
		})
	}
}

// A burst of re-signs run beside new handshakes, as the Tenant reconciler
// runs them, fails none of either, and signs exactly once for each: the
// handshakes take no lock the re-signs hold while they sign, and the
// re-signs change no record a handshake of another consumer reads.
func TestResignsBesideHandshakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newResignProvider(t, 40)
	r.clock.SetTime(r.twoThirds())
	consumers := make([]*kubepact.Consumer, 20)
	for i := range consumers {
		consumers[i] = r.consumer(t, "cl-new-"+strconv.Itoa(i))
	}
	signed := r.cluster.Signer.Signed()
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(consumers)+1)
	wg.Go(func() { errs <- r.resign(ctx, r.tenants) })
	for _, c := range consumers {
		wg.Go(func() {
			_, err := kubepact.Authenticate(ctx, c, r.provider, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, len(r.tenants)+len(consumers), r.cluster.Signer.Signed()-signed, "one certificate per re-sign and per handshake")
	for i, tn := range r.tenants {
		stored, err := r.cluster.Tenants.Get(ctx, tn.Namespace, tn.Name)
		require.NoError(t, err)
		cert, err := csr.ParseCertificate(stored.Status.AuthParams.SignedCRT)
		require.NoError(t, err)
		require.NotEqual(t, r.certs[i].SerialNumber, cert.SerialNumber, "Tenant %s re-signed", tn.Name)
		require.True(t, r.clock.Now().Before(csr.RenewAt(cert)), "Tenant %s: the new certificate is not due", tn.Name)
	}
}

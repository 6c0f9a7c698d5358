package kubepact_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
)

// boundedPair is a pair whose consumer is authenticated, with a provider
// over the same ports whose ResourceSlices are bounded by bounds.
func boundedPair(t *testing.T, bounds resourceslice.Bounds) (*pair, *kubepact.Provider) {
	t.Helper()
	p := newPair(t)
	_, err := kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	return p, restartedProvider(t, p, bounds)
}

// restartedProvider is a new Provider over p's provider ports, as after a
// restart of the process: nothing in memory is kept.
func restartedProvider(t *testing.T, p *pair, bounds resourceslice.Bounds) *kubepact.Provider {
	t.Helper()
	prov, err := provider.New(providerID, p.providerCluster.Endpoint(), p.providerCluster.ProviderPorts(),
		&provider.Options{Clock: p.clock, SliceNamespaces: offloaded, SliceBounds: bounds})
	require.NoError(t, err)
	return prov
}

// freshCSR is a CSR of slice name for a fresh key, as a consumer that
// re-keys the slice sends.
func freshCSR(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return badCSR(t, key, &x509.CertificateRequest{Subject: csr.ResourceSliceSubject(consumerID, name)})
}

// requireBound checks that AcceptSlice refused remote over bound, with no
// status, and that nothing was signed or written on either cluster.
func requireBound(t *testing.T, p *pair, prov *kubepact.Provider, remote *authv1beta1.ResourceSlice, bound error) *resourceslice.BoundError {
	t.Helper()
	writes := p.writes()
	status, err := prov.AcceptSlice(context.Background(), remote)
	require.ErrorIs(t, err, bound)
	require.ErrorIs(t, err, resourceslice.ErrBound)
	var b *resourceslice.BoundError
	require.ErrorAs(t, err, &b)
	require.Equal(t, remote.Namespace+"/"+remote.Name, b.Slice)
	require.Nil(t, status, "no status: the slice keeps its own")
	require.Equal(t, writes, p.writes(), "nothing signed or written")
	return b
}

// acceptNew creates slice name, replicates it and has prov accept it.
func acceptNew(t *testing.T, p *pair, prov *kubepact.Provider, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	remote := replicate(t, p, createSlice(t, p, name))
	status, err := prov.AcceptSlice(context.Background(), remote)
	require.NoError(t, err, name)
	require.NotNil(t, status.AuthParams, name)
	remote.Status = *status
	return remote
}

// deleteSlice deletes the provider's copy of slice name as its finalizer
// does: ForgetSlice, then the object goes.
func deleteSlice(t *testing.T, p *pair, prov *kubepact.Provider, name string) {
	t.Helper()
	ctx := context.Background()
	ns := clusterid.TenantNamespace(consumerID)
	require.NoError(t, prov.ForgetSlice(ctx, ns, name))
	require.NoError(t, p.providerCluster.Slices.Delete(ctx, ns, name))
}

// TestSliceFloodBounded: a consumer that creates slice after slice gets
// certificates for DefaultMaxSlices of them, the oldest; the others get
// nothing signed and a *resourceslice.BoundError wrapping ErrSliceLimit
// until older ones go.
func TestSliceFloodBounded(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	_, err := kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	prov := p.provider // the defaults
	signed := p.providerCluster.Signer.Signed()
	for i := range resourceslice.DefaultMaxSlices {
		acceptNew(t, p, prov, fmt.Sprintf("slice-%03d", i))
	}
	require.Equal(t, signed+resourceslice.DefaultMaxSlices, p.providerCluster.Signer.Signed())
	var over []*authv1beta1.ResourceSlice
	for i := range 6 {
		remote := replicate(t, p, createSlice(t, p, fmt.Sprintf("slice-%03d", resourceslice.DefaultMaxSlices+i)))
		b := requireBound(t, p, prov, remote, resourceslice.ErrSliceLimit)
		require.Equal(t, resourceslice.DefaultMaxSlices, b.Limit)
		if i == 0 {
			require.True(t, b.Until.IsZero(), "counted: judged again when a slice goes")
		} else {
			require.True(t, b.Until.Equal(p.clock.Now().Add(30*time.Second)), "not counted again: judged again when the count would be")
		}
		over = append(over, remote)
	}
	require.Equal(t, signed+resourceslice.DefaultMaxSlices, p.providerCluster.Signer.Signed(), "the flood signed nothing more")

	// The slices that hold certificates keep them.
	again, err := prov.AcceptSlice(context.Background(), replicate(t, p, createSlice(t, p, "slice-000")))
	require.NoError(t, err)
	require.NotNil(t, again.AuthParams)

	// An older slice goes: the oldest waiting slice takes its place, the
	// next still waits.
	deleteSlice(t, p, prov, "slice-010")
	status, err := prov.AcceptSlice(context.Background(), over[0])
	require.NoError(t, err)
	require.NotNil(t, status.AuthParams)
	requireBound(t, p, prov, over[1], resourceslice.ErrSliceLimit)
}

// TestSliceRekeyBounded: a slice that holds a certificate and asks for one
// for another CSR gets nothing signed before half its certificate's
// lifetime (resourceslice.ErrRekeyTooSoon, with when); its certificate
// stays cached. Then it gets the new one. A configured interval replaces
// half the lifetime.
func TestSliceRekeyBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		interval time.Duration
		wait     time.Duration
	}{
		{name: "half the lifetime"},
		{name: "configured", interval: time.Hour, wait: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, prov := boundedPair(t, resourceslice.Bounds{RekeyInterval: tc.interval})
			remote := acceptNew(t, p, prov, "slice-a")
			key := csr.CacheKey{ConsumerID: consumerID, Slice: "slice-a"}
			before, err := p.providerCluster.Certificates.Get(ctx, key)
			require.NoError(t, err)
			held, err := csr.ParseCertificate(before.Certificate)
			require.NoError(t, err)
			if tc.wait == 0 {
				tc.wait = held.NotAfter.Sub(held.NotBefore) / 2
			}

			for range 5 {
				remote.Spec.CSR = freshCSR(t, "slice-a")
				b := requireBound(t, p, prov, remote, resourceslice.ErrRekeyTooSoon)
				require.True(t, b.Until.Equal(held.NotBefore.Add(tc.wait)), "until %s", b.Until)
				after, err := p.providerCluster.Certificates.Get(ctx, key)
				require.NoError(t, err)
				require.Equal(t, before, after, "the certificate held stays")
				p.clock.Step(time.Second)
			}
			p.clock.SetTime(held.NotBefore.Add(tc.wait))
			status, err := prov.AcceptSlice(ctx, remote)
			require.NoError(t, err)
			require.NotEqual(t, before.Certificate, status.AuthParams.SignedCRT)
		})
	}
}

// TestSliceCertificateRateBounded: a consumer gets at most
// CertificatesPerHour certificates for new requests in any hour, however it
// asks: new slices, slices deleted and made again, a new Provider (a
// restart) counting again from the certificates it holds. A renewal of a
// request signed before is not counted.
func TestSliceCertificateRateBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const rate = 4
	p, prov := boundedPair(t, resourceslice.Bounds{MaxSlices: -1, CertificatesPerHour: rate})
	t0 := p.clock.Now()
	for i := range rate {
		acceptNew(t, p, prov, fmt.Sprintf("slice-%d", i))
		p.clock.Step(time.Minute)
	}
	b := requireBound(t, p, prov, replicate(t, p, createSlice(t, p, "slice-over")), resourceslice.ErrCertificateRate)
	require.Equal(t, rate, b.Limit)
	require.True(t, b.Until.Equal(t0.Add(time.Hour)), "until %s", b.Until)

	// A restart frees no place: the new Provider counts the certificates
	// of the live slices.
	restarted := restartedProvider(t, p, resourceslice.Bounds{MaxSlices: -1, CertificatesPerHour: rate})
	requireBound(t, p, restarted, replicate(t, p, createSlice(t, p, "slice-over")), resourceslice.ErrCertificateRate)

	// Nor does deleting slices.
	deleteSlice(t, p, prov, "slice-0")
	requireBound(t, p, prov, replicate(t, p, createSlice(t, p, "slice-0")), resourceslice.ErrCertificateRate)

	// An hour after the first, one more.
	p.clock.SetTime(t0.Add(time.Hour))
	acceptNew(t, p, prov, "slice-over")
	requireBound(t, p, prov, replicate(t, p, createSlice(t, p, "slice-over-2")), resourceslice.ErrCertificateRate)

	// Renewals are not counted: days later, the window filled by new
	// slices, the slices due for re-signing are re-signed.
	p.clock.SetTime(t0.Add(provider.DefaultCertificateLifetime * 2 / 3))
	for i := range rate {
		acceptNew(t, p, prov, fmt.Sprintf("slice-later-%d", i))
	}
	signed := p.providerCluster.Signer.Signed()
	remote := replicate(t, p, createSlice(t, p, "slice-1"))
	status, err := prov.AcceptSlice(ctx, remote)
	require.NoError(t, err)
	require.NotNil(t, status.AuthParams)
	require.Equal(t, signed+1, p.providerCluster.Signer.Signed(), "slice-1 re-signed")
}

// pendingSigner answers csr.ErrPending to the first Sign of each request,
// as the CSR API's signer does before the certificate is issued.
type pendingSigner struct {
	next csr.Signer
	mu   sync.Mutex
	seen map[string]bool
}

func (s *pendingSigner) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	s.mu.Lock()
	first := !s.seen[string(r.CSR.PEM())]
	s.seen[string(r.CSR.PEM())] = true
	s.mu.Unlock()
	if first {
		return nil, csr.ErrPending
	}
	return s.next.Sign(ctx, r)
}

// TestSliceBoundsCountPendingOnce: a request submitted and pending at the
// signer counts once, however often its slice is judged again; a second
// request over the bound is not submitted at all.
func TestSliceBoundsCountPendingOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	ports := p.providerCluster.ProviderPorts()
	signer := &pendingSigner{next: ports.Signer, seen: map[string]bool{}}
	ports.Signer = signer
	prov, err := provider.New(providerID, p.providerCluster.Endpoint(), ports,
		&provider.Options{Clock: p.clock, SliceNamespaces: offloaded, SliceBounds: resourceslice.Bounds{CertificatesPerHour: 1}})
	require.NoError(t, err)

	remote := replicate(t, p, createSlice(t, p, "slice-a"))
	_, err = prov.AcceptSlice(ctx, remote)
	require.ErrorIs(t, err, csr.ErrPending)
	other := replicate(t, p, createSlice(t, p, "slice-b"))
	_, err = prov.AcceptSlice(ctx, other)
	require.ErrorIs(t, err, resourceslice.ErrCertificateRate, "the pending request counts")
	status, err := prov.AcceptSlice(ctx, remote)
	require.NoError(t, err, "the pending request is picked up, not counted again")
	require.NotNil(t, status.AuthParams)
	signer.mu.Lock()
	defer signer.mu.Unlock()
	require.Len(t, signer.seen, 1, "slice-b's request never reached the signer")
}

// TestSliceBoundsAfterCordon: a new slice of a cordoned Tenant is denied
// its resources as before, whatever the bounds: it gets a status, and no
// bound is reported.
func TestSliceBoundsAfterCordon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, prov := boundedPair(t, resourceslice.Bounds{MaxSlices: 1, CertificatesPerHour: 1})
	acceptNew(t, p, prov, "slice-a")
	tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	tn.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	_, err = p.providerCluster.Tenants.Update(ctx, tn)
	require.NoError(t, err)

	status, err := prov.AcceptSlice(ctx, replicate(t, p, createSlice(t, p, "slice-b")))
	require.NoError(t, err)
	require.False(t, resourceslice.Accepted(status, authv1beta1.ResourceSliceConditionTypeResources))
	require.Nil(t, status.AuthParams)
}

// TestSliceRateBoundedConcurrently: slices of one consumer judged at once
// by many workers never get more than CertificatesPerHour certificates.
func TestSliceRateBoundedConcurrently(t *testing.T) {
	t.Parallel()
	const rate, slices = 5, 24
	p, prov := boundedPair(t, resourceslice.Bounds{MaxSlices: -1, CertificatesPerHour: rate})
	remotes := make([]*authv1beta1.ResourceSlice, slices)
	for i := range remotes {
		remotes[i] = replicate(t, p, createSlice(t, p, fmt.Sprintf("slice-%02d", i)))
	}
	signed := p.providerCluster.Signer.Signed()
	errs := make([]error, slices)
	var wg sync.WaitGroup
	for i, r := range remotes {
		wg.Go(func() { _, errs[i] = prov.AcceptSlice(context.Background(), r) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		require.ErrorIs(t, err, resourceslice.ErrCertificateRate)
	}
	require.Equal(t, rate, accepted)
	require.Equal(t, signed+rate, p.providerCluster.Signer.Signed())
}

// countingSlices counts the List calls of a resourceslice.Store.
type countingSlices struct {
	resourceslice.Store
	mu    sync.Mutex
	lists int
}

func (c *countingSlices) List(ctx context.Context, namespace string) ([]authv1beta1.ResourceSlice, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Store.List(ctx, namespace)
}

func (c *countingSlices) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists
}

// TestSliceFloodCountedOnce: once a consumer's slices are counted over the
// bound, its younger slices are refused without listing them again, until a
// slice is released (then counted again at once) or 30 seconds pass (a
// slice deleted that the provider never released).
func TestSliceFloodCountedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	ports := p.providerCluster.ProviderPorts()
	counting := &countingSlices{Store: ports.Slices}
	ports.Slices = counting
	prov, err := provider.New(providerID, p.providerCluster.Endpoint(), ports,
		&provider.Options{Clock: p.clock, SliceNamespaces: offloaded, SliceBounds: resourceslice.Bounds{MaxSlices: 2, CertificatesPerHour: -1}})
	require.NoError(t, err)
	acceptNew(t, p, prov, "slice-0")
	acceptNew(t, p, prov, "slice-1")
	waiting := []*authv1beta1.ResourceSlice{replicate(t, p, createSlice(t, p, "slice-2")), replicate(t, p, createSlice(t, p, "slice-3"))}
	requireBound(t, p, prov, waiting[0], resourceslice.ErrSliceLimit)
	lists := counting.count()
	for range 10 {
		for _, w := range waiting {
			requireBound(t, p, prov, w, resourceslice.ErrSliceLimit)
		}
	}
	require.Equal(t, lists, counting.count(), "a flood listed once")

	// A slice released: counted again, the oldest waiting one signed.
	deleteSlice(t, p, prov, "slice-0")
	status, err := prov.AcceptSlice(ctx, waiting[0])
	require.NoError(t, err)
	require.NotNil(t, status.AuthParams)
	requireBound(t, p, prov, waiting[1], resourceslice.ErrSliceLimit)

	// A slice deleted without the provider releasing it: counted again 30
	// seconds later.
	require.NoError(t, p.providerCluster.Slices.Delete(ctx, clusterid.TenantNamespace(consumerID), "slice-1"))
	b := requireBound(t, p, prov, waiting[1], resourceslice.ErrSliceLimit)
	p.clock.SetTime(b.Until)
	status, err = prov.AcceptSlice(ctx, waiting[1])
	require.NoError(t, err)
	require.NotNil(t, status.AuthParams)
}

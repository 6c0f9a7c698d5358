package renewal_test

import (
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/renewal"
)

var epoch = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func certFor(life time.Duration) *x509.Certificate {
	return &x509.Certificate{NotBefore: epoch, NotAfter: epoch.Add(life)}
}

type constant byte

func (b constant) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestDeadlineWithinJitterBounds(t *testing.T) {
	t.Parallel()
	for _, life := range []time.Duration{10 * time.Minute, 15 * time.Minute, 7 * 24 * time.Hour, 365 * 24 * time.Hour} {
		cert := certFor(life)
		lo, hi := epoch.Add(life*7/10), epoch.Add(life*9/10)
		var early, late bool
		for seed := range uint64(2000) {
			at, err := renewal.Deadline(cert, rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
			require.NoError(t, err)
			require.False(t, at.Before(lo), "life %s seed %d: %s before 70%%", life, seed, at)
			require.False(t, at.After(hi), "life %s seed %d: %s after 90%%", life, seed, at)
			early = early || at.Before(epoch.Add(life*75/100))
			late = late || at.After(epoch.Add(life*85/100))
		}
		require.True(t, early && late, "life %s: the deadlines spread over the window", life)
	}
	// The extremes of the reader land on the bounds, never beyond.
	cert := certFor(100 * time.Hour)
	at, err := renewal.Deadline(cert, constant(0))
	require.NoError(t, err)
	require.Equal(t, epoch.Add(70*time.Hour), at)
	at, err = renewal.Deadline(cert, constant(0xff))
	require.NoError(t, err)
	require.False(t, at.After(epoch.Add(90*time.Hour)))
	require.False(t, at.Before(epoch.Add(70*time.Hour)))
}

func TestDeadlineReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := renewal.Deadline(certFor(time.Hour), iotest.ErrReader(boom))
	require.ErrorIs(t, err, boom)
}

// The provider re-signs each certificate where csr.RenewAt puts it:
// from half its lifetime, when a provider would sign for a new key too
// (EarliestNewKey), so it signs at most two certificates per lifetime for
// a consumer either way; before two thirds, Liqo's point, so a Liqo
// consumer, which never asks, gets its next certificate with at least a
// third of the old one left; and before a Strict consumer's own deadline
// (70–90 %), which in turn comes before expiry.
func TestProviderDeadlineInTheWindow(t *testing.T) {
	t.Parallel()
	for _, life := range []time.Duration{10 * time.Minute, 15 * time.Minute, 7 * 24 * time.Hour, 365 * 24 * time.Hour} {
		var lo, hi float64 = 1, 0
		for i := range 500 {
			cert := certFor(life)
			// Raw stands for the DER of a parsed certificate, from which
			// the fraction is drawn.
			cert.Raw = []byte{byte(i), byte(i >> 8), 0x30}
			at := renewal.ProviderDeadline(cert)
			require.Equal(t, csr.RenewAt(cert), at)
			require.False(t, at.Before(renewal.EarliestNewKey(cert)), "life %s: re-signed from half the lifetime on", life)
			require.True(t, at.Before(epoch.Add(life-life/3)), "life %s: re-signed before two thirds", life)
			consumer, err := renewal.Deadline(cert, constant(0))
			require.NoError(t, err)
			require.True(t, at.Before(consumer), "life %s: before a Strict consumer's earliest deadline", life)
			f := csr.RenewFraction(cert)
			lo, hi = min(lo, f), max(hi, f)
		}
		require.Greater(t, hi-lo, 0.9*(csr.MaxRenewFraction-csr.MinRenewFraction), "life %s: the deadlines use the window", life)
	}
}

func TestWaitNeverHot(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Hour, renewal.Wait(epoch.Add(time.Hour), epoch, time.Second))
	require.Equal(t, 10*time.Second, renewal.Wait(epoch.Add(-time.Hour), epoch, 10*time.Second), "a deadline past waits the floor")
	require.Equal(t, 10*time.Second, renewal.Wait(epoch, epoch, 10*time.Second))
}

func TestForControlPlane(t *testing.T) {
	t.Parallel()
	id := &authv1beta1.Identity{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-provider", Namespace: "liqo-tenant-cl-provider", UID: "uid-1"},
		Spec:       authv1beta1.IdentitySpec{ClusterID: "cl-provider", Type: authv1beta1.ControlPlaneIdentityType},
	}
	r := renewal.ForControlPlane("cl-consumer", id)
	require.Equal(t, "controlplane-cl-provider", r.Name)
	require.Equal(t, "liqo-tenant-cl-provider", r.Namespace)
	require.Equal(t, map[string]string{"liqo.io/replication": "true", "liqo.io/remoteID": "cl-provider", clusterid.Label: "cl-provider"}, r.Labels)
	require.Len(t, r.OwnerReferences, 1)
	require.Equal(t, "Identity", r.OwnerReferences[0].Kind)
	require.Equal(t, id.UID, r.OwnerReferences[0].UID)
	require.True(t, *r.OwnerReferences[0].Controller)
	require.Equal(t, authv1beta1.RenewSpec{ConsumerClusterID: "cl-consumer", IdentityType: authv1beta1.ControlPlaneIdentityType}, r.Spec)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	valid := func() *authv1beta1.Renew {
		return &authv1beta1.Renew{
			ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-provider", Namespace: "liqo-tenant-cl-consumer"},
			Spec:       authv1beta1.RenewSpec{ConsumerClusterID: "cl-consumer", IdentityType: authv1beta1.ControlPlaneIdentityType},
		}
	}
	id, err := renewal.Check(valid(), "cl-provider")
	require.NoError(t, err)
	require.Equal(t, "cl-consumer", id)
	untyped := valid()
	untyped.Spec.IdentityType = ""
	_, err = renewal.Check(untyped, "cl-provider")
	require.NoError(t, err, "an identity type left out means ControlPlane")

	for _, tt := range []struct {
		name   string
		mutate func(r *authv1beta1.Renew)
		want   error
	}{
		{"another consumer's namespace", func(r *authv1beta1.Renew) { r.Namespace = "liqo-tenant-cl-other" }, renewal.ErrForeign},
		{"not a tenant namespace", func(r *authv1beta1.Renew) { r.Namespace = "default" }, renewal.ErrForeign},
		{"an invalid tenant namespace", func(r *authv1beta1.Renew) { r.Namespace = "liqo-tenant-" }, renewal.ErrForeign},
		{"another consumer named", func(r *authv1beta1.Renew) { r.Spec.ConsumerClusterID = "cl-other" }, renewal.ErrForeign},
		{"no consumer named", func(r *authv1beta1.Renew) { r.Spec.ConsumerClusterID = "" }, renewal.ErrForeign},
		{"another provider's identity", func(r *authv1beta1.Renew) { r.Name = "controlplane-cl-other" }, renewal.ErrForeign},
		{"a ResourceSlice", func(r *authv1beta1.Renew) { r.Spec.IdentityType = authv1beta1.ResourceSliceIdentityType }, renewal.ErrUnsupported},
		{"an identity type Liqo's schema lets through", func(r *authv1beta1.Renew) { r.Spec.IdentityType = "Bogus" }, renewal.ErrUnsupported},
		{"a CSR without a key", func(r *authv1beta1.Renew) { r.Spec.CSR = []byte("csr") }, renewal.ErrMalformed},
		{"a key without a CSR", func(r *authv1beta1.Renew) { r.Spec.PublicKey = []byte("key") }, renewal.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := valid()
			tt.mutate(r)
			_, err := renewal.Check(r, "cl-provider")
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestChanged(t *testing.T) {
	t.Parallel()
	status := func(crt string) *authv1beta1.RenewStatus {
		return &authv1beta1.RenewStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte(crt)}}
	}
	require.False(t, renewal.Changed([]byte("a"), nil))
	require.False(t, renewal.Changed([]byte("a"), &authv1beta1.RenewStatus{}))
	require.False(t, renewal.Changed([]byte("a"), status("")), "an empty certificate is no answer")
	require.False(t, renewal.Changed([]byte("a"), status("a")))
	require.True(t, renewal.Changed([]byte("a"), status("b")))
}

func TestEarliestNewKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, epoch.Add(50*time.Hour), renewal.EarliestNewKey(certFor(100*time.Hour)))
	err := error(&renewal.TooEarlyError{Until: epoch})
	require.ErrorIs(t, err, renewal.ErrTooEarly)
	var early *renewal.TooEarlyError
	require.ErrorAs(t, err, &early)
	require.Equal(t, epoch, early.Until)
}

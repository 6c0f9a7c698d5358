package resourceslice_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

// TestBoundsAdmit covers each bound of resourceslice.Bounds and each
// outcome: under it, at it (refused, with the sentinel, the limit and when
// it lifts), removed by a negative value, and the defaults of the zero
// value.
func TestBoundsAdmit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	const ns = "liqo-tenant-cl-consumer"
	slice := func(name string, created time.Time) authv1beta1.ResourceSlice {
		return authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(created)}}
	}
	// live returns n slices created before now, one a second.
	live := func(n int) []authv1beta1.ResourceSlice {
		var out []authv1beta1.ResourceSlice
		for i := range n {
			out = append(out, slice(fmt.Sprintf("old-%03d", i), now.Add(-time.Hour+time.Duration(i)*time.Second)))
		}
		return out
	}
	deleting := func(s []authv1beta1.ResourceSlice) []authv1beta1.ResourceSlice {
		for i := range s {
			s[i].DeletionTimestamp = &metav1.Time{Time: now}
		}
		return s
	}
	held := func(notBefore time.Time, life time.Duration) *x509.Certificate {
		return &x509.Certificate{NotBefore: notBefore, NotAfter: notBefore.Add(life)}
	}
	// issued returns n times in the last hour, the first at from.
	issued := func(n int, from time.Time) []time.Time {
		var out []time.Time
		for i := range n {
			out = append(out, from.Add(time.Duration(i)*time.Second))
		}
		return out
	}
	newSlice := slice("new", now)
	week := 7 * 24 * time.Hour

	for _, tc := range []struct {
		name   string
		bounds resourceslice.Bounds
		in     resourceslice.Signing
		want   error
		limit  int
		until  time.Time
	}{
		{name: "a new slice under the default count", in: resourceslice.Signing{Live: live(63)}},
		{name: "a new slice with 64 older live slices", in: resourceslice.Signing{Live: live(64)},
			want: resourceslice.ErrSliceLimit, limit: 64},
		{name: "slices being deleted do not count", in: resourceslice.Signing{Live: append(live(63), deleting(live(10)[:1])...)}},
		{name: "younger slices do not count: the oldest keep their places",
			in: resourceslice.Signing{Live: append(live(63), slice("zz-younger", now.Add(time.Second)), slice("zz-same-second-later-name", now))}},
		{name: "the same second: the name decides", in: resourceslice.Signing{Live: append(live(63), slice("a-same-second", now))},
			want: resourceslice.ErrSliceLimit, limit: 64},
		{name: "a slice holding a certificate is no new slice", in: resourceslice.Signing{Live: live(200), Held: held(now.Add(-4*24*time.Hour), week)}},
		{name: "a configured count", bounds: resourceslice.Bounds{MaxSlices: 2}, in: resourceslice.Signing{Live: live(2)},
			want: resourceslice.ErrSliceLimit, limit: 2},
		{name: "no count bound", bounds: resourceslice.Bounds{MaxSlices: -1}, in: resourceslice.Signing{Live: live(1000)}},

		{name: "a new CSR before half the held certificate's lifetime", in: resourceslice.Signing{Held: held(now.Add(-time.Hour), week)},
			want: resourceslice.ErrRekeyTooSoon, until: now.Add(-time.Hour + week/2)},
		{name: "a new CSR at half the lifetime", in: resourceslice.Signing{Held: held(now.Add(-week/2), week)}},
		{name: "a new CSR once the held certificate expired", in: resourceslice.Signing{Held: held(now.Add(-2*week), time.Hour)}},
		{name: "a configured interval", bounds: resourceslice.Bounds{RekeyInterval: 2 * time.Hour},
			in:   resourceslice.Signing{Held: held(now.Add(-time.Hour), week)},
			want: resourceslice.ErrRekeyTooSoon, until: now.Add(time.Hour)},
		{name: "a configured interval passed", bounds: resourceslice.Bounds{RekeyInterval: 30 * time.Minute},
			in: resourceslice.Signing{Held: held(now.Add(-time.Hour), week)}},
		{name: "no interval", bounds: resourceslice.Bounds{RekeyInterval: -1}, in: resourceslice.Signing{Held: held(now, week)}},

		{name: "127 certificates in the hour", in: resourceslice.Signing{Issued: issued(127, now.Add(-50*time.Minute))}},
		{name: "128 certificates in the hour", in: resourceslice.Signing{Issued: issued(128, now.Add(-50*time.Minute))},
			want: resourceslice.ErrCertificateRate, limit: 128, until: now.Add(10 * time.Minute)},
		{name: "certificates older than the hour do not count",
			in: resourceslice.Signing{Issued: append(issued(500, now.Add(-3*time.Hour)), issued(127, now.Add(-time.Minute))...)}},
		{name: "over the rate: when enough have left the window", bounds: resourceslice.Bounds{CertificatesPerHour: 3},
			in:   resourceslice.Signing{Issued: issued(5, now.Add(-30*time.Minute))},
			want: resourceslice.ErrCertificateRate, limit: 3, until: now.Add(-30*time.Minute + 2*time.Second + time.Hour)},
		{name: "the rate counts re-keys too", bounds: resourceslice.Bounds{CertificatesPerHour: 1},
			in:   resourceslice.Signing{Held: held(now.Add(-week/2), week), Issued: issued(1, now.Add(-time.Minute))},
			want: resourceslice.ErrCertificateRate, limit: 1, until: now.Add(59 * time.Minute)},
		{name: "no rate", bounds: resourceslice.Bounds{CertificatesPerHour: -1}, in: resourceslice.Signing{Issued: issued(10000, now.Add(-time.Minute))}},
		{name: "the count is checked before the rate", bounds: resourceslice.Bounds{MaxSlices: 1, CertificatesPerHour: 1},
			in:   resourceslice.Signing{Live: live(1), Issued: issued(1, now)},
			want: resourceslice.ErrSliceLimit, limit: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := tc.in
			if in.Slice == nil {
				in.Slice = &newSlice
			}
			in.Now = now
			err := tc.bounds.Admit(in)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, resourceslice.ErrBound)
			var b *resourceslice.BoundError
			require.ErrorAs(t, err, &b)
			require.Equal(t, ns+"/new", b.Slice)
			require.Equal(t, tc.limit, b.Limit)
			require.True(t, tc.until.Equal(b.Until), "until %s, want %s", b.Until, tc.until)
			for _, other := range []error{resourceslice.ErrSliceLimit, resourceslice.ErrRekeyTooSoon, resourceslice.ErrCertificateRate} {
				if !errors.Is(tc.want, other) {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

func TestBoundsWithDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, resourceslice.Bounds{MaxSlices: 64, CertificatesPerHour: 128}, resourceslice.Bounds{}.WithDefaults())
	set := resourceslice.Bounds{MaxSlices: -1, RekeyInterval: time.Minute, CertificatesPerHour: 5}
	require.Equal(t, set, set.WithDefaults())
}

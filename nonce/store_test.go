package nonce_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/nonce"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// memStore is a nonce.Store held in a map guarded by a mutex. A non-nil err
// field makes the matching call fail.
type memStore struct {
	mu         sync.Mutex
	entries    map[string]nonce.Entry
	puts       int
	getErr     error
	putErr     error
	markErr    error
	consumeErr error
}

func (s *memStore) Put(_ context.Context, clusterID string, e nonce.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.putErr != nil {
		return s.putErr
	}
	if s.entries == nil {
		s.entries = map[string]nonce.Entry{}
	}
	s.entries[clusterID] = e
	s.puts++
	return nil
}

func (s *memStore) Get(_ context.Context, clusterID string) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.getErr != nil {
		return nonce.Entry{}, s.getErr
	}
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	return e, nil
}

func (s *memStore) MarkRedeemed(_ context.Context, clusterID string, r nonce.Redemption) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.markErr != nil {
		return nonce.Entry{}, s.markErr
	}
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	if e.Redemption == nil {
		e.Redemption = &r
		s.entries[clusterID] = e
	}
	return e, nil
}

func (s *memStore) Consume(_ context.Context, clusterID string) (nonce.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.consumeErr != nil {
		return nonce.Entry{}, s.consumeErr
	}
	e, ok := s.entries[clusterID]
	if !ok {
		return nonce.Entry{}, nonce.ErrNotFound
	}
	delete(s.entries, clusterID)
	return e, nil
}

const consumer = "cl-consumer"

func TestEnsureReusesUntilTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts *nonce.Options
		ttl  time.Duration
	}{
		{name: "nil options", opts: nil, ttl: nonce.DefaultTTL},
		{name: "zero options", opts: &nonce.Options{}, ttl: nonce.DefaultTTL},
		{name: "negative TTL", opts: &nonce.Options{TTL: -time.Second}, ttl: nonce.DefaultTTL},
		{name: "one minute", opts: &nonce.Options{TTL: time.Minute}, ttl: time.Minute},
		{name: "one hour", opts: &nonce.Options{TTL: time.Hour}, ttl: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktesting.NewFakeClock(epoch)
			s := &memStore{}
			first, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), tt.opts)
			require.NoError(t, err)
			require.False(t, first.IsZero())
			stored, err := s.Get(t.Context(), consumer)
			require.NoError(t, err)
			require.True(t, first.Equal(stored.Nonce))
			require.Equal(t, epoch, stored.IssuedAt)
			require.Equal(t, tt.ttl, stored.TTL, "the TTL is recorded at issue")

			clk.Step(tt.ttl - time.Nanosecond)
			second, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), tt.opts)
			require.NoError(t, err)
			require.True(t, first.Equal(second), "same nonce before the TTL")
			require.Equal(t, 1, s.puts)

			clk.Step(time.Nanosecond)
			third, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), tt.opts)
			require.NoError(t, err)
			require.False(t, first.Equal(third), "new nonce at the TTL")
			require.Equal(t, 2, s.puts)
			stored, err = s.Get(t.Context(), consumer)
			require.NoError(t, err)
			require.True(t, third.Equal(stored.Nonce))
			require.Equal(t, clk.Now(), stored.IssuedAt)
		})
	}
}

func TestEnsureUsesRand(t *testing.T) {
	t.Parallel()
	n, err := nonce.Ensure(t.Context(), &memStore{}, consumer, epoch, &nonce.Options{Rand: counting()})
	require.NoError(t, err)
	require.Equal(t, countingText, n.Text())
}

func TestEnsureKeepsClustersApart(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	a, err := nonce.Ensure(t.Context(), s, "cl-a", epoch, nil)
	require.NoError(t, err)
	b, err := nonce.Ensure(t.Context(), s, "cl-b", epoch, nil)
	require.NoError(t, err)
	require.False(t, a.Equal(b))
}

func TestEnsureErrors(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store unavailable")
	errRead := errors.New("entropy exhausted")
	tests := []struct {
		name  string
		store *memStore
		opts  *nonce.Options
		want  error
	}{
		{name: "Get fails", store: &memStore{getErr: errStore}, want: errStore},
		{name: "Put fails", store: &memStore{putErr: errStore}, want: errStore},
		{name: "Rand fails", store: &memStore{}, opts: &nonce.Options{Rand: errReader{errRead}}, want: errRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := nonce.Ensure(t.Context(), tt.store, consumer, epoch, tt.opts)
			require.ErrorIs(t, err, tt.want)
			require.True(t, n.IsZero())
			require.Zero(t, tt.store.puts)
		})
	}
}

// digest returns a stand-in for a Tenant, each of its own key.
func digest(b byte) nonce.Redeemer {
	return nonce.Redeemer{Tenant: bytes.Repeat([]byte{b}, 32), Key: fmt.Sprintf("SHA256:key-%d", b)}
}

func TestRedeem(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(epoch)
	s := &memStore{}
	issued, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), nil)
	require.NoError(t, err)
	other, err := nonce.Ensure(t.Context(), s, "cl-other", clk.Now(), nil)
	require.NoError(t, err)

	clk.Step(nonce.DefaultTTL - time.Nanosecond)
	redeemedAt := clk.Now()
	got, err := nonce.Redeem(t.Context(), s, consumer, digest(1), redeemedAt, nil)
	require.NoError(t, err)
	require.True(t, issued.Equal(got.Nonce))
	require.Equal(t, &nonce.Redemption{By: digest(1).Tenant, Key: digest(1).Key, At: redeemedAt}, got.Redemption)

	// Another Tenant: refused, as ErrRedeemed and, for older callers, ErrNotFound.
	_, err = nonce.Redeem(t.Context(), s, consumer, digest(2), clk.Now(), nil)
	require.ErrorIs(t, err, nonce.ErrRedeemed, "a nonce is redeemed by one Tenant")
	require.ErrorIs(t, err, nonce.ErrNotFound)

	// The same Tenant, even after the TTL: the redemption, as it was.
	clk.Step(time.Hour)
	again, err := nonce.Redeem(t.Context(), s, consumer, digest(1), clk.Now(), nil)
	require.NoError(t, err)
	require.Equal(t, got, again)

	e, err := s.Get(t.Context(), "cl-other")
	require.NoError(t, err)
	require.True(t, other.Equal(e.Nonce), "redeeming one cluster's nonce leaves the others")
	require.Nil(t, e.Redemption)

	// Ensure replaces a redeemed nonce.
	fresh, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), nil)
	require.NoError(t, err)
	require.False(t, fresh.Equal(issued))
	_, err = nonce.Redeem(t.Context(), s, consumer, digest(1), clk.Now(), nil)
	require.NoError(t, err, "the fresh nonce is anyone's to redeem")
}

// The holder of the key that redeemed a nonce re-authenticates with it,
// with a new Tenant; a Tenant claiming another key cannot; Ensure keeps the
// nonce when KeepRedeemed says so.
func TestRedeemBySameKey(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(epoch)
	s := &memStore{}
	issued, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), nil)
	require.NoError(t, err)
	first := nonce.Redeemer{Tenant: bytes.Repeat([]byte{1}, 32), Key: "SHA256:consumer"}
	_, err = nonce.Redeem(t.Context(), s, consumer, first, clk.Now(), nil)
	require.NoError(t, err)

	clk.Step(30 * 24 * time.Hour)
	var kept []nonce.Redemption
	keep := &nonce.Options{KeepRedeemed: func(_ context.Context, r nonce.Redemption) (bool, error) {
		kept = append(kept, r)
		return r.Key == "SHA256:consumer", nil
	}}
	again, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), keep)
	require.NoError(t, err)
	require.True(t, issued.Equal(again), "the redeemed nonce is kept")
	require.Len(t, kept, 1)
	require.Equal(t, first.Tenant, kept[0].By)

	second := nonce.Redeemer{Tenant: bytes.Repeat([]byte{2}, 32), Key: "SHA256:consumer"}
	e, err := nonce.Redeem(t.Context(), s, consumer, second, clk.Now(), nil)
	require.NoError(t, err, "the same key re-authenticates, long after the TTL")
	require.Equal(t, first.Tenant, e.Redemption.By, "the first redemption stays recorded")

	_, err = nonce.Redeem(t.Context(), s, consumer, nonce.Redeemer{Tenant: second.Tenant, Key: "SHA256:other"}, clk.Now(), nil)
	require.ErrorIs(t, err, nonce.ErrRedeemed, "another key, even with a known Tenant digest")
	_, err = nonce.Redeem(t.Context(), s, consumer, nonce.Redeemer{Tenant: second.Tenant}, clk.Now(), nil)
	require.ErrorIs(t, err, nonce.ErrRedeemed, "no key claimed")

	errKeep := errors.New("tenant store unavailable")
	_, err = nonce.Ensure(t.Context(), s, consumer, clk.Now(), &nonce.Options{
		KeepRedeemed: func(context.Context, nonce.Redemption) (bool, error) { return false, errKeep },
	})
	require.ErrorIs(t, err, errKeep)
	fresh, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), &nonce.Options{
		KeepRedeemed: func(context.Context, nonce.Redemption) (bool, error) { return false, nil },
	})
	require.NoError(t, err)
	require.False(t, fresh.Equal(issued), "a nonce not kept is replaced")
}

func TestRedeemExpired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  *nonce.Options
		after time.Duration
	}{
		{name: "default TTL", opts: nil, after: nonce.DefaultTTL},
		{name: "custom TTL", opts: &nonce.Options{TTL: time.Minute}, after: time.Minute},
		{name: "long after", opts: nil, after: 30 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktesting.NewFakeClock(epoch)
			s := &memStore{}
			_, err := nonce.Ensure(t.Context(), s, consumer, clk.Now(), tt.opts)
			require.NoError(t, err)

			clk.Step(tt.after)
			e, err := nonce.Redeem(t.Context(), s, consumer, digest(1), clk.Now(), tt.opts)
			require.ErrorIs(t, err, nonce.ErrExpired)
			require.True(t, e.Nonce.IsZero())

			// Dead for everyone: expired for its redeemer, taken for others.
			_, err = nonce.Redeem(t.Context(), s, consumer, digest(1), clk.Now(), tt.opts)
			require.ErrorIs(t, err, nonce.ErrExpired)
			_, err = nonce.Redeem(t.Context(), s, consumer, digest(2), clk.Now(), tt.opts)
			require.ErrorIs(t, err, nonce.ErrRedeemed)
		})
	}
}

func TestRedeemErrors(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store unavailable")
	tests := []struct {
		name   string
		store  *memStore
		digest nonce.Redeemer
		want   error
	}{
		{name: "never issued", store: &memStore{}, digest: digest(1), want: nonce.ErrNotFound},
		{name: "MarkRedeemed fails", store: &memStore{markErr: errStore}, digest: digest(1), want: errStore},
		{name: "no digest", store: &memStore{}, digest: nonce.Redeemer{Key: "SHA256:k"}, want: nonce.ErrMalformed},
		{name: "digest too long", store: &memStore{}, digest: nonce.Redeemer{Tenant: make([]byte, nonce.MaxRedeemerSize+1)}, want: nonce.ErrMalformed},
		{name: "key fingerprint too long", store: &memStore{}, digest: nonce.Redeemer{Tenant: []byte{1}, Key: string(make([]byte, nonce.MaxRedeemerSize+1))}, want: nonce.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := nonce.Redeem(t.Context(), tt.store, consumer, tt.digest, epoch, nil)
			require.ErrorIs(t, err, tt.want)
			require.True(t, e.Nonce.IsZero())
		})
	}
}

func TestRedeemConcurrently(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	issued, err := nonce.Ensure(t.Context(), s, consumer, epoch, nil)
	require.NoError(t, err)

	const callers = 50
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		won      atomic.Int32
		redeemed atomic.Int32
		winner   atomic.Pointer[nonce.Entry]
	)
	for i := range callers {
		wg.Go(func() {
			<-start
			e, err := nonce.Redeem(context.Background(), s, consumer, digest(byte(i)), epoch, nil)
			switch {
			case err == nil:
				won.Add(1)
				winner.Store(&e)
			case errors.Is(err, nonce.ErrRedeemed):
				redeemed.Add(1)
			default:
				t.Errorf("Redeem: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, won.Load())
	require.EqualValues(t, callers-1, redeemed.Load())
	require.True(t, issued.Equal(winner.Load().Nonce))
}

// A nonce is judged by the TTL it was issued with, not by the TTL of
// whoever calls Ensure or Redeem later; only an entry recording no TTL (as
// Liqo writes them) falls back to the caller's.
func TestIssuedTTLWins(t *testing.T) {
	t.Parallel()
	short, long := &nonce.Options{TTL: time.Minute}, &nonce.Options{TTL: time.Hour}
	tests := []struct {
		name        string
		issue       func(t *testing.T, s *memStore) // at epoch
		judge       *nonce.Options
		after       time.Duration
		wantExpired bool
	}{
		{name: "issued short, judged long, after the issued TTL", issue: ensure(short), judge: long, after: 2 * time.Minute, wantExpired: true},
		{name: "issued short, judged by default, after the issued TTL", issue: ensure(short), judge: nil, after: 2 * time.Minute, wantExpired: true},
		{name: "issued short, judged long, before the issued TTL", issue: ensure(short), judge: long, after: time.Minute - time.Nanosecond},
		{name: "issued long, judged short, after the judge's TTL", issue: ensure(long), judge: short, after: 2 * time.Minute},
		{name: "issued long, judged short, after the issued TTL", issue: ensure(long), judge: short, after: time.Hour, wantExpired: true},
		{name: "no TTL recorded, judged long", issue: putWithoutTTL, judge: long, after: 2 * time.Minute},
		{name: "no TTL recorded, judged short", issue: putWithoutTTL, judge: short, after: 2 * time.Minute, wantExpired: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Redeemed by a Tenant of a new key.
			s := &memStore{}
			tt.issue(t, s)
			e, err := nonce.Redeem(t.Context(), s, consumer, digest(1), epoch.Add(tt.after), tt.judge)
			if tt.wantExpired {
				require.ErrorIs(t, err, nonce.ErrExpired)
				require.True(t, e.Nonce.IsZero())
			} else {
				require.NoError(t, err)
			}

			// Ensure replaces the nonce exactly when it expired.
			s = &memStore{}
			tt.issue(t, s)
			issued, err := s.Get(t.Context(), consumer)
			require.NoError(t, err)
			n, err := nonce.Ensure(t.Context(), s, consumer, epoch.Add(tt.after), tt.judge)
			require.NoError(t, err)
			require.Equal(t, tt.wantExpired, !n.Equal(issued.Nonce), "nonce replaced")
		})
	}
}

func ensure(opts *nonce.Options) func(t *testing.T, s *memStore) {
	return func(t *testing.T, s *memStore) {
		t.Helper()
		_, err := nonce.Ensure(t.Context(), s, consumer, epoch, opts)
		require.NoError(t, err)
	}
}

func putWithoutTTL(t *testing.T, s *memStore) {
	t.Helper()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), consumer, nonce.Entry{Nonce: n, IssuedAt: epoch}))
}

// The key that redeemed a nonce in time may redeem it again, with a new
// Tenant, after the TTL it was issued with; no other key may.
func TestRedeemBySameKeyAfterIssuedTTL(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	_, err := nonce.Ensure(t.Context(), s, consumer, epoch, &nonce.Options{TTL: time.Minute})
	require.NoError(t, err)
	first := nonce.Redeemer{Tenant: bytes.Repeat([]byte{1}, 32), Key: "SHA256:consumer"}
	_, err = nonce.Redeem(t.Context(), s, consumer, first, epoch.Add(30*time.Second), nil)
	require.NoError(t, err)

	later := epoch.Add(24 * time.Hour)
	second := nonce.Redeemer{Tenant: bytes.Repeat([]byte{2}, 32), Key: "SHA256:consumer"}
	_, err = nonce.Redeem(t.Context(), s, consumer, second, later, &nonce.Options{TTL: time.Minute})
	require.NoError(t, err, "the same key re-authenticates after the issued TTL")
	_, err = nonce.Redeem(t.Context(), s, consumer, digest(3), later, &nonce.Options{TTL: 48 * time.Hour})
	require.ErrorIs(t, err, nonce.ErrRedeemed)
}

func TestEntryTTLOr(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Hour, nonce.Entry{}.TTLOr(time.Hour))
	require.Equal(t, time.Minute, nonce.Entry{TTL: time.Minute}.TTLOr(time.Hour))
	require.Equal(t, time.Hour, nonce.Entry{TTL: -time.Minute}.TTLOr(time.Hour))
}

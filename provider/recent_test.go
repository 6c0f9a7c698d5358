package provider

import (
	"fmt"
	"testing"
	"time"
)

// recent holds about as many entries as keys passed within one interval,
// however many keys passed before.
func TestRecentSweepsExpiredEntries(t *testing.T) {
	t.Parallel()
	r := newRecent(time.Minute)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		r.pass(fmt.Sprint(i), now)
		now = now.Add(time.Second)
	}
	if n := len(r.passed); n > 2*60+64 {
		t.Fatalf("%d entries held, want at most %d", n, 2*60+64)
	}
	if !r.fresh("9999", now) || r.fresh("0", now) {
		t.Fatal("fresh must hold the last key and not the first")
	}
	if r.fresh("9999", now.Add(time.Minute)) {
		t.Fatal("an entry is fresh for one interval only")
	}
	if r.fresh("9999", now.Add(-time.Hour)) {
		t.Fatal("a pass in the future of now is not fresh")
	}
}

// A check that began before a forget records no pass: its answers may
// predate what made the provider forget (Provider.Recheck).
func TestRecentForgetDuringACheck(t *testing.T) {
	t.Parallel()
	r := newRecent(time.Minute)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	since := r.generation()
	r.forget("cl-a")
	r.passSince("cl-a", now, since)
	if r.fresh("cl-a", now) {
		t.Fatal("a pass from a check begun before a forget must not count")
	}
	r.passSince("cl-a", now, r.generation())
	if !r.fresh("cl-a", now) {
		t.Fatal("a pass from a check begun after the forget counts")
	}
}

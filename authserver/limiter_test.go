package authserver

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestLimiterBounded: an attacker spraying failures from many addresses
// cannot grow the table beyond its bound, and an address that keeps
// failing stays limited while others are forgotten.
func TestLimiterBounded(t *testing.T) {
	now := time.Now()
	l := newLimiter(rate.Every(time.Minute), 2, 100)
	for range 3 {
		l.fail("203.0.113.1", now)
	}
	for i := range 10000 {
		l.fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now.Add(time.Duration(i)*time.Millisecond))
		if n := l.len(); n > 100 {
			t.Fatalf("table holds %d clients, bound 100", n)
		}
	}
	if !l.ok("198.51.100.7", now) {
		t.Fatal("a client that never failed is limited")
	}
	l2 := newLimiter(rate.Every(time.Minute), 2, 3)
	l2.fail("a", now)
	l2.fail("a", now)
	if l2.ok("a", now) {
		t.Fatal("a client over its burst is not limited")
	}
	if !l2.ok("a", now.Add(time.Minute)) {
		t.Fatal("a client is still limited after waiting")
	}
}

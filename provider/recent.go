package provider

import (
	"sync"
	"time"
)

// DefaultRecheckInterval is how long a Provider trusts a passed privilege
// check of a consumer, and its application of the ControlPlane ClusterRole,
// unless Options.RecheckInterval says otherwise.
const DefaultRecheckInterval = time.Minute

// recent remembers, for a bounded time, which keys passed a check. It is
// safe for concurrent use. Expired entries are swept as new ones come, so
// it holds about as many entries as keys passed within one interval.
type recent struct {
	ttl time.Duration

	mu      sync.Mutex
	passed  map[string]time.Time
	sweepAt int
	// forgets counts the calls of forget: a check that began before one
	// may have asked before what made it forget.
	forgets uint64
}

func newRecent(ttl time.Duration) *recent {
	return &recent{ttl: ttl, passed: make(map[string]time.Time), sweepAt: 64}
}

// fresh reports whether key passed within the interval before now.
func (r *recent) fresh(key string, now time.Time) bool {
	if r.ttl <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.passed[key]
	return ok && !now.Before(at) && now.Sub(at) < r.ttl
}

// generation returns the number of forgets so far, for passSince.
func (r *recent) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.forgets
}

// pass records that key passed at now.
func (r *recent) pass(key string, now time.Time) {
	r.passSince(key, now, r.generation())
}

// passSince records that key passed at now, in a check that began at
// generation since, unless a forget (of any key) came after it began.
func (r *recent) passSince(key string, now time.Time, since uint64) {
	if r.ttl <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.forgets != since {
		return
	}
	r.passed[key] = now
	if len(r.passed) < r.sweepAt {
		return
	}
	for k, at := range r.passed {
		if now.Sub(at) >= r.ttl || now.Before(at) {
			delete(r.passed, k)
		}
	}
	r.sweepAt = max(64, 2*len(r.passed))
}

// forget drops key, so that its next check runs, and keeps a check
// already begun from recording a pass.
func (r *recent) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.passed, key)
	r.forgets++
}

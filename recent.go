package kubepact

import (
	"sync"
	"time"
)

// DefaultRecheckInterval is how long a Provider trusts a passed privilege
// check of a consumer, and its application of the ControlPlane ClusterRole,
// unless ProviderOptions.RecheckInterval says otherwise.
const DefaultRecheckInterval = time.Minute

// recent remembers, for a bounded time, which keys passed a check. It is
// safe for concurrent use. Expired entries are swept as new ones come, so
// it holds about as many entries as keys passed within one interval.
type recent struct {
	ttl time.Duration

	mu      sync.Mutex
	passed  map[string]time.Time
	sweepAt int
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

// pass records that key passed at now.
func (r *recent) pass(key string, now time.Time) {
	if r.ttl <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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

// forget drops key, so that its next check runs.
func (r *recent) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.passed, key)
}

package authserver

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a token bucket of failed attempts per client, over a table of
// at most max clients. Only clients that failed are in the table; when it
// is full, the one that failed least recently is forgotten.
type limiter struct {
	every rate.Limit
	burst int
	max   int

	mu      sync.Mutex
	clients map[string]*client
}

type client struct {
	bucket *rate.Limiter
	last   time.Time // of the last failure
}

func newLimiter(every rate.Limit, burst, max int) *limiter {
	return &limiter{every: every, burst: burst, max: max, clients: map[string]*client{}}
}

// ok reports whether addr may try at now: it has a failure left.
func (l *limiter) ok(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, found := l.clients[addr]
	return !found || c.bucket.TokensAt(now) >= 1
}

// fail counts a failure of addr at now.
func (l *limiter) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, found := l.clients[addr]
	if !found {
		if len(l.clients) >= l.max {
			l.evict(now)
		}
		c = &client{bucket: rate.NewLimiter(l.every, l.burst)}
		l.clients[addr] = c
	}
	c.bucket.AllowN(now, 1)
	c.last = now
}

// evict forgets every client whose bucket is full again, and, if none is,
// the one that failed least recently. It runs only on a full table, so its
// cost is paid by the clients that fill it.
func (l *limiter) evict(now time.Time) {
	var oldest string
	for addr, c := range l.clients {
		if c.bucket.TokensAt(now) >= float64(l.burst) {
			delete(l.clients, addr)
			continue
		}
		if oldest == "" || c.last.Before(l.clients[oldest].last) {
			oldest = addr
		}
	}
	if len(l.clients) >= l.max && oldest != "" {
		delete(l.clients, oldest)
	}
}

// len returns the number of clients remembered.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// gate bounds the handshakes a provider has in flight: from the nonce it
// issues a consumer to the Tenant it accepts or refuses. The nonce
// reconciler enters the gate before it issues a nonce, the Tenant
// reconciler leaves it once the Tenant is settled, and workers waiting to
// enter go in the order they came. Under a burst of consumers the first
// are then served first, whole, rather than all of them getting their
// nonces at once and then their certificates together at the end.
//
// A slot is also given back hold after it was taken, so that a consumer
// that never sends its Tenant delays the others at most that long, and a
// worker waits at most hold to enter: the gate orders handshakes, it never
// refuses one.
type gate struct {
	slots chan struct{}
	hold  time.Duration
	clock clock.WithDelayedExecution

	mu   sync.Mutex
	held map[string]*slot // by consumer ID
}

// slot is a slot taken, with the timer that gives it back.
type slot struct{ timer clock.Timer }

// newGate returns a gate of size slots, each given back after hold at the
// latest, on clk.
func newGate(size int, hold time.Duration, clk clock.WithDelayedExecution) *gate {
	return &gate{slots: make(chan struct{}, size), hold: hold, clock: clk, held: map[string]*slot{}}
}

// enter takes a slot for consumerID's handshake, waiting for one at most
// hold; it returns at once when consumerID holds a slot already. It
// returns ctx.Err() if ctx is done first.
func (g *gate) enter(ctx context.Context, consumerID string) error {
	g.mu.Lock()
	_, holding := g.held[consumerID]
	g.mu.Unlock()
	if holding {
		return nil
	}
	wait := g.clock.NewTimer(g.hold)
	defer wait.Stop()
	select {
	case g.slots <- struct{}{}:
	case <-wait.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, holding := g.held[consumerID]; holding {
		<-g.slots // taken meanwhile by another worker for the same consumer
		return nil
	}
	s := new(slot)
	// Given back on a goroutine of its own, as a clock may call back
	// holding a lock that stopping a timer takes.
	s.timer = g.clock.AfterFunc(g.hold, func() { go g.release(consumerID, s) })
	g.held[consumerID] = s
	return nil
}

// leave gives back consumerID's slot, if it holds one.
func (g *gate) leave(consumerID string) {
	g.release(consumerID, nil)
}

// release gives back consumerID's slot if it holds one and, when s is not
// nil, only if it is s.
func (g *gate) release(consumerID string, s *slot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held, ok := g.held[consumerID]
	if !ok || s != nil && held != s {
		return
	}
	held.timer.Stop()
	delete(g.held, consumerID)
	<-g.slots
}

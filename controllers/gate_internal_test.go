package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

const testHold = time.Minute

// entering starts g.enter for id and returns the channel its result comes
// on.
func entering(g *gate, ctx context.Context, id string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.enter(ctx, id) }()
	return done
}

// requireWaiting fails t if done has a result within a moment.
func requireWaiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s entered (err %v) while the gate was full", what, err)
	case <-time.After(100 * time.Millisecond):
	}
}

// requireEntered fails t unless done has a nil result soon.
func requireEntered(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not enter", what)
	}
}

func TestGateBoundsHandshakesInFlight(t *testing.T) {
	ctx := context.Background()
	g := newGate(2, testHold, testingclock.NewFakeClock(time.Now()))
	require.NoError(t, g.enter(ctx, "a"))
	require.NoError(t, g.enter(ctx, "b"))
	require.NoError(t, g.enter(ctx, "a"), "a consumer that holds a slot enters again at once")

	c := entering(g, ctx, "c")
	requireWaiting(t, c, "a third consumer")
	g.leave("b")
	requireEntered(t, c, "c, once b left")

	d := entering(g, ctx, "d")
	requireWaiting(t, d, "a fourth consumer")
	g.leave("unknown")
	g.leave("b")
	requireWaiting(t, d, "d, after consumers holding no slot left")
	g.leave("a")
	requireEntered(t, d, "d, once a left")
}

func TestGateServesInArrivalOrder(t *testing.T) {
	ctx := context.Background()
	g := newGate(1, testHold, testingclock.NewFakeClock(time.Now()))
	require.NoError(t, g.enter(ctx, "a"))
	first := entering(g, ctx, "first")
	requireWaiting(t, first, "first")
	second := entering(g, ctx, "second")
	requireWaiting(t, second, "second")

	g.leave("a")
	requireEntered(t, first, "first, once a left")
	requireWaiting(t, second, "second, while first holds the slot")
	g.leave("first")
	requireEntered(t, second, "second, once first left")
}

func TestGateGivesSlotsBackAfterHold(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	g := newGate(1, testHold, clk)
	require.NoError(t, g.enter(ctx, "silent")) // its Tenant never comes
	clk.Step(testHold / 2)
	next := entering(g, ctx, "next")
	requireWaiting(t, next, "next")
	clk.Step(testHold / 2)
	requireEntered(t, next, "next, once silent's hold passed")

	// A slot taken again is not given back by the timer of the slot left.
	g.leave("next")
	require.NoError(t, g.enter(ctx, "silent"))
	clk.Step(testHold / 2)
	g.leave("silent")
	require.NoError(t, g.enter(ctx, "silent"))
	clk.Step(testHold / 2) // when the slot left would have been given back
	// Nor by that timer when it fired before the slot was left: its
	// callback may run after silent entered again.
	stale := g.held["silent"]
	g.leave("silent")
	require.NoError(t, g.enter(ctx, "silent"))
	g.release("silent", stale)
	late := entering(g, ctx, "late")
	requireWaiting(t, late, "late, while silent holds its new slot")
	g.leave("silent")
	requireEntered(t, late, "late, once silent left")
}

func TestGateNeverRefuses(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	g := newGate(1, testHold, clk)
	require.NoError(t, g.enter(ctx, "a"))
	clk.Step(testHold / 2)
	b := entering(g, ctx, "b")
	requireWaiting(t, b, "b")
	c := entering(g, ctx, "c")
	requireWaiting(t, c, "c")

	clk.Step(testHold / 2) // a's hold is over: b, first in line, takes its slot
	requireEntered(t, b, "b, once a's hold passed")
	requireWaiting(t, c, "c, behind b")
	clk.Step(testHold / 2) // c has waited hold: it goes on without a slot
	requireEntered(t, c, "c, after waiting hold")

	d := entering(g, ctx, "d")
	requireWaiting(t, d, "d, while b holds the slot")
	g.leave("c") // holds none: gives none back
	requireWaiting(t, d, "d, once c, which held no slot, left")
	g.leave("b")
	requireEntered(t, d, "d, once b left")
}

func TestGateEnterIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := newGate(1, testHold, testingclock.NewFakeClock(time.Now()))
	require.NoError(t, g.enter(ctx, "a"))
	b := entering(g, ctx, "b")
	requireWaiting(t, b, "b")
	cancel()
	select {
	case err := <-b:
		require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled enter did not return")
	}
}

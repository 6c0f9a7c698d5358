package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

func TestQuietStop(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	l := withQuietStop(ctx, base).WithValues("k", "v")

	lost := errors.New(leaseLostErr)
	l.Error(lost, stopSequenceMsg)
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], `"error"="leader election lost"`, "a lease lost while running is an error")

	cancel()
	l.Error(lost, stopSequenceMsg)
	require.Len(t, lines, 2)
	require.NotContains(t, lines[1], `"error"`, "the lease released on stop is not")
	require.Contains(t, lines[1], "released on stop")

	l.Error(errors.New("other"), stopSequenceMsg)
	require.Contains(t, lines[2], `"error"="other"`, "any other error still is")

	// A request cut short by the stop is not an error either.
	l.Error(fmt.Errorf("renewing the lease: %w", context.Canceled), "Failed to update lease")
	require.NotContains(t, lines[3], `"error"`)
	require.Contains(t, lines[3], "Failed to update lease")
}

func TestQuietStopWhileRunning(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	l := withQuietStop(context.Background(), base)
	l.Error(fmt.Errorf("renewing the lease: %w", context.Canceled), "Failed to update lease")
	require.Contains(t, lines[0], `"error"=`, "a cancellation while running is an error")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errInterrupted reports a command stopped by a signal (Ctrl-C).
var errInterrupted = errors.New("interrupted")

// signalCause is the cause of the context notifyInterrupt cancels: the
// signal received. It wraps errInterrupted.
type signalCause struct{ sig os.Signal }

func (s *signalCause) Error() string { return "interrupted by " + s.sig.String() }

func (s *signalCause) Unwrap() error { return errInterrupted }

// notifyInterrupt returns a context that ends, with a *signalCause as its
// cause, at the first SIGINT (Ctrl-C) or SIGTERM. A second signal is not
// caught: it ends the process at once, for a command that does not stop.
// stop releases the signals.
func notifyInterrupt(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(&signalCause{sig: sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// interrupted reports whether a signal ended ctx.
func interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errInterrupted)
}

// exitCode returns the exit status of a command that returned code under
// ctx: as a shell reports a command a signal ended, 128 plus the signal's
// number when one stopped it (130 for Ctrl-C, 143 for SIGTERM).
func exitCode(ctx context.Context, code int) int {
	var sc *signalCause
	if code == exitOK || !errors.As(context.Cause(ctx), &sc) {
		return code
	}
	if s, ok := sc.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// InterruptedError reports a command a signal stopped: what it waited for
// then, what it wrote and leaves behind, and how to go on. It wraps
// errInterrupted.
type InterruptedError struct {
	// Command is the command stopped: "authenticate".
	Command string
	// Waiting is what it waited for ("the provider's controller to accept
	// the Tenant"), empty when it was not waiting.
	Waiting string
	// Left is what it wrote and leaves behind, in the order written.
	Left []string
	// Resume and Clean say how to finish what it started, and how to
	// remove what it left instead; empty when there is nothing to say.
	Resume, Clean string
}

func (e *InterruptedError) Error() string {
	var b strings.Builder
	b.WriteString(errInterrupted.Error())
	if e.Command != "" {
		b.WriteString(" " + e.Command)
	}
	if e.Waiting != "" {
		b.WriteString(" while waiting for " + e.Waiting)
	}
	if len(e.Left) > 0 {
		b.WriteString("; left behind: " + strings.Join(e.Left, ", "))
	} else if e.Command != "" {
		b.WriteString("; nothing was written")
	}
	return b.String()
}

func (e *InterruptedError) Unwrap() error { return errInterrupted }

// settle returns err as the command should report it: when a signal
// stopped the command, ie, told what it waited for and what c left
// behind; when a controller stopped during a wait, its
// *ControllerGoneError; else err.
func settle(ctx context.Context, err error, c *clusters, ie *InterruptedError) error {
	if err == nil {
		return nil
	}
	if interrupted(ctx) {
		var during *InterruptedError
		if errors.As(err, &during) {
			ie.Waiting = during.Waiting
		}
		if c != nil {
			ie.Left = c.left
		}
		return ie
	}
	var gone *ControllerGoneError
	if !errors.As(err, &gone) && errors.As(context.Cause(ctx), &gone) {
		return fmt.Errorf("%w (%v)", gone, err)
	}
	return err
}

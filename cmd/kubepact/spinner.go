package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress tells, on standard error, what the CLI waits for. On a
// terminal a spinner turns with the seconds waited and is erased when the
// wait ends; elsewhere (a file, a pipe, CI) each wait is one plain line,
// so that logs stay readable.
type progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration // between two frames of the spinner
}

// newProgress returns the progress of a command writing to w: a spinner
// when w is a terminal.
func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: isTerminal(w), interval: 100 * time.Millisecond}
}

// isTerminal reports whether w is a terminal: a character device, with a
// TERM that can move the cursor.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// spinnerFrames are the spinner's frames, in turn.
var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// wait says that the command now waits for what ("the provider's
// controller to issue the nonce") and returns the function that ends the
// wait, which may be called more than once. On a terminal the line is
// redrawn until then, and erased.
func (p *progress) wait(what string) (done func()) {
	if p == nil {
		return func() {}
	}
	if !p.tty {
		fmt.Fprintf(p.w, " INFO  Waiting for %s\n", what)
		return func() {}
	}
	stop, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(p.w, "\r\033[K %c Waiting for %s (%ds)", spinnerFrames[i%len(spinnerFrames)], what, int(time.Since(start).Seconds()))
			select {
			case <-stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-finished
		})
	}
}

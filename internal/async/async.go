// Package async starts the requests of a handshake that do not depend on
// each other at once, and waits for each where it is needed.
package async

import "sync"

// Start runs f in a goroutine of its own and returns the function that
// waits for its result: the same result at every call. A handshake starts
// the requests that do not depend on each other with it, and waits for
// each where it decides on it.
func Start[T any](f func() (T, error)) func() (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	return sync.OnceValues(func() (T, error) {
		r := <-done
		return r.v, r.err
	})
}

// StartErr is Start for a function that returns an error alone.
func StartErr(f func() error) func() error {
	wait := Start(func() (struct{}, error) { return struct{}{}, f() })
	return func() error {
		_, err := wait()
		return err
	}
}

package kubepact

import "sync"

// start runs f in a goroutine of its own and returns the function that
// waits for its result: the same result at every call. A handshake starts
// the requests that do not depend on each other with it, and waits for
// each where it decides on it.
func start[T any](f func() (T, error)) func() (T, error) {
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

// startErr is start for a function that returns an error alone.
func startErr(f func() error) func() error {
	wait := start(func() (struct{}, error) { return struct{}{}, f() })
	return func() error {
		_, err := wait()
		return err
	}
}

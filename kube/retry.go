package kube

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// conflictBackoff spaces retries after a conflict. It allows more attempts
// than client-go's retry.DefaultRetry, so a handful of writers racing for one
// object all get through.
var conflictBackoff = wait.Backoff{Steps: 20, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: 500 * time.Millisecond}

// retryOnConflict runs fn until it succeeds, fails with an error other than
// a conflict, runs out of attempts, or ctx ends. Unlike retry.OnError alone,
// it never reports success for a call that did not succeed: retry.OnError
// turns an interruption by ctx into its last conflict error, which may be nil.
func retryOnConflict(ctx context.Context, fn func() error) error {
	var last error
	succeeded := false
	err := retry.OnError(conflictBackoff, apierrors.IsConflict, func() error {
		if last = ctx.Err(); last != nil {
			return last
		}
		last = fn()
		succeeded = last == nil
		return last
	})
	switch {
	case succeeded:
		return nil
	case last != nil:
		return last
	case err != nil:
		return err
	}
	return ctx.Err()
}

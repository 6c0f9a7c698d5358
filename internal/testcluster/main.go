package testcluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Main is the TestMain of a package whose tests share two clusters, a
// provider and a consumer: it starts them with opts, named names[0] and
// names[1] ("provider" and "consumer" when names is empty), makes each
// one's test environment with newEnv into *provider and *consumer, runs the
// tests and stops the clusters. Starting the clusters and making the
// environments share one context, which ends after timeout. Main returns
// the code for os.Exit: 1, with the error on standard error, when a cluster
// fails to start or newEnv fails.
func Main[E any](m *testing.M, timeout time.Duration, opts Options, newEnv func(context.Context, *Cluster) (E, error), provider, consumer *E, names ...string) int {
	if len(names) == 0 {
		names = []string{"provider", "consumer"}
	}
	if len(names) != 2 {
		fmt.Fprintf(os.Stderr, "testcluster: Main starts two clusters, not %d\n", len(names))
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	clusters, err := StartAllWith(ctx, opts, names...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer StopAll(clusters)
	for i, env := range []*E{provider, consumer} {
		if *env, err = newEnv(ctx, clusters[i]); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", names[i], err)
			return 1
		}
	}
	return m.Run()
}

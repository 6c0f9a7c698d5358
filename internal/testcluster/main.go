package testcluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Pair is what a package's tests share: a provider and a consumer cluster.
type Pair struct {
	Provider, Consumer *Cluster
}

// Main is the TestMain of a package whose tests share two clusters: it
// starts them with opts, named names[0] and names[1] ("provider" and
// "consumer" when names is empty), lets setup prepare them, runs the tests
// and stops the clusters. Starting and setup share one context that ends
// after timeout. It returns the code for os.Exit: 1, with the error on
// standard error, when the clusters fail to start or setup fails.
func Main(m *testing.M, timeout time.Duration, opts Options, setup func(ctx context.Context, p Pair) error, names ...string) int {
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
	if err := setup(ctx, Pair{Provider: clusters[0], Consumer: clusters[1]}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

package testcluster

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// StartT starts a cluster for the test t and stops it in t.Cleanup. It builds the binaries first
// if they are missing (see EnsureBinaries), which on a fresh machine takes several minutes, so
// keep `go test -timeout` well above that. It never skips: if the binaries cannot be built or the
// cluster cannot start, the test fails. If the test has failed by the time of the cleanup, the
// last lines of each component's log are logged before the cluster is stopped.
//
// Like t.Fatal, StartT must be called from the goroutine running the test. To start several
// clusters concurrently, call EnsureBinaries once, then Start from several goroutines.
func StartT(t testing.TB) *Cluster {
	t.Helper()
	binDir, err := EnsureBinaries(t.Context())
	if err != nil {
		t.Fatalf("test cluster binaries: %v", err)
	}
	begin := time.Now()
	c, err := Start(t.Context(), Options{BinDir: binDir, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test cluster %s ready at %s in %s", c.name, c.Host(), time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			tails := c.logTails()
			for _, component := range slices.Sorted(maps.Keys(tails)) {
				t.Logf("test cluster %s: last lines of the %s log:\n%s", c.name, component, tails[component])
			}
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

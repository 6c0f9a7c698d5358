package testcluster

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestDetachTakesNoLogWriter: a detached cluster outlives its caller, and a LogWriter's pipe
// would not, so Start refuses the two together before it starts anything or makes a directory.
func TestDetachTakesNoLogWriter(t *testing.T) {
	t.Parallel()
	binDir, err := EnsureBinaries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	_, err = Start(t.Context(), Options{BinDir: binDir, Detach: true, LogWriter: io.Discard, ParentDir: parent})
	if err == nil || !strings.Contains(err.Error(), "Detach") {
		t.Fatalf("Start with Detach and a LogWriter: %v, want a refusal", err)
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) > 0 {
		t.Errorf("Start left %d entries in ParentDir (%v)", len(entries), err)
	}
}

package tenanttest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/stretchr/testify/require"
)

func parallel(t *testing.T, ok bool) {
	if ok {
		t.Parallel()
	}
}

// uniqueID returns a cluster ID no other test uses: a DNS-1123 label of 19
// characters made of a hash of the test's name, for finding its objects, and
// random bytes, so that runs against the same API server do not collide.
func uniqueID(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "kpt-" + hex.EncodeToString(sum[:3]) + "-" + hex.EncodeToString(r[:])
}

// requireSemanticEqual fails t unless want and got are equal as Kubernetes
// compares objects (nil and empty maps and slices alike), printing a diff.
func requireSemanticEqual(t *testing.T, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		require.Equal(t, want, got, msgAndArgs...) // prints the difference
		t.FailNow()
	}
}

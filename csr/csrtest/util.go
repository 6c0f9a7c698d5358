package csrtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
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

// newRequest returns the checked ControlPlane CSR of a consumer no other
// test uses, for a new key of algorithm alg.
func newRequest(t *testing.T, alg keys.Algorithm) *csr.Checked {
	t.Helper()
	id := uniqueID(t)
	key, err := keys.Generate(nil, alg)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(id))
	require.NoError(t, err)
	c, err := csr.Check(req, csr.ControlPlanePolicy(id, key.Public()))
	require.NoError(t, err)
	return c
}

package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// A key's verdict is remembered only when it passed: a key of small order
// or in a non-canonical encoding is refused however often it is checked,
// and never enters the memory, even right after good keys were checked.
func TestCheckedEd25519RemembersOnlyPasses(t *testing.T) {
	t.Parallel()
	v := &ed25519Verdicts{passed: map[[ed25519.PublicKeySize]byte]struct{}{}}
	good, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, v.check(good))
	}
	require.Len(t, v.passed, 1)

	small := smallOrderKeys()
	for _, enc := range small {
		for range 2 {
			require.ErrorIs(t, v.check(ed25519.PublicKey(enc)), ErrWeakKey)
		}
	}
	require.Len(t, v.passed, 1, "no refused key remembered")
	// The package's own memory gives the same verdicts, through Check.
	for _, enc := range small {
		require.ErrorIs(t, Check(ed25519.PublicKey(enc)), ErrWeakKey)
		require.ErrorIs(t, Check(ed25519.PublicKey(enc)), ErrWeakKey)
	}
}

// smallOrderKeys returns the encodings of the neutral point (y = 1) and
// of the point of order 2 (y = -1), and a non-canonical encoding of the
// neutral point (y = p + 1).
func smallOrderKeys() [][]byte {
	neutral := make([]byte, ed25519.PublicKeySize)
	neutral[0] = 1
	order2 := make([]byte, ed25519.PublicKeySize)
	for i := range order2 {
		order2[i] = 0xff
	}
	order2[0], order2[31] = 0xec, 0x7f
	nonCanonical := make([]byte, ed25519.PublicKeySize)
	for i := range nonCanonical {
		nonCanonical[i] = 0xff
	}
	nonCanonical[0], nonCanonical[31] = 0xee, 0x7f
	return [][]byte{neutral, order2, nonCanonical}
}

// The memory stays within maxCheckedEd25519 keys however many pass, and
// a key it forgot is checked again, with the same verdict.
func TestCheckedEd25519IsBounded(t *testing.T) {
	t.Parallel()
	v := &ed25519Verdicts{passed: map[[ed25519.PublicKeySize]byte]struct{}{}}
	var first ed25519.PublicKey
	for i := range maxCheckedEd25519 + 50 {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		if i == 0 {
			first = pub
		}
		require.NoError(t, v.check(pub))
		require.LessOrEqual(t, len(v.passed), maxCheckedEd25519)
	}
	require.NoError(t, v.check(first))
}

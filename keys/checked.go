package keys

import (
	"crypto/ed25519"
	"sync"
)

// maxCheckedEd25519 bounds how many Ed25519 keys checkedEd25519 remembers:
// enough for every handshake in flight on a busy provider, each of which
// checks its consumer's key several times (parsing the Tenant, checking the
// CSR, encoding the key), and a few dozen KiB at most.
const maxCheckedEd25519 = 512

// checkedEd25519 remembers the Ed25519 keys that passed checkEd25519, by
// their exact bytes, so that a key met again is not decompressed again: the
// verdict depends on the bytes alone. Refusals are not remembered. When
// full, it forgets an arbitrary key to make room, which costs that key one
// more check at most. It is safe for concurrent use.
var checkedEd25519 = &ed25519Verdicts{passed: make(map[[ed25519.PublicKeySize]byte]struct{}, maxCheckedEd25519)}

// ed25519Verdicts is a bounded set of Ed25519 keys that passed the check.
type ed25519Verdicts struct {
	mu     sync.Mutex
	passed map[[ed25519.PublicKeySize]byte]struct{}
}

// check returns checkEd25519(k), from memory when k passed it before.
func (v *ed25519Verdicts) check(k ed25519.PublicKey) error {
	key := [ed25519.PublicKeySize]byte(k) // the caller checked the length
	v.mu.Lock()
	_, ok := v.passed[key]
	v.mu.Unlock()
	if ok {
		return nil
	}
	if err := checkEd25519(k); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.passed) >= maxCheckedEd25519 {
		for old := range v.passed {
			delete(v.passed, old)
			break
		}
	}
	v.passed[key] = struct{}{}
	return nil
}

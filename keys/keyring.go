package keys

import (
	"context"
)

// Keyring keeps named private keys, each with its attestation (Stored): the
// TLS keys of a consumer's identities when they are not the cluster key.
// Read and write them through an Attester, which uses only the keys this
// cluster made: a Keyring in a namespace where others may create Secrets
// can hold keys planted there.
//
// Get returns what is stored under name, or an error wrapping ErrNotFound.
// Create stores s under name only when nothing is stored there yet, and
// returns an error wrapping ErrExists otherwise. Attest replaces the
// attestation of the key stored under name with s.Attestation, only when
// that key is s.Key: it returns an error wrapping ErrNotFound when nothing
// is stored there, and one wrapping ErrExists when another key is. Delete
// removes the key and succeeds when there is none. Implementations are
// safe for concurrent use.
type Keyring interface {
	Get(ctx context.Context, name string) (Stored, error)
	Create(ctx context.Context, name string, s Stored) error
	Attest(ctx context.Context, name string, s Stored) error
	Delete(ctx context.Context, name string) error
}

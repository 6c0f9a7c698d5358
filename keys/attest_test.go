package keys_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/keys"
)

func mustKey(t *testing.T, alg keys.Algorithm) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, alg)
	require.NoError(t, err)
	return k
}

func mustAttester(t *testing.T, cluster *keys.PrivateKey, namespace string) *keys.Attester {
	t.Helper()
	a, err := keys.NewAttester(cluster, namespace, nil)
	require.NoError(t, err)
	return a
}

// TestAttesterRefusesWhatItDidNotAttest: an attestation holds only for the
// namespace, name, purpose, remote cluster and key it was made for, and by
// the cluster key that made it; a key with none, planted under the
// expected name, is refused with ErrUnattested.
func TestAttesterRefusesWhatItDidNotAttest(t *testing.T) {
	t.Parallel()
	for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256, keys.RSA2048} {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			cluster := mustKey(t, alg)
			a := mustAttester(t, cluster, "liqo")
			use := keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-provider"}
			k := mustKey(t, keys.Ed25519)
			s, err := a.Attest("controlplane-cl-provider", use, k)
			require.NoError(t, err)

			got, adopted, err := a.Check("controlplane-cl-provider", use, s)
			require.NoError(t, err)
			require.False(t, adopted)
			require.True(t, keys.Equal(k.Public(), got.Public()))

			other := mustKey(t, keys.Ed25519)
			for _, tt := range []struct {
				name    string
				a       *keys.Attester
				keyName string
				use     keys.Use
				s       keys.Stored
			}{
				{"no attestation (planted)", a, "controlplane-cl-provider", use, keys.Stored{Key: k}},
				{"junk attestation", a, "controlplane-cl-provider", use, keys.Stored{Key: k, Attestation: []byte("junk")}},
				{"another key under the attestation", a, "controlplane-cl-provider", use, keys.Stored{Key: other, Attestation: s.Attestation}},
				{"another name", a, "controlplane-cl-provider-next", use, s},
				{"another purpose", a, "controlplane-cl-provider", keys.Use{Purpose: keys.PurposeResourceSlice, Remote: "cl-provider"}, s},
				{"another remote", a, "controlplane-cl-provider", keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-other"}, s},
				{"another namespace", mustAttester(t, cluster, "liqo-other"), "controlplane-cl-provider", use, s},
				{"another cluster key", mustAttester(t, mustKey(t, alg), "liqo"), "controlplane-cl-provider", use, s},
			} {
				t.Run(tt.name, func(t *testing.T) {
					_, _, err := tt.a.Check(tt.keyName, tt.use, tt.s)
					require.ErrorIs(t, err, keys.ErrUnattested)
				})
			}
		})
	}
}

// TestAttesterEnsure: Ensure makes, attests and stores a key once, finds it
// again, and never uses nor replaces a key someone else put under its name.
func TestAttesterEnsure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := mustAttester(t, mustKey(t, keys.Ed25519), "liqo")
	use := keys.Use{Purpose: keys.PurposeResourceSlice, Remote: "cl-provider"}
	ring := &fake.Keyring{}

	k, err := a.Ensure(ctx, ring, "rs-x-slice", use, nil, keys.Ed25519)
	require.NoError(t, err)
	again, err := a.Ensure(ctx, ring, "rs-x-slice", use, nil, keys.Ed25519)
	require.NoError(t, err)
	require.True(t, keys.Equal(k.Public(), again.Public()))
	stored, err := ring.Get(ctx, "rs-x-slice")
	require.NoError(t, err)
	_, _, err = a.Check("rs-x-slice", use, stored)
	require.NoError(t, err, "what Ensure stores carries its attestation")

	planted := mustKey(t, keys.Ed25519)
	require.NoError(t, ring.Create(ctx, "controlplane-cl-provider", keys.Stored{Key: planted}))
	_, err = a.Ensure(ctx, ring, "controlplane-cl-provider", keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-provider"}, nil, keys.Ed25519)
	require.ErrorIs(t, err, keys.ErrUnattested)
	kept, err := ring.Get(ctx, "controlplane-cl-provider")
	require.NoError(t, err)
	require.True(t, keys.Equal(planted.Public(), kept.Key.Public()), "the planted key is left for an administrator to judge")
	require.Empty(t, kept.Attestation)
}

// TestAttesterAdopt: an upgrade adopts a key without attestation only when
// it is the key a live identity's certificate is for; an adopted key reads
// as adopted, and nothing already attested or foreign is touched.
func TestAttesterAdopt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := mustAttester(t, mustKey(t, keys.Ed25519), "liqo")
	use := keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-provider"}
	ring := &fake.Keyring{}
	old := mustKey(t, keys.Ed25519)
	require.NoError(t, ring.Create(ctx, "controlplane-cl-provider", keys.Stored{Key: old}))

	adopted, err := a.Adopt(ctx, ring, "controlplane-cl-provider", use, mustKey(t, keys.Ed25519).Public())
	require.NoError(t, err)
	require.False(t, adopted, "a key no live certificate is for is not adopted")
	_, _, err = a.Get(ctx, ring, "controlplane-cl-provider", use)
	require.ErrorIs(t, err, keys.ErrUnattested)

	adopted, err = a.Adopt(ctx, ring, "controlplane-cl-provider", use, old.Public())
	require.NoError(t, err)
	require.True(t, adopted)
	k, isAdopted, err := a.Get(ctx, ring, "controlplane-cl-provider", use)
	require.NoError(t, err)
	require.True(t, isAdopted)
	require.True(t, keys.Equal(old.Public(), k.Public()))

	again, err := a.Adopt(ctx, ring, "controlplane-cl-provider", use, old.Public())
	require.NoError(t, err)
	require.False(t, again, "adopted once")

	_, err = a.Adopt(ctx, ring, "controlplane-cl-none", use, old.Public())
	require.ErrorIs(t, err, keys.ErrNotFound)
}

// TestStoredRedacts: a Stored prints its key's fingerprint, never the key.
func TestStoredRedacts(t *testing.T) {
	t.Parallel()
	k := mustKey(t, keys.Ed25519)
	der, err := keys.MarshalPrivateKey(k)
	require.NoError(t, err)
	s := keys.Stored{Key: k, Attestation: []byte("a")}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, s)
		require.NotContains(t, out, string(der[40:60]))
		require.Contains(t, out, keys.Fingerprint(k.Public()))
	}
}

// TestAttesterPreviousKey: after a rotation, an attestation of the
// previous cluster key still holds, and reading the key attests it again
// with the cluster key, so that it holds without the previous key; a key
// the previous key did not attest is refused as before, and an Attester
// without the previous key refuses the old attestation.
func TestAttesterPreviousKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, current := mustKey(t, keys.Ed25519), mustKey(t, keys.Ed25519)
	use := keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-provider"}
	ring := &fake.Keyring{}
	k, err := mustAttester(t, old, "liqo").Ensure(ctx, ring, "controlplane-cl-provider", use, nil, keys.Ed25519)
	require.NoError(t, err)
	byOld, err := ring.Get(ctx, "controlplane-cl-provider")
	require.NoError(t, err)

	alone := mustAttester(t, current, "liqo")
	_, _, err = alone.Check("controlplane-cl-provider", use, byOld)
	require.ErrorIs(t, err, keys.ErrUnattested, "without the previous key, its attestation is no one's")

	a := alone.WithPrevious(old.Public())
	got, adopted, err := a.Get(ctx, ring, "controlplane-cl-provider", use)
	require.NoError(t, err)
	require.False(t, adopted)
	require.True(t, keys.Equal(k.Public(), got.Public()))
	again, err := ring.Get(ctx, "controlplane-cl-provider")
	require.NoError(t, err)
	require.NotEqual(t, byOld.Attestation, again.Attestation, "attested again when read")
	_, _, err = alone.Check("controlplane-cl-provider", use, again)
	require.NoError(t, err, "by the cluster key")

	planted := mustKey(t, keys.Ed25519)
	require.NoError(t, ring.Create(ctx, "controlplane-cl-other", keys.Stored{Key: planted, Attestation: byOld.Attestation}))
	_, _, err = a.Get(ctx, ring, "controlplane-cl-other", keys.Use{Purpose: keys.PurposeControlPlane, Remote: "cl-other"})
	require.ErrorIs(t, err, keys.ErrUnattested, "the previous key vouches only for what it attested")
}

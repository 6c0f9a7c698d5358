package consumer

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/resourceslice"
)

// The consumer's keys of its own (Ports.IdentityKeys) are read and
// written only here, through a keys.Attester made with the cluster key: a
// key is used only when the cluster key attests that this consumer made it,
// under that name, for that purpose and provider. Anyone who may create
// Secrets in the key namespace can put a key under an expected name; such a
// key is refused (keys.ErrUnattested), never used and never replaced.

// controlPlaneUse is what the key of the ControlPlane identity for
// providerID, and the key it is renewed to, are for.
func controlPlaneUse(providerID string) keys.Use {
	return keys.Use{Purpose: keys.PurposeControlPlane, Remote: providerID}
}

// sliceUse is what the keys of the ResourceSlice identities for providerID
// are for.
func sliceUse(providerID string) keys.Use {
	return keys.Use{Purpose: keys.PurposeResourceSlice, Remote: providerID}
}

// attester returns the Attester of the consumer's keyring, made with the
// cluster key; with create, the cluster key is made when there is none.
func (c *Consumer) attester(ctx context.Context, create bool) (*keys.Attester, error) {
	k, previous, err := c.clusterKeys(ctx, create)
	if err != nil {
		return nil, err
	}
	a, err := keys.NewAttester(k, c.opts.KeyNamespace, c.opts.Rand)
	if err != nil {
		return nil, err
	}
	return a.WithPrevious(previous), nil
}

// heldKey returns the key kept under name for u when this consumer
// attested it, nil when there is none. A key there that it did not attest
// is an error wrapping keys.ErrUnattested.
func (c *Consumer) heldKey(ctx context.Context, name string, u keys.Use) (*keys.PrivateKey, error) {
	a, err := c.attester(ctx, false)
	if errors.Is(err, keys.ErrNotFound) {
		// No cluster key, so nothing attested: a key there is not ours.
		switch _, gerr := c.ports.IdentityKeys.Get(ctx, name); {
		case errors.Is(gerr, keys.ErrNotFound):
			return nil, nil
		case gerr != nil:
			return nil, gerr
		}
		return nil, fmt.Errorf("%w: key %s, and no cluster key to attest it", keys.ErrUnattested, name)
	}
	if err != nil {
		return nil, err
	}
	k, _, err := a.Get(ctx, c.ports.IdentityKeys, name, u)
	if errors.Is(err, keys.ErrNotFound) {
		return nil, nil
	}
	return k, err
}

// controlPlaneCSRKey returns the key a new CSR of the ControlPlane
// identity for providerID is for: the identity's own key, made when there
// is none; but for a key only adopted on upgrade (AdoptKeys), a fresh key,
// kept as the key a renewal moves to (renewal.NextKeyName), so that no new
// certificate is ever asked for a key this consumer did not make.
func (c *Consumer) controlPlaneCSRKey(ctx context.Context, providerID string) (*keys.PrivateKey, error) {
	name, use := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	a, err := c.attester(ctx, true)
	if err != nil {
		return nil, err
	}
	k, adopted, err := a.Get(ctx, c.ports.IdentityKeys, name, use)
	switch {
	case err == nil && adopted:
		return a.Ensure(ctx, c.ports.IdentityKeys, renewal.NextKeyName(name), use, c.opts.Rand, c.opts.KeyAlgorithm)
	case err == nil:
		return k, nil
	case errors.Is(err, keys.ErrNotFound):
		return a.Ensure(ctx, c.ports.IdentityKeys, name, use, c.opts.Rand, c.opts.KeyAlgorithm)
	}
	return nil, err
}

// adoptedControlPlaneKey reports whether the key of the ControlPlane
// identity for providerID is one this consumer only adopted on upgrade:
// its next renewal moves to a fresh key, Strict or not.
func (c *Consumer) adoptedControlPlaneKey(ctx context.Context, providerID string) (bool, error) {
	if c.ports.IdentityKeys == nil {
		return false, nil
	}
	a, err := c.attester(ctx, false)
	if errors.Is(err, keys.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, adopted, err := a.Get(ctx, c.ports.IdentityKeys, identity.ControlPlaneName(providerID), controlPlaneUse(providerID))
	if errors.Is(err, keys.ErrNotFound) || errors.Is(err, keys.ErrUnattested) {
		return false, nil
	}
	return adopted, err
}

// ensureKey returns the key kept under name for u, making, attesting and
// storing one when there is none. A key there that this consumer did not
// attest is refused (keys.ErrUnattested) and left as it is.
func (c *Consumer) ensureKey(ctx context.Context, name string, u keys.Use) (*keys.PrivateKey, error) {
	a, err := c.attester(ctx, true)
	if err != nil {
		return nil, err
	}
	return a.Ensure(ctx, c.ports.IdentityKeys, name, u, c.opts.Rand, c.opts.KeyAlgorithm)
}

// IdentityKey returns the TLS key of the consumer's ControlPlane identity
// with providerID, a key of the identity's own: the one it keeps, when it
// attested it, or a new one, made, attested and stored in
// Ports.IdentityKeys before IdentityKey returns. A flow that builds
// the identity's CSR itself (the token flow, authserver) calls it; the key
// is the one Apply then finds for the certificate. A key kept under that
// name that this consumer did not attest is refused with an error wrapping
// keys.ErrUnattested, and left as it is; without IdentityKeys the error
// wraps peer.ErrInvalidConfig.
func (c *Consumer) IdentityKey(ctx context.Context, providerID string) (*keys.PrivateKey, error) {
	if c.ports.IdentityKeys == nil {
		return nil, fmt.Errorf("%w: a key of the identity's own needs IdentityKeys", peer.ErrInvalidConfig)
	}
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	return c.controlPlaneCSRKey(ctx, providerID)
}

// moveKey stores k, attested for u, under name: the key a renewal moved
// to, or a key kept under a name of an earlier version. It succeeds when k
// is already stored there.
func (c *Consumer) moveKey(ctx context.Context, name string, u keys.Use, k *keys.PrivateKey, adopted bool) error {
	a, err := c.attester(ctx, false)
	if err != nil {
		return err
	}
	attest := a.Attest
	if adopted {
		attest = a.Adopted
	}
	s, err := attest(name, u, k)
	if err != nil {
		return err
	}
	err = c.ports.IdentityKeys.Create(ctx, name, s)
	if !errors.Is(err, keys.ErrExists) {
		return err
	}
	cur, _, gerr := a.Get(ctx, c.ports.IdentityKeys, name, u)
	if gerr != nil || !keys.Equal(cur.Public(), k.Public()) {
		return fmt.Errorf("storing key %s: another key is stored there: %w", name, err)
	}
	return nil
}

// ownControlPlaneKey reports whether the consumer made a key of its own
// for its ControlPlane identity with providerID: whether it was asked for
// one (TenantOptions.OwnKey, Options.Strict) and keeps it. Only an
// attested key counts: a Secret that merely exists under that name
// switches nothing on.
func (c *Consumer) ownControlPlaneKey(ctx context.Context, providerID string) (bool, error) {
	name, u := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	for _, n := range []string{name, renewal.NextKeyName(name)} {
		k, err := c.heldKey(ctx, n, u)
		switch {
		case errors.Is(err, keys.ErrUnattested):
			continue
		case err != nil:
			return false, err
		case k != nil:
			return true, nil
		}
	}
	return false, nil
}

// AdoptKeys attests, once, the keys of its own that this consumer kept
// before it attested keys, as adopted (keys.Attester.Adopt), and moves the
// keys of its ResourceSlice identities to the names that carry their
// provider (identity.ResourceSliceKeyName). A key is adopted only when it
// backs a live Identity: the certificate held for it is for that key.
// Nothing else is attested: a key that backs no Identity, whoever put it
// there, stays unattested and is never used. A kubepact-controller calls it
// at start; it is idempotent, and a key already attested is left as it is.
//
// An adopted ControlPlane key is replaced at the identity's next renewal,
// Strict or not (RenewRequest), and a new CSR is never made for it
// (controlPlaneCSRKey); an adopted slice key serves its slice until the
// slice is forgotten. See SECURITY.md for what an operator should do about
// keys that may have been planted before the upgrade.
func (c *Consumer) AdoptKeys(ctx context.Context, held []HeldIdentity) error {
	if c.ports.IdentityKeys == nil {
		return nil
	}
	a, err := c.attester(ctx, false)
	if errors.Is(err, keys.ErrNotFound) {
		return nil // no cluster key: no identity of this cluster's to back
	}
	if err != nil {
		return err
	}
	var moved []string
	for _, h := range held {
		if h.Slice == "" {
			name := identity.ControlPlaneName(h.ProviderID)
			if _, err := a.Adopt(ctx, c.ports.IdentityKeys, name, controlPlaneUse(h.ProviderID), h.PublicKey); err != nil && !errors.Is(err, keys.ErrNotFound) {
				return err
			}
			continue
		}
		name, legacy := identity.ResourceSliceKeyName(h.ProviderID, h.Slice), identity.ResourceSliceName(h.Slice)
		switch k, err := c.heldKey(ctx, name, sliceUse(h.ProviderID)); {
		case err != nil && !errors.Is(err, keys.ErrUnattested):
			return err
		case k != nil || err != nil:
			continue // already moved, or a key there that is not ours: not replaced
		}
		s, err := c.ports.IdentityKeys.Get(ctx, legacy)
		switch {
		case errors.Is(err, keys.ErrNotFound):
			continue
		case err != nil:
			return err
		case len(s.Attestation) > 0 || !keys.Equal(s.Key.Public(), h.PublicKey):
			continue
		}
		if err := c.moveKey(ctx, name, sliceUse(h.ProviderID), s.Key, true); err != nil {
			return err
		}
		moved = append(moved, legacy)
	}
	// The old names go once every identity they backed has its key under
	// its new name: one key may have backed slices of two providers.
	for _, legacy := range moved {
		if err := c.ports.IdentityKeys.Delete(ctx, legacy); err != nil {
			return err
		}
	}
	return nil
}

// HeldIdentities returns what AdoptKeys needs of the Identities ids: those
// in the tenant namespace of the provider they name, of type ControlPlane
// or ResourceSlice, with a certificate that parses. Others are left out.
func HeldIdentities(ids []authv1beta1.Identity) []HeldIdentity {
	var held []HeldIdentity
	for _, id := range ids {
		providerID := id.Spec.ClusterID
		if clusterid.Validate(providerID) != nil || id.Namespace != clusterid.TenantNamespace(providerID) {
			continue
		}
		cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
		if err != nil {
			continue
		}
		h := HeldIdentity{ProviderID: providerID, PublicKey: cert.PublicKey}
		switch id.Spec.Type {
		case authv1beta1.ControlPlaneIdentityType:
			if id.Name != identity.ControlPlaneName(providerID) {
				continue
			}
		case authv1beta1.ResourceSliceIdentityType:
			slice, ok := strings.CutPrefix(id.Name, identity.ResourceSliceName(""))
			if !ok || resourceslice.ValidateName(slice) != nil {
				continue
			}
			h.Slice = slice
		default:
			continue
		}
		held = append(held, h)
	}
	return held
}

// HeldIdentity is an Identity a consumer holds, as AdoptKeys needs it: the
// provider, the slice for a ResourceSlice identity ("" for the ControlPlane
// identity), and the public key its certificate is for.
type HeldIdentity struct {
	ProviderID string
	Slice      string
	PublicKey  crypto.PublicKey
}

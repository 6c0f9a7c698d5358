package consumer

import (
	"context"
	"crypto"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/renewal"
)

// The cluster key rotates in two steps (keys.RotatingStore), each an
// administrator's act: PrepareClusterKeyRotation makes the next key, and
// from then on each enrolment request is signed by it and carries the
// hand-over to it from the cluster key, signed by both (enrol.HandOver),
// for a fresh identity key; SwitchClusterKey makes the next key the
// cluster key. A provider that commits the new key and the request lets
// the new key take over the identity the old one holds, and the grant it
// signs for the fresh identity key is applied like any other: the
// identity works throughout.

// rotatingStore returns Ports.Keys as a keys.RotatingStore, an error
// when it cannot rotate.
func (c *Consumer) rotatingStore() (keys.RotatingStore, error) {
	rs, ok := c.ports.Keys.(keys.RotatingStore)
	if !ok {
		return nil, &peer.MissingPortError{Field: "Keys (a keys.RotatingStore)"}
	}
	return rs, nil
}

// PrepareClusterKeyRotation makes the next cluster key when there is none
// and returns its public half: what providers commit beside the cluster
// key until SwitchClusterKey.
func (c *Consumer) PrepareClusterKeyRotation(ctx context.Context) (crypto.PublicKey, error) {
	rs, err := c.rotatingStore()
	if err != nil {
		return nil, err
	}
	if _, err := c.clusterKey(ctx, true); err != nil {
		return nil, err
	}
	next, err := keys.EnsureNext(ctx, rs, c.opts.Rand, c.opts.KeyAlgorithm)
	if err != nil {
		return nil, err
	}
	return next.Public(), nil
}

// NextClusterKey returns the public half of the next cluster key, nil
// when no rotation overlaps (or Ports.Keys cannot rotate).
func (c *Consumer) NextClusterKey(ctx context.Context) (crypto.PublicKey, error) {
	next, err := c.nextClusterKey(ctx)
	if next == nil || err != nil {
		return nil, err
	}
	return next.Public(), nil
}

func (c *Consumer) nextClusterKey(ctx context.Context) (*keys.PrivateKey, error) {
	rs, ok := c.ports.Keys.(keys.RotatingStore)
	if !ok {
		return nil, nil
	}
	return rs.Next(ctx)
}

// SwitchClusterKey makes the next cluster key the cluster key and returns
// its public half; without a next key it returns the cluster key's. The
// key it replaces still vouches for the keys it attested, which are
// attested again with the new key as they are read (keys.Attester).
func (c *Consumer) SwitchClusterKey(ctx context.Context) (crypto.PublicKey, error) {
	rs, err := c.rotatingStore()
	if err != nil {
		return nil, err
	}
	next, err := rs.Next(ctx)
	if err != nil {
		return nil, err
	}
	if next == nil {
		k, err := c.clusterKey(ctx, true)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := rs.Promote(ctx)
	// Read again, with the key it replaced, whatever happened.
	c.key, c.previous = nil, nil
	if err != nil {
		return nil, fmt.Errorf("switching to the next cluster key: %w", err)
	}
	return k.Public(), nil
}

// enrolmentSigner returns the key an enrolment request is signed with:
// the next cluster key while a rotation overlaps, else the cluster key;
// and the cluster key it takes over from, nil when none.
func (c *Consumer) enrolmentSigner(ctx context.Context) (signer *keys.PrivateKey, from *keys.PrivateKey, err error) {
	cluster, err := c.clusterKey(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	next, err := c.nextClusterKey(ctx)
	if err != nil {
		return nil, nil, err
	}
	if next == nil {
		return cluster, nil, nil
	}
	return next, cluster, nil
}

// keptRequest returns held, the request this consumer made for providerID
// before, when it still stands: signed by signer, carrying the hand-over
// from from (or, with from nil, any that verifies), for a ControlPlane key
// the consumer holds. Otherwise nil.
func (c *Consumer) keptRequest(ctx context.Context, providerID string, held *enrol.Request, signer, from *keys.PrivateKey) *enrol.Request {
	prev := enrol.Commitment{ConsumerID: c.id, Keys: []crypto.PublicKey{signer.Public()}, CSR: held.CSR, Signature: held.Signature, HandOver: held.HandOver}
	if from != nil {
		prev.Keys = append(prev.Keys, from.Public())
	}
	v, err := prev.Verify(providerID)
	if err != nil || !keys.Equal(v.PublicKey, signer.Public()) {
		return nil
	}
	if from != nil && (len(v.HandedOver) == 0 || !keys.Equal(v.HandedOver[0], from.Public())) {
		return nil
	}
	name, use := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	own, err := c.controlPlaneCSRKey(ctx, providerID)
	if err == nil && keys.Equal(v.CSR.PublicKey(), own.Public()) {
		return prev.Request(providerID)
	}
	// A request of a rotation is for the key a renewal moves to.
	if next, err := c.heldKey(ctx, renewal.NextKeyName(name), use); err == nil && next != nil && keys.Equal(v.CSR.PublicKey(), next.Public()) {
		return prev.Request(providerID)
	}
	return nil
}

// rotationCSRKey returns the fresh key the request of a rotation is for:
// kept as the key a renewal moves to (renewal.NextKeyName), so that
// applying its grant moves the identity to it as a renewal does.
func (c *Consumer) rotationCSRKey(ctx context.Context, providerID string) (*keys.PrivateKey, error) {
	name, use := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	a, err := c.attester(ctx, true)
	if err != nil {
		return nil, err
	}
	return a.Ensure(ctx, c.ports.IdentityKeys, renewal.NextKeyName(name), use, c.opts.Rand, c.opts.KeyAlgorithm)
}

// ApplyGrant applies id, the ControlPlane Identity a provider granted
// this consumer's enrolment request (enrol.VerifyGrant), as Apply does.
// When its certificate is for the key a rotation's request asked for
// (kept as the key a renewal moves to), that key becomes the identity's
// key and the old one is deleted, as after a renewal.
func (c *Consumer) ApplyGrant(ctx context.Context, providerID string, id *authv1beta1.Identity) (*Authenticated, error) {
	a, err := c.Apply(ctx, providerID, id, nil)
	if err != nil || c.ports.IdentityKeys == nil {
		return a, err
	}
	cert, err := a.Kubeconfig.ClientCertificate()
	if err != nil {
		return nil, err
	}
	if err := c.promoteKey(ctx, providerID, cert.PublicKey); err != nil {
		return nil, fmt.Errorf("moving the identity for %s to the key its grant is for: %w", providerID, err)
	}
	return a, nil
}

// heldIdentityKey returns the key of the ControlPlane identity this
// consumer holds for providerID, nil when it holds none.
func (c *Consumer) heldIdentityKey(ctx context.Context, providerID string) (crypto.PublicKey, error) {
	id, err := c.controlPlaneHeld(ctx, providerID)
	if err != nil || id == nil {
		return nil, err
	}
	cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return nil, nil // no certificate to hand over
	}
	return cert.PublicKey, nil
}

// Current reports whether id, an Identity this consumer holds, is the
// identity r asks for: its certificate is for r's CSR's key. One that is
// not is still held, and works, until r's grant replaces it.
func Current(id *authv1beta1.Identity, r *enrol.Request) bool {
	cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return false
	}
	pub, err := r.PublicKey()
	return err == nil && keys.Equal(cert.PublicKey, pub)
}

package consumer

import (
	"context"
	"crypto"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// EnrolmentRequest returns this consumer's enrolment request to provider
// providerID (enrol.NewRequest): a ControlPlane CSR for the key of that
// identity, which the keyring keeps (Ports.IdentityKeys, required), signed
// by the cluster key, which it makes when there is none, and it ensures the
// provider's tenant namespace, where the grant's Identity goes. It is public:
// the provider's administrators commit it, with the cluster's public key,
// in an AuthorizedConsumer.
//
// held is the request published before, if any. While it is still this
// consumer's (signed by its cluster key for this provider, for the key the
// identity has), EnrolmentRequest returns it as it is, so that what was
// committed stays valid even where the key algorithm signs at random.
//
// While the cluster key rotates (PrepareClusterKeyRotation), the request
// is signed by the next key, for a fresh identity key, and carries the
// hand-over from the cluster key (enrol.NewHandOverRequest); after the
// switch, that request is still this consumer's and is kept.
func (c *Consumer) EnrolmentRequest(ctx context.Context, providerID string, held *peeringv1alpha1.EnrolmentRequest) (*enrol.Request, error) {
	if c.ports.IdentityKeys == nil {
		return nil, &peer.MissingPortError{Field: "IdentityKeys"}
	}
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	// The tenant namespace holds what the grant becomes: the Identity and
	// its kubeconfig Secret.
	if err := c.ports.Namespaces.Ensure(ctx, tenant.Namespace(providerID)); err != nil {
		return nil, stepError(step.ConsumerNamespace, err)
	}
	signer, from, err := c.enrolmentSigner(ctx)
	if err != nil {
		return nil, err
	}
	if held != nil {
		if prev, err := enrol.RequestFromAPI(providerID, c.id, held); err == nil {
			if r := c.keptRequest(ctx, providerID, prev, signer, from); r != nil {
				return r, nil
			}
		}
	}
	var r *enrol.Request
	if from == nil {
		own, err := c.controlPlaneCSRKey(ctx, providerID)
		if err != nil {
			return nil, err
		}
		r, err = enrol.NewRequest(c.opts.Rand, providerID, c.id, signer, own)
		if err != nil {
			return nil, fmt.Errorf("making the enrolment request: %w", err)
		}
		return r, nil
	}
	fresh, err := c.rotationCSRKey(ctx, providerID)
	if err != nil {
		return nil, err
	}
	holding, err := c.heldIdentityKey(ctx, providerID)
	if err != nil {
		return nil, err
	}
	if r, err = enrol.NewHandOverRequest(c.opts.Rand, providerID, c.id, from, signer, fresh, holding); err != nil {
		return nil, fmt.Errorf("making the enrolment request: %w", err)
	}
	return r, nil
}

// PublicKey returns the cluster's public key, making the cluster key when
// there is none: what an AuthorizedConsumer commits.
func (c *Consumer) PublicKey(ctx context.Context) (crypto.PublicKey, error) {
	k, err := c.clusterKey(ctx, true)
	if err != nil {
		return nil, err
	}
	return k.Public(), nil
}

// HeldIdentity returns the ControlPlane Identity this consumer holds for
// providerID, nil when it holds none.
func (c *Consumer) HeldIdentity(ctx context.Context, providerID string) (*authv1beta1.Identity, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	return c.controlPlaneHeld(ctx, providerID)
}

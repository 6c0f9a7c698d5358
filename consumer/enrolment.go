package consumer

import (
	"context"
	"crypto"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
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
	cluster, err := c.clusterKey(ctx, true)
	if err != nil {
		return nil, err
	}
	own, err := c.controlPlaneCSRKey(ctx, providerID)
	if err != nil {
		return nil, err
	}
	if held != nil {
		prev := enrol.Commitment{ConsumerID: c.id, Keys: []crypto.PublicKey{cluster.Public()}, CSR: []byte(held.CSR), Signature: held.Signature}
		if v, err := prev.Verify(providerID); err == nil && keys.Equal(v.CSR.PublicKey(), own.Public()) {
			return prev.Request(providerID), nil
		}
	}
	r, err := enrol.NewRequest(c.opts.Rand, providerID, c.id, cluster, own)
	if err != nil {
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

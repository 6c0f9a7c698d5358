package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

var (
	// ErrNoCommitment reports a consumer ID that no commitment names
	// (Core.Commitments): Enrol has nothing to record.
	ErrNoCommitment = errors.New("no AuthorizedConsumer commits this consumer")
	// ErrEnrolling reports an enrolment recorded and not yet accepted: the
	// Tenant of the committed request is stored, and Accept, run on it by
	// whoever accepts the provider's Tenants (a controller's Tenant
	// reconciler), signs, binds and fills its status. Enrol returns the
	// Identity once it has.
	ErrEnrolling = errors.New("the committed request is recorded and not yet accepted")
)

// Enrol records the Tenant of consumerID's committed request
// (enrol.Commitment.Tenant) and judges it as Accept does, with the same
// checks, without accepting it: Accept, on the stored Tenant, is what
// signs, binds and writes its status, as for every other Tenant. It
// returns the Identity Accept would return once Accept has accepted the
// Tenant (its status hands out a fresh certificate for the committed
// CSR), and until then ErrEnrolling. It signs and binds nothing, and redeems no nonce: the
// committed request carries none.
//
// Its refusals are Accept's (errors.Is, errors.As): a commitment that
// does not parse or verify (enrol.ErrMalformed, enrol.ErrBadRequest), a
// consumer drained or revoked, another key holding the ID, a privileged
// identity, a peer role missing. ErrNoCommitment reports no commitment.
func (p *Provider) Enrol(ctx context.Context, consumerID string) (*authv1beta1.Identity, error) {
	c, err := commitment(ctx, p.ports.Commitments, consumerID)
	switch {
	case err != nil:
		return nil, stepError(step.TenantApplied, err)
	case c == nil:
		return nil, stepError(step.TenantApplied, fmt.Errorf("%w: %s", ErrNoCommitment, consumerID))
	}
	v, err := c.Verify(p.id)
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	t, err := c.Tenant(v)
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	in, err := p.parse(t)
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	g := p.gather(ctx, in, nil, nil)
	defer g.close()
	f, err := g.beforeRedeem()
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if _, err := p.checks.Run(ctx, accept.StageRedeem, f); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if !p.enrolled(f) {
		// The commitment changed between the two reads.
		return nil, stepError(step.TenantApplied, fmt.Errorf("%w: the AuthorizedConsumer changed while it was read", enrol.ErrBadRequest))
	}
	if err := g.beforeIssue(ctx, f); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if check, err := p.checks.Run(ctx, accept.StageIssue, f); err != nil {
		if check.Name == accept.Signature || check.Name == accept.SingleHolder {
			return nil, stepError(step.TenantApplied, err)
		}
		return nil, stepError(step.CertificateIssued, err)
	}
	// The bindings are not read: Accept applies them each time, and the
	// certificate is handed out by the status only once they are.
	w := p.want(f, false)
	plan := accept.Decide(f, w)
	if !plan.Sign && !plan.Record && !plan.WriteStatus {
		id, err := identity.Build(p.id, *f.Stored.Status.AuthParams, &identity.BuildOptions{TenantNamespace: f.Stored.Status.TenantNamespace})
		if err != nil {
			return nil, stepError(step.IdentityGenerated, err)
		}
		return id, nil
	}
	if plan.Record {
		// The tenant namespace comes with the first record: no nonce
		// brought it.
		if err := p.ports.Namespaces.Ensure(ctx, tenant.Namespace(f.ConsumerID)); err != nil {
			return nil, stepError(step.ProviderNamespace, err)
		}
		if _, err := p.ports.Tenants.Apply(ctx, w.Record); err != nil {
			return nil, stepError(step.TenantApplied, err)
		}
	}
	return nil, ErrEnrolling
}

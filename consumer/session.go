package consumer

import (
	"cmp"
	"context"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/async"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/step"
)

// A Session is one handshake on the consumer's side, with one
// provider, as kubepact.Authenticate runs it in-process: the tenant namespace and
// the cluster key are ensured while the provider issues its nonce, and the
// signed-nonce Secret is written, and the Identity held read, while the
// provider accepts the Tenant. Close it when done: no request outlives
// it. A session is for one goroutine.
type Session struct {
	c                 *Consumer
	providerID        string
	namespaced, keyed func() error
	recorded          func() error
	held              func() (*authv1beta1.Identity, error)
}

// Session starts a handshake with providerID: its tenant namespace and
// the cluster key are ensured at once.
func (c *Consumer) Session(ctx context.Context, providerID string) *Session {
	return &Session{c: c, providerID: providerID, namespaced: c.ensureNamespace(ctx, providerID), keyed: c.loadKey(ctx)}
}

// Ready waits until the tenant namespace and the cluster key are there.
func (s *Session) Ready() error {
	return cmp.Or(s.namespaced(), s.keyed())
}

// Tenant builds the Tenant that answers n (Consumer.Tenant), then starts
// writing the signed-nonce Secret (step.NonceSigned is reported once the
// nonce is signed; a failure to write it is returned by Apply) and
// reading the Identity held.
func (s *Session) Tenant(ctx context.Context, n nonce.Nonce, opts *TenantOptions) (*authv1beta1.Tenant, error) {
	if err := s.Ready(); err != nil {
		return nil, err
	}
	t, err := s.c.buildTenant(ctx, s.providerID, n, opts)
	if err != nil {
		return nil, err
	}
	s.recorded = async.StartErr(func() error { return s.c.recordSignedNonce(ctx, s.providerID, n, t) })
	s.held = s.c.readHeld(ctx, s.providerID)
	s.c.step(ctx, step.Done{Name: step.NonceSigned})
	s.c.step(ctx, step.Done{Name: step.TenantGenerated})
	return t, nil
}

// Apply applies id, the provider's answer to the session's Tenant
// (Consumer.Apply), once the signed-nonce Secret is written.
func (s *Session) Apply(ctx context.Context, id *authv1beta1.Identity, opts *ApplyOptions) (*Authenticated, error) {
	if s.recorded == nil {
		return nil, stepError(step.IdentityApplied, fmt.Errorf("%w: the session built no Tenant", peer.ErrInvalidConfig))
	}
	if err := s.recorded(); err != nil {
		return nil, err
	}
	return s.c.apply(ctx, s.providerID, id, opts, s.held)
}

// Close waits for the session's requests.
func (s *Session) Close() {
	_ = s.namespaced()
	_ = s.keyed()
	if s.recorded != nil {
		_ = s.recorded()
		_, _ = s.held()
	}
}

package provider

import (
	"context"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/step"
)

// A Session is one handshake on the provider's side, for one
// consumer, as kubepact.Authenticate runs it in-process: the reads Accept starts
// with (the stored Tenant, the revocation record, the certificate cache,
// the peer roles) go while the nonce is issued, and the Tenant is
// verified against the nonce the session issued before it is redeemed.
// Close it when done: no read outlives it. A session is for one
// goroutine.
type Session struct {
	p          *Provider
	consumerID string
	reads      *acceptReads
	issued     *nonce.Nonce
}

// Session starts a handshake with consumerID: the reads of its Accept
// start at once.
func (p *Provider) Session(ctx context.Context, consumerID string) *Session {
	s := &Session{p: p, consumerID: consumerID}
	if clusterid.Validate(consumerID) == nil {
		s.reads = p.startReads(ctx, consumerID, false)
	}
	return s
}

// IssueNonce is Provider.IssueNonce for the session's consumer; Accept
// verifies against the nonce it returns.
func (s *Session) IssueNonce(ctx context.Context) (nonce.Nonce, error) {
	n, err := s.p.IssueNonce(ctx, s.consumerID)
	if err != nil {
		return n, err
	}
	if n.IsZero() {
		return n, stepError(step.NonceRetrieved, fmt.Errorf("%w: zero nonce", nonce.ErrMalformed))
	}
	s.issued = &n
	return n, nil
}

// Accept is Provider.Accept, with the session's reads and nonce. As
// kubepact.Authenticate runs in-process, with no controller to remove it, the
// Tenant is recorded without tenant.Finalizer (see
// Options.NoFinalizer).
func (s *Session) Accept(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Identity, error) {
	if s.issued == nil {
		return nil, stepError(step.NonceRetrieved, fmt.Errorf("%w: the session issued no nonce", peer.ErrInvalidConfig))
	}
	return s.p.accept(ctx, t, s.reads, s.issued)
}

// Close waits for the session's reads.
func (s *Session) Close() {
	if s.reads != nil {
		s.reads.wait()
	}
}

package csr_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

// pendingSigner answers csr.ErrPending until it is told the request was
// signed, then signs with its Signer: a Signer that does not wait.
type pendingSigner struct {
	csr.Signer
	mu     sync.Mutex
	signed bool
}

func (s *pendingSigner) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	s.mu.Lock()
	signed := s.signed
	s.mu.Unlock()
	if !signed {
		return nil, fmt.Errorf("%w: CertificateSigningRequest liqo-identity-x", csr.ErrPending)
	}
	return s.Signer.Sign(ctx, r)
}

// Issue passes ErrPending up, caches nothing, and a later Issue with the
// same arguments resumes.
func TestIssuePending(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	s := &pendingSigner{Signer: ca.ca}
	c := &memCache{}
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: time.Hour}

	for range 2 {
		cert, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
		require.ErrorIs(t, err, csr.ErrPending)
		require.NotErrorIs(t, err, csr.ErrFailed)
		require.Nil(t, cert)
		require.Zero(t, c.puts, "nothing cached while pending")
	}

	s.mu.Lock()
	s.signed = true
	s.mu.Unlock()
	cert, err := csr.Issue(t.Context(), s, c, cpKey, req, ca.clock.Now())
	require.NoError(t, err)
	require.Equal(t, cert, c.entries[cpKey].Certificate)
}

package csrtest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

// ApproverHarness tells RunApprover how to use the Approver under test.
type ApproverHarness struct {
	// New returns the Approver under test, one that approves the requests
	// the suite makes. Required.
	New func(t *testing.T) csr.Approver
	// Submit, when set, makes the request c known under a name the
	// Approver can act on, and returns that name: for an Approver over the
	// Kubernetes CSR API, it creates the CertificateSigningRequest. When
	// nil, the suite names requests itself.
	Submit func(t *testing.T, c *csr.Checked) string
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentApprovals is how many requests the suite approves at once.
const ConcurrentApprovals = 5

// RunApprover checks that the Approver made by h.New meets the csr.Approver
// contract for an Approver that approves.
func RunApprover(t *testing.T, h ApproverHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("csrtest: ApproverHarness.New is required")
	}
	t.Run("ApproveReturnsNil", func(t *testing.T) {
		parallel(t, h.Parallel)
		a := h.New(t)
		name, c := h.submit(t)
		require.NoError(t, a.Approve(t.Context(), name, c))
	})
	t.Run("ConcurrentApprove", func(t *testing.T) {
		parallel(t, h.Parallel)
		a := h.New(t)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  [ConcurrentApprovals]error
		)
		for i := range errs {
			name, c := h.submit(t)
			wg.Go(func() {
				<-start
				errs[i] = a.Approve(t.Context(), name, c)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "Approve %d", i)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		parallel(t, h.Parallel)
		a := h.New(t)
		name, c := h.submit(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, a.Approve(ctx, name, c), context.Canceled)
	})
}

// submit returns a new checked request and the name the Approver knows it by.
func (h ApproverHarness) submit(t *testing.T) (string, *csr.Checked) {
	t.Helper()
	c := newRequest(t, keys.Ed25519)
	if h.Submit != nil {
		return h.Submit(t, c), c
	}
	return "csrtest-" + uniqueID(t), c
}

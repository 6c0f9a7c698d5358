package contract_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubepact/kubepact/controllers/contract"
)

func TestFinalAndBlocking(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason          string
		final, blocking bool
	}{
		{contract.ReasonNonceExpired, true, false},
		{contract.ReasonInvalidNonceSecret, true, false},
		{contract.ReasonKeyUnattested, true, false},
		{contract.ReasonIdentityRejected, true, false},
		{contract.ReasonAPIServerURLUnknown, false, true},
		{contract.ReasonPeerRoleMissing, false, true},
		{contract.ReasonPublishRefused, false, true},
		{contract.ReasonSigningNonceFailed, false, false},
		{contract.ReasonTenantAccepted, false, false},
		{contract.ReasonCertificatePending, false, false},
		{contract.ReasonAcceptFailed, false, false},
		{contract.ReasonSigningFailed, false, false},
		{contract.ReasonTransitionRefused, false, false},
		{contract.ReasonSliceDenied, false, false},
		{"InvalidCSR", false, false}, // Liqo's, not kubepact's
		{"", false, false},
	} {
		assert.Equal(t, tc.final, contract.Final(tc.reason), "Final(%q)", tc.reason)
		assert.Equal(t, tc.blocking, contract.Blocking(tc.reason), "Blocking(%q)", tc.reason)
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubepact/kubepact/step"
	"github.com/stretchr/testify/require"
)

func TestRunPrintsEveryStep(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	printed := out.String()
	for _, name := range []step.Name{
		step.ProviderNamespace, step.NonceGenerated, step.ConsumerNamespace,
		step.NonceRetrieved, step.NonceSigned, step.TenantGenerated,
		step.TenantApplied, step.CertificateIssued, step.RBACBound,
		step.TenantStatus, step.IdentityGenerated, step.IdentityApplied,
		step.KubeconfigWritten, step.IdentityStatus,
	} {
		require.Contains(t, printed, string(name))
	}
	require.Contains(t, printed, "server:    https://cl-provider.invalid")
	require.Contains(t, printed, "user:      cl-consumer")
	require.Contains(t, printed, "namespace: liqo-tenant-cl-consumer")
	require.False(t, strings.Contains(printed, "PRIVATE KEY"), "the example never prints the key")
}

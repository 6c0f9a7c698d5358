package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
)

func TestRunPrintsEveryStep(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	printed := out.String()
	for _, step := range []kubepact.StepName{
		kubepact.StepProviderNamespace, kubepact.StepNonceGenerated, kubepact.StepConsumerNamespace,
		kubepact.StepNonceRetrieved, kubepact.StepNonceSigned, kubepact.StepTenantGenerated,
		kubepact.StepTenantApplied, kubepact.StepCertificateIssued, kubepact.StepRBACBound,
		kubepact.StepTenantStatus, kubepact.StepIdentityGenerated, kubepact.StepIdentityApplied,
		kubepact.StepKubeconfigWritten, kubepact.StepIdentityStatus,
	} {
		require.Contains(t, printed, string(step))
	}
	require.Contains(t, printed, "server:    https://cl-provider.invalid")
	require.Contains(t, printed, "user:      cl-consumer")
	require.Contains(t, printed, "namespace: liqo-tenant-cl-consumer")
	require.False(t, strings.Contains(printed, "PRIVATE KEY"), "the example never prints the key")
}

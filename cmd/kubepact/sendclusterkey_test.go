package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/keys"
)

// TestSendClusterKeyFlag: --send-cluster-key contradicts --strict, and has
// no meaning with --local (the in-process provider is kubepact's); both
// are refused as usage errors before anything is read or written.
func TestSendClusterKeyFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"authenticate", "--send-cluster-key", "--strict", "--kubeconfig", "/nonexistent", "--remote-kubeconfig", "/nonexistent"},
		{"authenticate", "--send-cluster-key", "--local", "--kubeconfig", "/nonexistent", "--remote-kubeconfig", "/nonexistent"},
	} {
		r, err := cliErr(t, nil, args...)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "%v", args)
		assert.Equal(t, exitUsage, r.code)
	}
}

// TestAdviceOnClusterKey: Liqo's refusal of a key of the identity's own
// names the flag that sends the cluster key, and says where that key then
// lands; a key someone planted says to delete it.
func TestAdviceOnClusterKey(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("%w: %w", errProviderNeedsClusterKey, &RefusedError{Reason: liqoInvalidCSR})
	assert.Contains(t, advice(refused, "cl-consumer"), "--send-cluster-key")
	assert.Contains(t, advice(refused, "cl-consumer"), "kubeconfig Secret")
	assert.Contains(t, advice(fmt.Errorf("building the Tenant: %w", keys.ErrUnattested), "cl-consumer"), "delete it")
	assert.Contains(t, advice(&RefusedError{Reason: "KeyUnattested"}, "cl-consumer"), "delete it")
}

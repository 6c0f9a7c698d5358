package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestNoControllerNamesItsDeployment: where kubepact-controller's
// Deployment exists but none of its pods is ready and no Lease is held,
// authenticate writes nothing and names the Deployment, its ready pods and
// how to see why; once a controller holds its Lease, however many pods are
// ready, authenticate does not say so but goes on and waits for it.
func TestNoControllerNamesItsDeployment(t *testing.T) {
	t.Parallel()
	envs := isolatedEnvs(t, "noctl-provider", "noctl-consumer")
	prov, cons := envs[0], envs[1]
	ctx := testContext(t)
	const ns = "kubepact-system"
	const providerID, consumerID = "cl-noctl-provider", "cl-noctl-consumer"
	args := []string{"authenticate", "--kubeconfig", cons.kubeconfig, "--remote-kubeconfig", prov.kubeconfig,
		"--cluster-id", consumerID, "--remote-cluster-id", providerID, "--timeout", "8s"}

	createControllerDeployment(t, ctx, prov, ns, 2, "v0.2.0-test")
	r, err := cliErr(t, nil, args...)
	var none *NoControllerError
	require.ErrorAs(t, err, &none)
	require.ErrorIs(t, err, errNoController)
	assert.Equal(t, types.NamespacedName{Namespace: ns, Name: "kubepact-controller"}, none.Deployment)
	assert.Equal(t, [2]int32{0, 2}, [2]int32{none.Ready, none.Replicas})
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "kubepact: provider cluster: no controller answers the handshake: deployment kubepact-system/kubepact-controller has 0/2 pods ready: "+
		"see why with kubectl describe deployment kubepact-controller -n kubepact-system on the provider cluster, or pass --local")
	requireNamespaceAbsent(t, ctx, prov, consumerID)
	requireNamespaceAbsent(t, ctx, cons, providerID)

	// A controller holds its Lease on each cluster (renewed now), though no
	// pod of the Deployment is ready: the CLI goes on, and waits for it
	// until --timeout.
	for _, e := range []*testEnv{prov, cons} {
		putLease(t, ctx, e, ns, "pod-a", time.Now(), 3600, nil)
	}
	start := time.Now()
	r, err = cliErr(t, nil, args...)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errNoController)
	require.ErrorIs(t, err, context.DeadlineExceeded, r.stderr)
	assert.GreaterOrEqual(t, time.Since(start), 7*time.Second, "it waited")
	assert.Contains(t, r.stderr, " INFO  Provider controller: Lease kubepact-system/"+kubepactLease+"\n")
	assert.NotContains(t, r.stderr, "pods ready")
}

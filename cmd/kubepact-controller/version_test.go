package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	buildversion "github.com/kubepact/kubepact/internal/version"
)

// TestLeaseCarriesLeadersVersion: the replica that holds the leader
// election Lease writes its version and its identity into it; when it
// stops, the replica that takes the Lease over writes its own identity.
// The kubepact CLI's version command reads them.
func TestLeaseCarriesLeadersVersion(t *testing.T) {
	ctx := context.Background()
	args := []string{"--cluster-id=cl-ctl-version", "--roles=consumer", "--leader-election-namespace=kubepact-system",
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s",
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}
	read := func() *coordinationv1.Lease {
		t.Helper()
		l, err := consumerEnv.admin.CoordinationV1().Leases("kubepact-system").Get(ctx, LeaderElectionID, metav1.GetOptions{})
		require.NoError(t, err)
		return l
	}

	first := start(t, consumerEnv, args...)
	eventually(t, "the first replica leads", first.elected)
	l := read()
	require.NotNil(t, l.Spec.HolderIdentity)
	firstHolder := *l.Spec.HolderIdentity
	assert.Equal(t, Version(), l.Annotations[buildversion.LeaseAnnotation])
	assert.Equal(t, firstHolder, l.Annotations[buildversion.LeaseHolderAnnotation])

	second := start(t, consumerEnv, args...)
	first.stop()
	eventually(t, "the second replica leads", second.elected)
	eventually(t, "the Lease names its new holder in both places", func() bool {
		l = read()
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != firstHolder &&
			l.Annotations[buildversion.LeaseHolderAnnotation] == *l.Spec.HolderIdentity
	})
	assert.Equal(t, Version(), l.Annotations[buildversion.LeaseAnnotation])
}

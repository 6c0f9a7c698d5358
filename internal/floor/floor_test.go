package floor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/internal/floor"
	"github.com/kubepact/kubepact/internal/testcluster"
)

// Measure makes its writes and CSR rounds on a real API server, and the
// handshake floor is six of the one and one of the other.
func TestMeasure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clusters, err := testcluster.StartAll(ctx, "floor")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	cs, err := kubernetes.NewForConfig(clusters[0].AdminConfig())
	require.NoError(t, err)

	f, err := floor.Measure(ctx, cs, "default", 3)
	require.NoError(t, err)
	require.Positive(t, f.Write)
	require.Positive(t, f.CSRRound)
	require.Equal(t, floor.Writes*f.Write+floor.CSRRounds*f.CSRRound, f.Handshake)

	_, err = floor.Measure(ctx, cs, "default", 0)
	require.ErrorIs(t, err, floor.ErrNoRounds)
	_, err = floor.Measure(ctx, cs, "no-such-namespace", 1)
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

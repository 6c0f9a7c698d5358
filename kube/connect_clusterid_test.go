package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/wire"
)

// TestConnectClusterID checks the IDs Cluster.Provider and Cluster.Consumer
// take on the real provider cluster, each case with a Liqo namespace of
// its own: the recorded one when none is given, a given one only when it
// agrees with the record, none where none is recorded unless Install
// records one, and a given one unchecked for a client that may not read
// the record.
func TestConnectClusterID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	connect := func(t *testing.T, opts *wire.ConnectOptions) *wire.Cluster {
		t.Helper()
		c, err := wire.Connect(providerEnv.cluster.AdminConfig(), opts)
		require.NoError(t, err)
		return c
	}
	recorded := func(t *testing.T, namespace string) string {
		t.Helper()
		id, err := kube.RecordedClusterID(ctx, providerEnv.client, namespace)
		require.NoError(t, err)
		return id
	}

	t.Run("none recorded", func(t *testing.T) {
		t.Parallel()
		c := connect(t, &wire.ConnectOptions{KeyNamespace: "liqo-connect-no-id"})
		_, err := c.Provider("", nil)
		require.ErrorIs(t, err, wire.ErrNoClusterID)
		_, err = c.Consumer("", nil)
		require.ErrorIs(t, err, wire.ErrNoClusterID)
		_, err = c.Consumer("Not_an_ID", nil)
		require.ErrorIs(t, err, clusterid.ErrInvalid)
		p, err := c.Provider("cl-given", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-given", p.ClusterID())
		require.Empty(t, recorded(t, "liqo-connect-no-id"), "recorded only with Install")
	})

	t.Run("recorded", func(t *testing.T) {
		t.Parallel()
		ns := "liqo-connect-recorded"
		_, _, err := kube.EnsureClusterID(ctx, providerEnv.client, "cl-recorded", &kube.ClusterIDOptions{Namespace: ns})
		require.NoError(t, err)
		c := connect(t, &wire.ConnectOptions{KeyNamespace: ns})
		p, err := c.Provider("", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-recorded", p.ClusterID())
		cons, err := c.Consumer("", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-recorded", cons.ClusterID())
		p, err = c.Provider("cl-recorded", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-recorded", p.ClusterID())

		for role, call := range map[string]func() error{
			"provider": func() error { _, err := c.Provider("cl-consumer", nil); return err },
			"consumer": func() error { _, err := c.Consumer("cl-consumer", nil); return err },
		} {
			err := call()
			require.ErrorIs(t, err, clusterid.ErrConflict, role)
			var mismatch *wire.ClusterIDMismatchError
			require.ErrorAs(t, err, &mismatch, role)
			require.Equal(t, wire.ClusterIDMismatchError{Role: role, Given: "cl-consumer", Recorded: "cl-recorded",
				Where: "the ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in " + ns}, *mismatch)
		}
	})

	t.Run("Install records one", func(t *testing.T) {
		t.Parallel()
		ns := "liqo-connect-install"
		c := connect(t, &wire.ConnectOptions{KeyNamespace: ns, Install: true})
		cons, err := c.Consumer("", nil)
		require.NoError(t, err)
		require.NoError(t, clusterid.Validate(cons.ClusterID()))
		require.Equal(t, cons.ClusterID(), recorded(t, ns))
		p, err := c.Provider("", nil)
		require.NoError(t, err)
		require.Equal(t, cons.ClusterID(), p.ClusterID(), "one cluster, one ID")
		id, err := c.ClusterID()
		require.NoError(t, err)
		require.Equal(t, cons.ClusterID(), id)

		ns = "liqo-connect-install-given"
		c = connect(t, &wire.ConnectOptions{KeyNamespace: ns, Install: true})
		p, err = c.Provider("cl-wanted", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-wanted", p.ClusterID())
		require.Equal(t, "cl-wanted", recorded(t, ns))
		_, err = c.Consumer("cl-other", nil)
		var mismatch *wire.ClusterIDMismatchError
		require.ErrorAs(t, err, &mismatch)
		require.Equal(t, "cl-wanted", mismatch.Recorded)
	})

	t.Run("record unreadable", func(t *testing.T) {
		t.Parallel()
		// A user with no rights but discovery's.
		cfg := providerEnv.cluster.AdminConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "kubepact-nobody", Groups: []string{"system:authenticated"}}
		c, err := wire.Connect(cfg, nil)
		require.NoError(t, err)
		_, err = c.Consumer("", nil)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		cons, err := c.Consumer("cl-unchecked", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-unchecked", cons.ClusterID())
	})
}

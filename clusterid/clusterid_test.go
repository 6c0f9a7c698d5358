package clusterid_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/clusterid"
)

func TestMaxLengthFitsTenantNamespace(t *testing.T) {
	t.Parallel()
	require.Equal(t, 51, clusterid.MaxLength)
	require.Len(t, clusterid.TenantNamespace(strings.Repeat("a", clusterid.MaxLength)), 63)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{name: "single character", id: "a", ok: true},
		{name: "single digit", id: "0", ok: true},
		{name: "letters digits and dashes", id: "cl-01-provider", ok: true},
		{name: "uuid", id: "b6f5b6a4-8d2c-4a3e-9b61-2f1d3c4e5f60", ok: true},
		{name: "51 characters", id: strings.Repeat("a", 51), ok: true},
		{name: "51 characters with inner dashes", id: "a" + strings.Repeat("-", 49) + "z", ok: true},
		{name: "52 characters", id: strings.Repeat("a", 52)},
		{name: "63 characters", id: strings.Repeat("a", 63)},
		{name: "64 characters", id: strings.Repeat("a", 64)},
		{name: "empty", id: ""},
		{name: "uppercase", id: "Cluster-A"},
		{name: "underscore", id: "cluster_a"},
		{name: "dot", id: "cluster.a"},
		{name: "leading dash", id: "-cluster"},
		{name: "trailing dash", id: "cluster-"},
		{name: "only a dash", id: "-"},
		{name: "space", id: "cluster a"},
		{name: "slash", id: "cluster/a"},
		{name: "non-ASCII", id: "clüster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := clusterid.Validate(tt.id)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, clusterid.ErrInvalid)
		})
	}
}

func TestTenantNamespace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want string
	}{
		{id: "cl-consumer", want: "liqo-tenant-cl-consumer"},
		{id: "a", want: "liqo-tenant-a"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, clusterid.TenantNamespace(tt.id))
		})
	}
}

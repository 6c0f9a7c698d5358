package tenant_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/tenant"
)

func TestCheckNamespace(t *testing.T) {
	t.Parallel()
	const id = "cl-provider"
	labelled := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + id, Labels: labels}}
	}
	tests := []struct {
		name      string
		ns        *corev1.Namespace
		id        string
		wantLabel string // the label reported; "" for the name
		wantName  bool   // a *NamespaceError about the name
	}{
		{name: "as kubepact makes it", ns: tenant.Namespace(id), id: id},
		{name: "as liqoctl makes it", id: id, ns: labelled(map[string]string{
			"liqo.io/remote-cluster-id": id, "liqo.io/tenant-namespace": "true",
			"pod-security.kubernetes.io/enforce": "privileged",
		})},
		{name: "no labels", ns: labelled(nil), id: id, wantLabel: "liqo.io/tenant-namespace"},
		{name: "no tenant-namespace label", ns: labelled(map[string]string{"liqo.io/remote-cluster-id": id}), id: id, wantLabel: "liqo.io/tenant-namespace"},
		{name: "tenant-namespace label not true", ns: labelled(map[string]string{"liqo.io/remote-cluster-id": id, "liqo.io/tenant-namespace": "yes"}), id: id, wantLabel: "liqo.io/tenant-namespace"},
		{name: "no cluster-ID label", ns: labelled(map[string]string{"liqo.io/tenant-namespace": "true"}), id: id, wantLabel: "liqo.io/remote-cluster-id"},
		{name: "labelled for another cluster", ns: labelled(map[string]string{"liqo.io/tenant-namespace": "true", "liqo.io/remote-cluster-id": "cl-other"}), id: id, wantLabel: "liqo.io/remote-cluster-id"},
		{name: "the tenant namespace of another cluster", ns: tenant.Namespace("cl-other"), id: id, wantName: true},
		{name: "labelled, another name", id: id, wantName: true, ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default",
			Labels: map[string]string{"liqo.io/tenant-namespace": "true", "liqo.io/remote-cluster-id": id}}}},
		{name: "no namespace", ns: nil, id: id, wantName: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tenant.CheckNamespace(tt.ns, tt.id)
			if tt.wantLabel == "" && !tt.wantName {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tenant.ErrNotTenantNamespace)
			var nerr *tenant.NamespaceError
			require.ErrorAs(t, err, &nerr)
			require.Equal(t, tt.id, nerr.RemoteID)
			require.Equal(t, tt.wantLabel, nerr.Label)
		})
	}
}

func TestCheckNamespaceInvalidID(t *testing.T) {
	t.Parallel()
	err := tenant.CheckNamespace(tenant.Namespace("cl-provider"), "-bad-")
	require.ErrorIs(t, err, clusterid.ErrInvalid)
	require.NotErrorIs(t, err, tenant.ErrNotTenantNamespace)
}

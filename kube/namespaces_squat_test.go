package kube_test

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
)

// squatter makes namespaces as someone else than kubepact would, and reads
// them back.
type squatter struct {
	name string
	// ns is the Namespaces under test.
	ns tenant.Namespaces
	// create makes a namespace as its creator wrote it.
	create func(t *testing.T, ns *corev1.Namespace)
	// get returns the namespace and its resourceVersion.
	get func(t *testing.T, name string) (map[string]string, string)
}

func squatters() []squatter {
	real := func(name string, ns *kube.Namespaces) squatter {
		return squatter{
			name: name,
			ns:   ns,
			create: func(t *testing.T, ns *corev1.Namespace) {
				_, err := providerEnv.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			get: func(t *testing.T, name string) (map[string]string, string) {
				ns, err := providerEnv.client.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
				require.NoError(t, err)
				return ns.Labels, ns.ResourceVersion
			},
		}
	}
	mem := &fake.Namespaces{}
	return []squatter{
		real("kube", kube.NewNamespaces(providerEnv.client)),
		real("kube read first", kube.NewNamespaces(providerEnv.client).WithReadFirst()),
		real("kube with a reader", kube.NewNamespaces(providerEnv.client).WithReader(providerEnv.typed).WithReadFirst()),
		real("kube with create labels", kube.NewNamespaces(providerEnv.client).WithCreateLabels(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})),
		{
			name: "fake",
			ns:   mem,
			// The fake stores what it is first given.
			create: func(t *testing.T, ns *corev1.Namespace) { require.NoError(t, mem.Ensure(context.Background(), ns)) },
			get: func(t *testing.T, name string) (map[string]string, string) {
				ns, ok := mem.Get(name)
				require.True(t, ok)
				return ns.Labels, ns.ResourceVersion
			},
		},
	}
}

// TestEnsureRefusesSquattedTenantNamespace: a tenant namespace someone
// else created, without the labels Liqo and kubepact give one (or labelled
// for another cluster), is refused with a *tenant.NamespaceError naming it
// and the label it lacks, and is left exactly as it was: its creator may
// hold rights in it that would reach what kubepact keeps there. One that
// carries Liqo's labels is adopted, its other labels kept; a namespace
// that is no tenant namespace is taken as it is.
func TestEnsureRefusesSquattedTenantNamespace(t *testing.T) {
	for i, s := range squatters() {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			refused := []struct {
				name   string
				labels func(id string) map[string]string
				label  string
			}{
				{"no label", func(string) map[string]string { return nil }, tenant.NamespaceLabel},
				{"only the remote cluster ID", func(id string) map[string]string { return map[string]string{clusterid.Label: id} }, tenant.NamespaceLabel},
				{"labelled for another cluster", func(string) map[string]string {
					return map[string]string{tenant.NamespaceLabel: "true", clusterid.Label: "cl-someone-else"}
				}, clusterid.Label},
				{"not marked as a tenant namespace", func(id string) map[string]string {
					return map[string]string{tenant.NamespaceLabel: "false", clusterid.Label: id}
				}, tenant.NamespaceLabel},
			}
			for j, tt := range refused {
				id := "cl-squat-" + shortName(t.Name(), i*10+j)
				name := clusterid.TenantNamespace(id)
				s.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tt.labels(id)}})
				before, version := s.get(t, name)

				err := s.ns.Ensure(ctx, tenant.Namespace(id))
				var nerr *tenant.NamespaceError
				require.ErrorAs(t, err, &nerr, tt.name)
				require.ErrorIs(t, err, tenant.ErrNotTenantNamespace, tt.name)
				require.Equal(t, name, nerr.Namespace, tt.name)
				require.Equal(t, id, nerr.RemoteID, tt.name)
				require.Equal(t, tt.label, nerr.Label, tt.name)
				after, afterVersion := s.get(t, name)
				require.Equal(t, before, after, "%s: the labels are unchanged", tt.name)
				require.Equal(t, version, afterVersion, "%s: the namespace is not written", tt.name)
			}

			// Liqo's tenant namespace, with a label of its own: adopted.
			id := "cl-squat-" + shortName(t.Name(), i*10+9)
			liqo := tenant.Namespace(id)
			liqo.Labels["example.com/liqo-extra"] = "kept"
			s.create(t, liqo)
			want := tenant.Namespace(id)
			want.Labels["example.com/added"] = "yes"
			require.NoError(t, s.ns.Ensure(ctx, want), "Liqo's tenant namespace")
			got, _ := s.get(t, liqo.Name)
			wantLabels := maps.Clone(liqo.Labels)
			maps.Copy(wantLabels, want.Labels)
			for k, v := range wantLabels {
				require.Equal(t, v, got[k], "label %s", k)
			}

			// No tenant namespace: taken as it is, as the key namespace is.
			other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "squat-other-" + shortName(t.Name(), i)}}
			s.create(t, other)
			require.NoError(t, s.ns.Ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other.Name}}), "a namespace that is no tenant namespace")
		})
	}
}

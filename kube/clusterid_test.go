package kube_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire"
)

func record(name, id string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo", Labels: map[string]string{clusterid.RecordLabel: clusterid.RecordLabelValue}},
		Data:       map[string]string{clusterid.RecordKey: id},
	}
}

func TestEnsureClusterID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("RecordedWins", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset(record(clusterid.RecordName, "cl-liqo"))
		id, generated, err := kube.EnsureClusterID(ctx, c, "", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-liqo", id)
		require.False(t, generated)
		id, _, err = kube.EnsureClusterID(ctx, c, "cl-liqo", nil)
		require.NoError(t, err, "a flag that agrees")
		require.Equal(t, "cl-liqo", id)
	})
	t.Run("FlagDisagrees", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset(record(clusterid.RecordName, "cl-liqo"))
		_, _, err := kube.EnsureClusterID(ctx, c, "cl-typo", nil)
		var conflict *clusterid.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.ErrorIs(t, err, clusterid.ErrConflict)
		require.Equal(t, "cl-typo", conflict.Asked)
		require.Equal(t, "cl-liqo", conflict.Recorded)
	})
	t.Run("SeveralRecords", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset(record(clusterid.RecordName, "cl-a"), record("other", "cl-b"))
		_, _, err := kube.EnsureClusterID(ctx, c, "", nil)
		require.ErrorIs(t, err, clusterid.ErrAmbiguous)
	})
	t.Run("InvalidRecord", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset(record(clusterid.RecordName, "Not_A_Cluster_ID"))
		_, _, err := kube.EnsureClusterID(ctx, c, "", nil)
		require.ErrorIs(t, err, clusterid.ErrInvalid)
	})
	t.Run("InvalidFlag", func(t *testing.T) {
		t.Parallel()
		_, _, err := kube.EnsureClusterID(ctx, k8sfake.NewClientset(), "Bad ID", nil)
		require.ErrorIs(t, err, clusterid.ErrInvalid)
	})
	t.Run("FlagWithoutRecord", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset()
		id, recorded, err := kube.EnsureClusterID(ctx, c, "cl-flag", nil)
		require.NoError(t, err)
		require.Equal(t, "cl-flag", id)
		require.True(t, recorded)
		cm, err := c.CoreV1().ConfigMaps("liqo").Get(ctx, clusterid.RecordName, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "cl-flag", cm.Data[clusterid.RecordKey], "a flag's ID is recorded where liqoctl reads it")
		require.Equal(t, clusterid.RecordLabelValue, cm.Labels[clusterid.RecordLabel])
		// From then on the record rules: another flag is a conflict.
		_, _, err = kube.EnsureClusterID(ctx, c, "cl-other", nil)
		var conflict *clusterid.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "cl-flag", conflict.Recorded)
	})
	t.Run("GeneratedOnceAndRecorded", func(t *testing.T) {
		t.Parallel()
		c := k8sfake.NewClientset()
		id, generated, err := kube.EnsureClusterID(ctx, c, "", &kube.ClusterIDOptions{Namespace: "liqo"})
		require.NoError(t, err)
		require.True(t, generated)
		require.NoError(t, clusterid.Validate(id))
		cm, err := c.CoreV1().ConfigMaps("liqo").Get(ctx, clusterid.RecordName, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, id, cm.Data[clusterid.RecordKey])
		require.Equal(t, clusterid.RecordLabelValue, cm.Labels[clusterid.RecordLabel])
		// Helm's ownership metadata: a later helm install of Liqo adopts it.
		require.Equal(t, "Helm", cm.Labels["app.kubernetes.io/managed-by"])
		require.Equal(t, "liqo", cm.Annotations["meta.helm.sh/release-name"])
		require.Equal(t, "liqo", cm.Annotations["meta.helm.sh/release-namespace"])
		_, err = c.CoreV1().Namespaces().Get(ctx, "liqo", metav1.GetOptions{})
		require.NoError(t, err, "the Liqo namespace is created")

		again, generated, err := kube.EnsureClusterID(ctx, c, "", nil)
		require.NoError(t, err)
		require.False(t, generated)
		require.Equal(t, id, again, "the next start reads the same ID")
	})
	t.Run("RecordNameTakenWithoutLabel", func(t *testing.T) {
		t.Parallel()
		unlabelled := record(clusterid.RecordName, "cl-x")
		unlabelled.Labels = nil
		_, _, err := kube.EnsureClusterID(ctx, k8sfake.NewClientset(unlabelled), "", nil)
		require.ErrorIs(t, err, clusterid.ErrInvalid)
	})
}

func TestEndpointFromClusterInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	caPEM, _, err := csr.GenerateCA(nil, "cluster-ca", time.Now(), time.Hour)
	require.NoError(t, err)
	clusterInfo := func(server string) *corev1.ConfigMap {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
		b, err := clientcmd.Write(*cfg)
		require.NoError(t, err)
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: wire.ClusterInfoName, Namespace: wire.ClusterInfoNamespace},
			Data: map[string]string{wire.ClusterInfoKey: string(b)}}
	}

	_, err = wire.EndpointFromClusterInfo(ctx, k8sfake.NewClientset())
	require.ErrorIs(t, err, wire.ErrNoClusterInfo)

	e, err := wire.EndpointFromClusterInfo(ctx, k8sfake.NewClientset(clusterInfo("https://10.0.0.1:6443")))
	require.NoError(t, err)
	require.Equal(t, "https://10.0.0.1:6443", e.Server)
	require.Equal(t, caPEM, e.CA)

	_, err = wire.EndpointFromClusterInfo(ctx, k8sfake.NewClientset(clusterInfo("http://10.0.0.1:8080")))
	require.ErrorIs(t, err, wire.ErrNotHTTPS)

	empty := clusterInfo("")
	empty.Data[wire.ClusterInfoKey] = "apiVersion: v1\nkind: Config\n"
	_, err = wire.EndpointFromClusterInfo(ctx, k8sfake.NewClientset(empty))
	require.ErrorIs(t, err, kube.ErrNoServer)
}

// WithCreateLabels labels the namespaces it creates, and never one that
// exists.
func TestNamespacesWithCreateLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	existing := liqoNamespace("cl-old")
	c := k8sfake.NewClientset(existing)
	ns := kube.NewNamespaces(c).WithCreateLabels(map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})

	require.NoError(t, ns.Ensure(ctx, tenant.Namespace("cl-new")))
	got, err := c.CoreV1().Namespaces().Get(ctx, "liqo-tenant-cl-new", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "privileged", got.Labels["pod-security.kubernetes.io/enforce"])
	require.Equal(t, "true", got.Labels["liqo.io/tenant-namespace"])

	require.NoError(t, ns.Ensure(ctx, withLabel(tenant.Namespace("cl-old"), "example.com/added", "yes")))
	got, err = c.CoreV1().Namespaces().Get(ctx, "liqo-tenant-cl-old", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, got.Labels, "pod-security.kubernetes.io/enforce", "an existing namespace keeps its pod security")
	require.Equal(t, "me", got.Labels["keep"])
	require.Equal(t, "yes", got.Labels["example.com/added"], "the labels asked for are added")

	require.NoError(t, kube.NewNamespaces(c).Ensure(ctx, tenant.Namespace("cl-plain")))
	plain, err := c.CoreV1().Namespaces().Get(ctx, "liqo-tenant-cl-plain", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, plain.Labels, "pod-security.kubernetes.io/enforce", "none by default")
}

// WithReadFirst finds an existing namespace with its labels in one read and
// writes nothing; one that lacks them, or is missing, is handled as
// without it, its create labels included.
func TestNamespacesWithReadFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ready := tenant.Namespace("cl-ready")
	unlabelled := liqoNamespace("cl-bare")
	c := k8sfake.NewClientset(ready, unlabelled)
	ns := kube.NewNamespaces(c).WithCreateLabels(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}).WithReadFirst()

	c.ClearActions()
	require.NoError(t, ns.Ensure(ctx, tenant.Namespace("cl-ready")))
	require.Len(t, c.Actions(), 1)
	require.Equal(t, "get", c.Actions()[0].GetVerb())

	require.NoError(t, ns.Ensure(ctx, withLabel(tenant.Namespace("cl-bare"), "example.com/added", "yes")))
	got, err := c.CoreV1().Namespaces().Get(ctx, unlabelled.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "me", got.Labels["keep"])
	require.Equal(t, "yes", got.Labels["example.com/added"], "the labels asked for are added")
	require.NotContains(t, got.Labels, "pod-security.kubernetes.io/enforce", "an existing namespace keeps its pod security")

	require.NoError(t, ns.Ensure(ctx, tenant.Namespace("cl-new")))
	got, err = c.CoreV1().Namespaces().Get(ctx, "liqo-tenant-cl-new", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "baseline", got.Labels["pod-security.kubernetes.io/enforce"], "created with its create labels")

	failing := k8sfake.NewClientset()
	failing.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "x", errors.New("no"))
	})
	err = kube.NewNamespaces(failing).WithReadFirst().Ensure(ctx, tenant.Namespace("cl-x"))
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	for _, a := range failing.Actions() {
		require.NotEqual(t, "create", a.GetVerb(), "a read that fails writes nothing")
	}
}

// liqoNamespace is the tenant namespace for remoteID as Liqo makes it,
// with a label of someone else's.
func liqoNamespace(remoteID string) *corev1.Namespace {
	return withLabel(tenant.Namespace(remoteID), "keep", "me")
}

// withLabel returns ns with label key=value added.
func withLabel(ns *corev1.Namespace, key, value string) *corev1.Namespace {
	ns.Labels[key] = value
	return ns
}

// namespaceReader holds namespaces' metadata, as a manager's cache does.
type namespaceReader struct {
	client.Reader
	labels map[string]map[string]string // by namespace name
}

func (r namespaceReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	l, ok := r.labels[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
	}
	obj.(*metav1.PartialObjectMetadata).SetName(key.Name)
	obj.SetLabels(maps.Clone(l))
	return nil
}

// WithReader takes a namespace found in its reader with the labels for
// ensured, with no request; one the reader lacks, or holds without a
// label, is handled on the API server as without it.
func TestNamespacesWithReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ready := tenant.Namespace("cl-ready")
	bare := liqoNamespace("cl-bare")
	c := k8sfake.NewClientset(ready, bare)
	cache := namespaceReader{labels: map[string]map[string]string{ready.Name: ready.Labels, bare.Name: bare.Labels}}
	ns := kube.NewNamespaces(c).WithCreateLabels(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}).
		WithReadFirst().WithReader(cache)

	c.ClearActions()
	require.NoError(t, ns.Ensure(ctx, tenant.Namespace("cl-ready")))
	require.Empty(t, c.Actions(), "found labelled in the reader")

	require.NoError(t, ns.Ensure(ctx, withLabel(tenant.Namespace("cl-bare"), "example.com/added", "yes")))
	got, err := c.CoreV1().Namespaces().Get(ctx, bare.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "me", got.Labels["keep"])
	require.Equal(t, "yes", got.Labels["example.com/added"], "the labels asked for are added")
	require.NotContains(t, got.Labels, "pod-security.kubernetes.io/enforce", "an existing namespace keeps its pod security")

	require.NoError(t, ns.Ensure(ctx, tenant.Namespace("cl-new")))
	got, err = c.CoreV1().Namespaces().Get(ctx, "liqo-tenant-cl-new", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "baseline", got.Labels["pod-security.kubernetes.io/enforce"], "created with its create labels")
}

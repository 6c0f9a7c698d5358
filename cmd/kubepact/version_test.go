package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/internal/testcluster"
	buildversion "github.com/kubepact/kubepact/internal/version"
)

// isolatedEnvs starts clusters of the test's own, with the CRDs: what they
// hold of controllers (Deployments, Leases) is the test's alone.
func isolatedEnvs(t *testing.T, names ...string) []*testEnv {
	t.Helper()
	ctx := testContext(t)
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{}, names...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	envs := make([]*testEnv, len(clusters))
	for i, c := range clusters {
		envs[i], err = newTestEnv(ctx, c, filepath.Join(t.TempDir(), "kubeconfig"))
		require.NoError(t, err)
	}
	return envs
}

// createControllerDeployment creates kubepact-controller's Deployment in
// ns, labelled as config/ labels it, with replicas and no Pod running (the
// test cluster runs none).
func createControllerDeployment(t *testing.T, ctx context.Context, e *testEnv, ns string, replicas int32, version string) {
	t.Helper()
	_, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{appNameLabel: kubepactApp}
	_, err = e.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kubepact-controller", Labels: map[string]string{appNameLabel: kubepactApp, versionLabel: version}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "kubepact-controller:" + version}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// putLease writes kubepact-controller's leader election Lease in ns (made
// when missing), held
// by holder and renewed at renewed, with the annotations given.
func putLease(t *testing.T, ctx context.Context, e *testEnv, ns, holder string, renewed time.Time, duration int32, annotations map[string]string) {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kubepactLease, Annotations: annotations},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To(duration),
			AcquireTime:          &metav1.MicroTime{Time: renewed},
			RenewTime:            &metav1.MicroTime{Time: renewed},
		},
	}
	_, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	cur, err := e.client.CoordinationV1().Leases(ns).Get(ctx, kubepactLease, metav1.GetOptions{})
	if err == nil {
		l.ResourceVersion = cur.ResourceVersion
		_, err = e.client.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
	} else {
		_, err = e.client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

// TestVersion reads the controller's version from the Lease its leader
// holds and writes its version into, never from its Deployment's labels;
// it says "no controller running" (exit 0) when no Lease is held, prints
// json and yaml of stable field names, and exits 1 when the cluster
// cannot be reached.
func TestVersion(t *testing.T) {
	t.Parallel()
	e := isolatedEnvs(t, "version")[0]
	ctx := testContext(t)
	const ns = "kubepact-system"
	onCluster := []string{"version", "--kubeconfig", e.kubeconfig}
	lease := "Lease " + ns + "/" + kubepactLease

	// A Deployment labelled with a version, no Pod running it, no Lease:
	// its label is what was asked for, not what runs.
	createControllerDeployment(t, ctx, e, ns, 2, "v0.1.0-test")
	r, err := cliErr(t, nil, onCluster...)
	require.NoError(t, err)
	assert.Equal(t, "Client Version: "+cliVersion()+"\nController Version: no controller running\n", r.stdout)
	assert.Equal(t, exitOK, r.code)

	// A Lease that expired long ago: no controller runs either.
	annotated := func(holder, v string) map[string]string {
		return map[string]string{buildversion.LeaseAnnotation: v, buildversion.LeaseHolderAnnotation: holder}
	}
	putLease(t, ctx, e, ns, "pod-a", time.Now().Add(-time.Hour), 15, annotated("pod-a", "v0.2.0-test"))
	r, err = cliErr(t, nil, onCluster...)
	require.NoError(t, err)
	assert.Equal(t, "Client Version: "+cliVersion()+"\nController Version: no controller running\n", r.stdout)

	// The leader holds the Lease and wrote its version into it.
	putLease(t, ctx, e, ns, "pod-a", time.Now(), 3600, annotated("pod-a", "v0.2.0-test"))
	r, err = cliErr(t, nil, onCluster...)
	require.NoError(t, err)
	assert.Equal(t, "Client Version: "+cliVersion()+"\nController Version: v0.2.0-test (kubepact-controller, "+lease+")\n", r.stdout)

	for _, format := range []string{"json", "yaml"} {
		r, err = cliErr(t, nil, append(onCluster, "-o", format)...)
		require.NoError(t, err, format)
		doc := map[string]any{}
		if format == "json" {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		} else {
			require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		}
		assert.Equal(t, map[string]any{
			"apiVersion":    "cli.kubepact.io/v1",
			"kind":          "Version",
			"clientVersion": cliVersion(),
			"cluster": map[string]any{
				"server":            e.cluster.Host(),
				"controller":        "kubepact-controller",
				"controllerVersion": "v0.2.0-test",
				"lease":             ns + "/" + kubepactLease,
			},
		}, doc, format)
	}

	// Another holder took the Lease over without writing its version (a
	// version before it did): the annotations left are not its.
	putLease(t, ctx, e, ns, "pod-b", time.Now(), 3600, annotated("pod-a", "v0.2.0-test"))
	r, err = cliErr(t, nil, onCluster...)
	require.NoError(t, err)
	assert.Equal(t, "Client Version: "+cliVersion()+"\nController Version: unknown (kubepact-controller, "+lease+")\n", r.stdout)

	// --client contacts nothing.
	r, err = cliErr(t, nil, "version", "--client", "-o", "json", "--server", "https://127.0.0.1:1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"apiVersion":"cli.kubepact.io/v1","kind":"Version","clientVersion":"`+cliVersion()+`"}`, r.stdout)

	// -o name prints nothing of a version: a usage error.
	r, err = cliErr(t, nil, append(onCluster, "-o", "name")...)
	var usage *usageError
	require.ErrorAs(t, err, &usage)
	assert.Equal(t, exitUsage, r.code)

	// The help says what each exit status means.
	r = cli(t, "", "version", "--help").ok(t)
	assert.Contains(t, r.stdout, "Exit status: 0 when the cluster answered, also when it runs no controller;\n1 when the cluster cannot be reached")
}

// TestVersionUnreachable exits 1, as kubectl version does, when the
// cluster cannot be reached, after printing the CLI's version.
func TestVersionUnreachable(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := closed.Addr().String()
	require.NoError(t, closed.Close())
	for _, format := range []string{"", "json"} {
		args := []string{"version", "--kubeconfig", consumerEnv.kubeconfig, "--server", "https://" + addr}
		if format != "" {
			args = append(args, "-o", format)
		}
		r, err := cliErr(t, nil, args...)
		var opErr *net.OpError
		require.True(t, errors.As(err, &opErr), "a connection refused: %v", err)
		assert.Equal(t, exitError, r.code)
		assert.Contains(t, r.stderr, "kubepact: reading the controller's version: ")
		if format == "" {
			assert.Equal(t, "Client Version: "+cliVersion()+"\n", r.stdout)
		} else {
			assert.JSONEq(t, `{"apiVersion":"cli.kubepact.io/v1","kind":"Version","clientVersion":"`+cliVersion()+`"}`, r.stdout)
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/prevbuild"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// previousCommit is the build an upgrade starts from: the last one that
// bound the namespaced slice role liqo-virtual-kubelet-remote in a tenant
// namespace.
const previousCommit = "50abfc7"

// upgradeWait bounds how long the new build may take to delete the
// bindings the previous one left in tenant namespaces.
const upgradeWait = time.Minute

// TestUpgradeClosesTenantNamespaceSliceGrant upgrades a two-way peering
// with a ResourceSlice each way from the previous build to this one, as an
// operator does: config/ of the previous commit applied and its
// kubepact-controller running with its Deployment's args on both clusters,
// which binds liqo-virtual-kubelet-remote (Secrets, ConfigMaps, pods/exec)
// to the peer's slice identities in its tenant namespace; then those
// controllers stopped, this config/ applied and this build started with the
// Deployment's args. The bindings in tenant namespaces are gone within a
// minute on both clusters, and nothing else moved: each ControlPlane
// kubeconfig still authenticates and keeps its certificate, each slice
// identity keeps its cluster-wide grant, and no CertificateSigningRequest
// was made. The first run builds the previous binary (about two minutes on
// two cores); later runs find it in the user's cache directory.
func TestUpgradeClosesTenantNamespaceSliceGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin, tree := previousBuild(ctx, t)
	a, b := peer{providerEnv, "cl-upgrade-a"}, peer{consumerEnv, "cl-upgrade-b"}
	peers := []peer{a, b}
	// Whatever happens below, the package's clusters are left with this
	// config/ applied, as the other tests expect.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, p := range peers {
			if err := applyKustomization(ctx, p.side, filepath.Join("..", "..", "config")); err != nil {
				t.Errorf("applying this config/ again to %s: %v", p.cluster.Name(), err)
			}
		}
	})

	// The previous version, as it ran.
	oldConfig := filepath.Join(tree, "config")
	oldArgs := deploymentArgs(ctx, t, oldConfig)
	var old []*process
	for _, p := range peers {
		require.NoError(t, applyKustomization(ctx, p.side, oldConfig), "the previous config/ on %s", p.cluster.Name())
		forgetClusterID(t, p.side, []string{"--cluster-id=" + p.id})
		old = append(old, startBinary(ctx, t, bin, p, append(oldArgs[:len(oldArgs):len(oldArgs)], clusterArgs(t, p)...)))
	}
	peerBothWays(ctx, t, a, b)
	slices := map[string]string{a.id: "slice-upgrade-a", b.id: "slice-upgrade-b"} // consumer ID: its slice
	makeSlice(ctx, t, b, a, slices[a.id])
	makeSlice(ctx, t, a, b, slices[b.id])
	tenantBinding := rbac.BindingName(rbac.VirtualKubeletClusterRoleName)
	for _, x := range [][2]peer{{a, b}, {b, a}} {
		p, c := x[0], x[1]
		_, err := p.admin.RbacV1().RoleBindings(clusterid.TenantNamespace(c.id)).Get(ctx, tenantBinding, metav1.GetOptions{})
		require.NoError(t, err, "the previous build binds %s's slice identity in its tenant namespace on %s: the hole this test must see closed", c.id, p.id)
	}
	certs := map[string][]byte{}
	for _, x := range [][2]peer{{a, b}, {b, a}} {
		certs[x[1].id] = controlPlaneCertificate(ctx, t, x[0], x[1])
	}
	csrsBefore := map[string]int{a.id: countCSRs(ctx, t, a), b.id: countCSRs(ctx, t, b)}

	// The upgrade.
	for i, p := range peers {
		require.NoError(t, old[i].stop(), "the previous build on %s exits 0 on SIGTERM", p.id)
		require.NoError(t, applyKustomization(ctx, p.side, filepath.Join("..", "..", "config")), "this config/ on %s", p.cluster.Name())
	}
	for _, p := range peers {
		startCurrent(ctx, t, p)
	}

	// left lists the tenant-namespace slice bindings still there.
	left := func() []string {
		var left []string
		for _, x := range [][2]peer{{a, b}, {b, a}} {
			p, c := x[0], x[1]
			ns := clusterid.TenantNamespace(c.id)
			switch _, err := p.admin.RbacV1().RoleBindings(ns).Get(ctx, tenantBinding, metav1.GetOptions{}); {
			case err == nil:
				left = append(left, fmt.Sprintf("%s/%s on %s, for %s's slices", ns, tenantBinding, p.id, c.id))
			case !apierrors.IsNotFound(err):
				left = append(left, fmt.Sprintf("%s/%s on %s, for %s's slices: %v", ns, tenantBinding, p.id, c.id, err))
			}
		}
		return left
	}
	if !assert.Eventually(t, func() bool { return len(left()) == 0 }, upgradeWait, 200*time.Millisecond,
		"this build deletes the slice RoleBindings the previous one made in tenant namespaces, within %s", upgradeWait) {
		t.Errorf("still bound after the upgrade: %s", strings.Join(left(), "; "))
	}
	for _, x := range [][2]peer{{a, b}, {b, a}} {
		p, c := x[0], x[1]
		requireControlPlaneWorks(ctx, t, p, c)
		assert.Equal(t, certs[c.id], controlPlaneCertificate(ctx, t, p, c), "%s's ControlPlane certificate for %s is the one it held before the upgrade", c.id, p.id)
		requireSliceIdentityWorks(ctx, t, p, c, slices[c.id])
	}
	for _, p := range peers {
		assert.Equal(t, csrsBefore[p.id], countCSRs(ctx, t, p), "no CertificateSigningRequest made on %s by the upgrade", p.id)
	}
}

// controlPlaneCertificate is the DER client certificate of c's ControlPlane
// kubeconfig for p.
func controlPlaneCertificate(ctx context.Context, t *testing.T, p, c peer) []byte {
	t.Helper()
	cert, err := controlPlaneKubeconfig(ctx, t, p, c).ClientCertificate()
	require.NoError(t, err)
	return cert.Raw
}

// countCSRs counts the CertificateSigningRequests of tenant identities
// (kube.CSRLabel) on p.
func countCSRs(ctx context.Context, t *testing.T, p peer) int {
	t.Helper()
	list, err := p.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRLabel})
	require.NoError(t, err)
	return len(list.Items)
}

// requireSliceIdentityWorks checks, with the kubeconfig c holds for its
// ResourceSlice slice on p, that the slice identity authenticates and
// still has what the cluster-wide slice binding grants (the peer's
// metrics), and no longer reads Secrets in c's tenant namespace on p.
func requireSliceIdentityWorks(ctx context.Context, t *testing.T, p, c peer, slice string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(restConfigOf(t, sliceKubeconfig(ctx, t, p, c, slice)))
	require.NoError(t, err)
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "%s's slice kubeconfig authenticates on %s", c.id, p.id)
	require.Contains(t, who.Status.UserInfo.Groups, c.id, "the slice identity is in group %s", c.id)
	can := func(attrs authorizationv1.ResourceAttributes) bool {
		t.Helper()
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	assert.True(t, can(authorizationv1.ResourceAttributes{Verb: "get", Group: "metrics.liqo.io", Resource: "scrape", Subresource: "metrics"}),
		"%s's slice identity keeps the cluster-wide slice grant on %s", c.id, p.id)
	assert.False(t, can(authorizationv1.ResourceAttributes{Namespace: clusterid.TenantNamespace(c.id), Verb: "get", Resource: "secrets"}),
		"%s's slice identity reads no Secret of its tenant namespace on %s", c.id, p.id)
}

// previousBuild returns the kubepact-controller binary of previousCommit
// and that commit's tree, extracted with git archive and built once into
// the user's cache directory (kubepact/prev-<commit>), where later runs
// find them. The build uses the same module and build caches as this one.
// It fails t, saying that the test needs the repository's history, when
// the repository does not hold the commit (a shallow clone).
func previousBuild(ctx context.Context, t *testing.T) (bin, tree string) {
	t.Helper()
	bin, tree, err := prevbuild.Build(ctx, previousCommit, nil)
	require.NoError(t, err, "the upgrade test needs the repository with commit %s: a full clone, not a shallow one", previousCommit)
	return bin, tree
}

// process is a kubepact-controller binary running against one of the
// package's clusters.
type process struct {
	cmd    *exec.Cmd
	exited chan error
	result error
	done   bool
}

// startBinary runs bin with args (listen ports moved to free loopback
// ones) on p, as the ServiceAccount config/ makes, with the lease in the
// kubeconfig context's namespace as a pod's would be, and returns once it
// answers /readyz. It is stopped, if still running, when t ends; its logs
// are printed if t failed.
func startBinary(ctx context.Context, t *testing.T, bin string, p peer, args []string) *process {
	t.Helper()
	args, probe, _ := withPorts(t, args)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: serviceAccountKubeconfig(t, p.cluster)})
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	pr := &process{cmd: cmd, exited: make(chan error, 1)}
	go func() { pr.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if !pr.done {
			_ = cmd.Process.Kill()
			<-pr.exited
			pr.done = true
		}
		if t.Failed() {
			t.Logf("%s %v on %s:\n%s", bin, args, p.id, logs.String())
		}
	})
	ready := func() bool {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	deadline := time.After(time.Minute)
	for !ready() {
		select {
		case err := <-pr.exited:
			pr.done = true
			t.Fatalf("%s on %s exited before it was ready: %v\n%s", bin, p.id, err, logs.String())
		case <-deadline:
			t.Fatalf("%s on %s not ready within a minute", bin, p.id)
		case <-ctx.Done():
			t.Fatalf("%s on %s: %v", bin, p.id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return pr
}

// stop sends SIGTERM and waits up to 30 seconds for the exit, which it
// returns; then it kills the process.
func (p *process) stop() error {
	if p.done {
		return p.result
	}
	p.done = true
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.result = err
		return err
	}
	select {
	case p.result = <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.result = errors.New("no exit within 30 seconds of SIGTERM")
	}
	return p.result
}

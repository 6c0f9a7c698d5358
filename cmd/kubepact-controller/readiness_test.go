package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/wire"
)

// podController is one kubepact-controller run in this process as if in
// the Pod pod of the shipped Deployment: POD_NAME, POD_NAMESPACE and
// POD_UID name it, as the downward API does.
type podController struct {
	*replica
	pod   *corev1.Pod
	probe string
	logs  *lockedBuffer
}

// shippedWith returns the Deployment's args with --roles set to roles, the
// metrics endpoint off, the probes on a free loopback port, and extra.
func shippedWith(ctx context.Context, t *testing.T, roles string, extra ...string) ([]string, string) {
	t.Helper()
	var args []string
	probe := freeAddr(t)
	for _, a := range shippedArgs(ctx, t) {
		switch {
		case strings.HasPrefix(a, "--roles="):
			a = "--roles=" + roles
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probe
		}
		args = append(args, a)
	}
	return append(args, extra...), probe
}

// controllerPod creates a Pod named name in kubepact-system on s, for a
// controller run in this process to record its Events on. No node runs it.
func controllerPod(ctx context.Context, t *testing.T, s *side, name string) *corev1.Pod {
	t.Helper()
	pod, err := s.admin.CoreV1().Pods("kubepact-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName:           "kubepact-controller",
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "controller", Image: "ghcr.io/kubepact/kubepact-controller:test"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.admin.CoreV1().Pods("kubepact-system").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return pod
}

// startInPod runs the controller with args on s, as its ServiceAccount, as
// if in pod, and returns once its probes answer (and so once it has read
// its environment).
func startInPod(t *testing.T, s *side, pod *corev1.Pod, probe string, args []string) *podController {
	t.Helper()
	forgetClusterID(t, s, args)
	c := startKeepingID(t, s, pod, probe, args)
	eventually(t, "the probes answer", func() bool { code, _ := get(probe, "/healthz"); return code == http.StatusOK })
	return c
}

// get answers GET http://addr+path: the status code (0 when nothing
// answers) and the body.
func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ready reports whether c's /readyz answers ok.
func (c *podController) ready() bool {
	code, _ := get(c.probe, "/readyz")
	return code == http.StatusOK
}

// waitNotReady waits until /readyz fails because of the provider check and
// /readyz/provider names want; it returns that answer.
func (c *podController) waitNotReady(t *testing.T, want ...string) string {
	t.Helper()
	var body string
	eventually(t, "/readyz/provider: "+strings.Join(want, ", "), func() bool {
		code, agg := get(c.probe, "/readyz")
		if code != http.StatusInternalServerError || !strings.Contains(agg, "[-]provider failed") {
			return false
		}
		code, body = get(c.probe, "/readyz/provider")
		if code != http.StatusInternalServerError {
			return false
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
	return body
}

// podEvents lists the Events of pod with reason, as kubectl describe pod
// finds them: by the Pod's kind, name, namespace and UID.
func podEvents(ctx context.Context, t *testing.T, s *side, pod *corev1.Pod, reason string) []corev1.Event {
	t.Helper()
	list, err := s.admin.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.name": pod.Name, "involvedObject.namespace": pod.Namespace,
		"involvedObject.uid": string(pod.UID), "reason": reason}.String()})
	require.NoError(t, err)
	return list.Items
}

// waitEvent waits for an Event of pod with reason and type, whose message
// names want, and returns it.
func waitEvent(ctx context.Context, t *testing.T, s *side, pod *corev1.Pod, eventtype, reason string, want ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	eventually(t, reason+" Event on "+pod.Name, func() bool {
		for _, e := range podEvents(ctx, t, s, pod, reason) {
			ok := e.Type == eventtype
			for _, w := range want {
				ok = ok && strings.Contains(e.Message, w)
			}
			if ok {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// reinstallRoles applies config/roles to s again, as an administrator does.
func reinstallRoles(ctx context.Context, t *testing.T, s *side) {
	t.Helper()
	require.NoError(t, applyKustomization(ctx, s, filepath.Join("..", "..", "config", "roles")))
}

// deleteRole deletes the ClusterRole name from s; t's end installs
// config/roles again.
func deleteRole(ctx context.Context, t *testing.T, s *side, name string) {
	t.Helper()
	t.Cleanup(func() { reinstallRoles(context.Background(), t, s) })
	require.NoError(t, s.admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}))
}

// requireNoClusterInfo checks that s publishes no kube-public/cluster-info,
// as a managed cluster may not.
func requireNoClusterInfo(ctx context.Context, t *testing.T, s *side) {
	t.Helper()
	_, err := s.admin.CoreV1().ConfigMaps(wire.ClusterInfoNamespace).Get(ctx, wire.ClusterInfoName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "kube-public/cluster-info must be missing: %v", err)
}

// TestNotReadyWithoutURL runs the shipped controller with the provider
// role on a cluster that publishes no kube-public/cluster-info and without
// --api-server-url: it is not ready, /readyz/provider says why and how to
// fix it, it logs that once, and a Warning Event on its Pod says it too.
// Restarted with --api-server-url, it is ready.
func TestNotReadyWithoutURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	requireNoClusterInfo(ctx, t, providerEnv)
	pod := controllerPod(ctx, t, providerEnv, "kubepact-controller-no-url")

	args, probe := shippedWith(ctx, t, "provider", "--cluster-id=cl-ready-provider")
	began := time.Now()
	c := startInPod(t, providerEnv, pod, probe, args)
	body := c.waitNotReady(t, "the provider's API server URL is unknown", "--api-server-url=https://HOST:PORT",
		"kubectl -n kubepact-system edit deployment kubepact-controller", "--roles=consumer")
	t.Logf("not ready %v after the start: /readyz/provider: %s", time.Since(began).Round(time.Millisecond), body)
	e := waitEvent(ctx, t, providerEnv, pod, corev1.EventTypeWarning, contract.ReasonAPIServerURLUnknown, "--api-server-url=https://HOST:PORT")
	t.Logf("Event %v after the start: %s %s: %s", time.Since(began).Round(time.Millisecond), e.Type, e.Reason, e.Message)
	require.Equal(t, 1, strings.Count(c.logs.String(), `"msg":"not ready: the provider role cannot accept Tenants or ResourceSlices"`), "one log line")
	require.Contains(t, c.logs.String(), `"reason":"APIServerURLUnknown"`)
	require.False(t, c.ready())
	c.stop()

	// The operator adds --api-server-url; the Deployment restarts it.
	args, probe = shippedWith(ctx, t, "provider", "--cluster-id=cl-ready-provider",
		"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+writeFile(t, providerEnv.cluster.CA()))
	began = time.Now()
	c = startInPod(t, providerEnv, pod, probe, args)
	eventually(t, "ready with --api-server-url", c.ready)
	t.Logf("ready %v after the restart with --api-server-url", time.Since(began).Round(time.Millisecond))
	code, _ := get(probe, "/readyz/provider")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, c.logs.String(), "not ready")
}

// TestNotReadyWithoutPeerRole runs two replicas of the shipped controller
// with the provider role, one leading: a peer ClusterRole deleted makes
// both not ready (the standby too: it checks for itself), with the role
// and the fix in /readyz/provider and an Event on each Pod; installed
// again, both are ready within readinessInterval or so. Neither flaps on
// the way.
func TestNotReadyWithoutPeerRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	caFile := writeFile(t, providerEnv.cluster.CA())
	var replicas []*podController
	for _, name := range []string{"kubepact-controller-a", "kubepact-controller-b"} {
		pod := controllerPod(ctx, t, providerEnv, name)
		args, probe := shippedWith(ctx, t, "provider", "--cluster-id=cl-ready-provider",
			"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+caFile)
		c := startInPod(t, providerEnv, pod, probe, args)
		eventually(t, name+" ready", c.ready)
		replicas = append(replicas, c)
	}
	eventually(t, "a leader", func() bool { return replicas[0].elected() || replicas[1].elected() })

	// Each replica's readiness, sampled until stop: it may change once per
	// phase, never back and forth.
	type sample struct {
		at    time.Time
		ready [2]bool
	}
	stopSampling := make(chan struct{})
	sampled := make(chan []sample)
	go func() {
		var all []sample
		for {
			select {
			case <-stopSampling:
				sampled <- all
				return
			case <-time.After(100 * time.Millisecond):
				all = append(all, sample{at: time.Now(), ready: [2]bool{replicas[0].ready(), replicas[1].ready()}})
			}
		}
	}()

	deleted := time.Now()
	deleteRole(ctx, t, providerEnv, rbac.ControlPlaneClusterRoleName)
	for _, c := range replicas {
		body := c.waitNotReady(t, `ClusterRole "liqo-remote-controlplane"`, "kubectl apply -k config/roles, or kubepact install roles")
		t.Logf("%s (leader %v) not ready %v after the role's deletion: /readyz/provider: %s", c.pod.Name, c.elected(),
			time.Since(deleted).Round(time.Millisecond), body)
	}
	for _, c := range replicas {
		e := waitEvent(ctx, t, providerEnv, c.pod, corev1.EventTypeWarning, contract.ReasonPeerRoleMissing, "liqo-remote-controlplane", "kubectl apply -k config/roles")
		t.Logf("%s: Event %s %s %v after the deletion: %s", c.pod.Name, e.Type, e.Reason, time.Since(deleted).Round(time.Millisecond), e.Message)
	}
	notReadyUntil := time.Now()

	reinstalled := time.Now()
	reinstallRoles(ctx, t, providerEnv)
	for _, c := range replicas {
		eventually(t, c.pod.Name+" ready again", c.ready)
		took := time.Since(reinstalled)
		t.Logf("%s (leader %v) ready %v after the roles were installed again", c.pod.Name, c.elected(), took.Round(time.Millisecond))
		require.Less(t, took, readinessInterval+5*time.Second, "ready within a check or so")
	}
	for _, c := range replicas {
		waitEvent(ctx, t, providerEnv, c.pod, corev1.EventTypeNormal, reasonProviderReady)
		require.Equal(t, 1, strings.Count(c.logs.String(), `"reason":"PeerRoleMissing"`), "one log line")
	}
	time.Sleep(2 * time.Second)
	close(stopSampling)
	all := <-sampled

	// Ready, then not ready from the deletion on, then ready from the
	// reinstall on: one change at each step, for each replica.
	for i := range replicas {
		changes := 0
		for j := 1; j < len(all); j++ {
			if all[j].ready[i] != all[j-1].ready[i] {
				changes++
			}
		}
		require.LessOrEqual(t, changes, 2, "%s flapped", replicas[i].pod.Name)
		for _, s := range all {
			if s.at.After(notReadyUntil) && s.at.Before(reinstalled) {
				require.False(t, s.ready[i], "%s ready while the role was missing", replicas[i].pod.Name)
			}
		}
	}
}

// TestConsumerReadyWithoutProviderNeeds runs the shipped controller with
// the consumer role alone on a cluster that has neither
// kube-public/cluster-info, nor --api-server-url, nor the peer roles: it is
// ready, and has no provider check.
func TestConsumerReadyWithoutProviderNeeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	requireNoClusterInfo(ctx, t, consumerEnv)
	for _, name := range rbac.PeerRoleNames() {
		deleteRole(ctx, t, consumerEnv, name)
	}
	pod := controllerPod(ctx, t, consumerEnv, "kubepact-controller-consumer")
	args, probe := shippedWith(ctx, t, "consumer", "--cluster-id=cl-ready-consumer")
	began := time.Now()
	c := startInPod(t, consumerEnv, pod, probe, args)
	eventually(t, "ready", c.ready)
	t.Logf("consumer ready %v after the start", time.Since(began).Round(time.Millisecond))
	code, _ := get(probe, "/readyz/provider")
	require.Equal(t, http.StatusNotFound, code, "no provider check")
	time.Sleep(readinessInterval + time.Second)
	require.True(t, c.ready(), "still ready")
	require.NotContains(t, c.logs.String(), "not ready")
}

// TestShippedReadinessProbe: the Deployment config/ ships probes /readyz
// (so kubectl rollout status and unready-pod alerts follow the provider
// check) on the port its args serve the probes at, and gives the container
// its Pod's name, namespace and UID, which the Events are recorded on.
func TestShippedReadinessProbe(t *testing.T) {
	ctx := t.Context()
	objects, err := kustomize(ctx, filepath.Join("..", "..", "config"))
	require.NoError(t, err)
	var c *corev1.Container
	for _, u := range objects {
		if u.GetKind() != "Deployment" || u.GetName() != "kubepact-controller" {
			continue
		}
		var d appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Name == "controller" {
				c = &d.Spec.Template.Spec.Containers[i]
			}
		}
	}
	require.NotNil(t, c, "config/ ships the controller container")

	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	var probePort int32
	for _, p := range c.Ports {
		if p.Name == c.ReadinessProbe.HTTPGet.Port.String() {
			probePort = p.ContainerPort
		}
	}
	require.Contains(t, c.Args, fmt.Sprintf("--health-probe-bind-address=:%d", probePort), "the probe asks the port the probes are served at")

	fieldRefs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fieldRefs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	require.Equal(t, map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid"}, fieldRefs)
}

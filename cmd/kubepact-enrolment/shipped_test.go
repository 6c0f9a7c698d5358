package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/kube"
)

// shipped is what config/enrolment ships, as kubectl apply -k renders it:
// every object, the kubepact-enrolment Deployment and its endpoint's
// container.
type shipped struct {
	objects    []*unstructured.Unstructured
	deployment *appsv1.Deployment
	container  corev1.Container
}

func renderShipped(ctx context.Context, t *testing.T) shipped {
	t.Helper()
	objects, err := kustomize.Render(ctx, filepath.Join("..", "..", "config", "enrolment"))
	require.NoError(t, err)
	s := shipped{objects: objects}
	for _, u := range objects {
		if u.GetKind() != "Deployment" || u.GetName() != "kubepact-enrolment" {
			continue
		}
		require.Nil(t, s.deployment, "one kubepact-enrolment Deployment")
		s.deployment = &appsv1.Deployment{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s.deployment))
	}
	require.NotNil(t, s.deployment, "config/enrolment has the kubepact-enrolment Deployment")
	var found int
	for _, c := range s.deployment.Spec.Template.Spec.Containers {
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "kubepact-enrolment" {
			s.container = c
			found++
		}
	}
	require.Equal(t, 1, found, "one container runs kubepact-enrolment")
	return s
}

// flagName is the name of the flag a command-line argument sets.
func flagName(t *testing.T, arg string) string {
	t.Helper()
	require.True(t, strings.HasPrefix(arg, "--"), "%q is a long flag", arg)
	name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return name
}

// forTheTest returns the shipped container's args as they must differ
// outside a pod, and nothing else changed: the listen address on a free
// loopback port, and every path under the TLS Secret's mount under dir,
// where the Secret's content is written. A file flag the args leave to
// its default under the mount is given that default's place under dir.
func (s shipped) forTheTest(t *testing.T, dir string) (args []string, addr string) {
	t.Helper()
	mount := s.tlsMount(t)
	prefix := strings.TrimSuffix(mount.MountPath, "/") + "/"
	set := map[string]bool{}
	for _, a := range s.container.Args {
		name := flagName(t, a)
		set[name] = true
		value, _ := strings.CutPrefix(a, "--"+name+"=")
		switch {
		case name == "bind-address":
			addr = freeAddr(t)
			a = "--bind-address=" + addr
		case strings.HasPrefix(value, prefix):
			a = "--" + name + "=" + filepath.Join(dir, strings.TrimPrefix(value, prefix))
		}
		args = append(args, a)
	}
	require.NotEmpty(t, addr, "the shipped args set --bind-address")
	for name, def := range map[string]string{"tls-cert-file": DefaultCertFile, "tls-key-file": DefaultKeyFile} {
		if !set[name] {
			require.True(t, strings.HasPrefix(def, prefix), "--%s is left to its default %s, which is not under the TLS Secret's mount %s", name, def, mount.MountPath)
			args = append(args, "--"+name+"="+filepath.Join(dir, strings.TrimPrefix(def, prefix)))
		}
	}
	return args, addr
}

// tlsMount is the container's mount of the volume of the Secret the
// provider's controller writes.
func (s shipped) tlsMount(t *testing.T) corev1.VolumeMount {
	t.Helper()
	var volume string
	for _, v := range s.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == kube.EnrolmentTLSSecretName {
			volume = v.Name
		}
	}
	require.NotEmpty(t, volume, "a volume of the Secret %s", kube.EnrolmentTLSSecretName)
	for _, m := range s.container.VolumeMounts {
		if m.Name == volume {
			require.Empty(t, m.SubPath)
			return m
		}
	}
	t.Fatalf("the container does not mount the volume %s", volume)
	return corev1.VolumeMount{}
}

// TestShippedDeployment runs the kubepact-enrolment binary with exactly
// the container args of the Deployment config/enrolment ships, but for
// what only exists in a pod: the listen address (a free loopback port) and
// the files of the mounted TLS Secret (written from the Secret
// kubepact-enrolment-tls as the provider's controller makes it, into a
// directory that stands for the mount), on a cluster where config/enrolment
// is applied, as its ServiceAccount with a token the API server issued it
// (the one a pod mounts, here in a kubeconfig). Every flag of the args is
// one the binary defines. It becomes ready, serves a committed consumer's
// grant, answers an unknown consumer and another CSR with the same 404
// "not authorized", limits a client at the shipped --rate and --burst,
// logs no error, and exits 0 on SIGTERM.
func TestShippedDeployment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := renderShipped(ctx, t)
	args := s.container.Args

	// Every flag is one the binary defines: the package's own parser
	// takes them, and the built binary's --help lists them.
	shippedOptions, err := parse(args, io.Discard)
	require.NoError(t, err, "the shipped args %q", args)
	bin := buildBinary(t)
	help := exec.CommandContext(ctx, bin, "--help")
	help.Env = testenv.New(t, testenv.Options{})
	usage, err := help.CombinedOutput()
	require.NoError(t, err, "%s", usage)
	for _, a := range args {
		assert.Contains(t, string(usage), "--"+flagName(t, a)+" ", "--help lists the shipped flag of %q", a)
	}

	// The shipped listen port is the one the probes and the Service reach.
	_, shippedPort, err := net.SplitHostPort(strings.TrimPrefix(args[slices.IndexFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--bind-address=")
	})], "--bind-address="))
	require.NoError(t, err)
	for _, p := range []*corev1.Probe{s.container.ReadinessProbe, s.container.LivenessProbe} {
		require.NotNil(t, p)
		require.NotNil(t, p.HTTPGet)
		require.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme)
		port := p.HTTPGet.Port.String()
		for _, cp := range s.container.Ports {
			if cp.Name == port {
				port = strconv.Itoa(int(cp.ContainerPort))
			}
		}
		assert.Equal(t, shippedPort, port, "the probe of %s reaches --bind-address", p.HTTPGet.Path)
	}
	// The in-cluster token is mounted: the endpoint reads the API server.
	assert.NotEqual(t, ptr.To(false), s.deployment.Spec.Template.Spec.AutomountServiceAccountToken, "the token is mounted")

	// A cluster where config/enrolment is applied, in the namespace it
	// names (it makes none: the controller's).
	cl := newCluster(t)
	ns := s.deployment.Namespace
	require.NotEmpty(t, ns)
	_, err = cl.adminKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyObjects(ctx, t, cl, s.objects)
	user := "system:serviceaccount:" + ns + ":" + s.deployment.Spec.Template.Spec.ServiceAccountName
	assert.Equal(t, serviceAccount, user, "the ServiceAccount TestEndpoint impersonates is the shipped one")
	// The binding reaches the authorizer before the endpoint starts, so
	// that its informer is not refused once (an error in its log).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r, err := cl.adminKube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Group: peeringv1alpha1.GroupName, Resource: peeringv1alpha1.AuthorizedConsumerResource},
		}}, metav1.CreateOptions{})
		if assert.NoError(c, err) {
			assert.True(c, r.Status.Allowed, "the shipped ServiceAccount may watch AuthorizedConsumers")
		}
	}, time.Minute, 100*time.Millisecond)

	// The enrolment key and the endpoint's Secret, as the provider's
	// controller makes them, for the shipped Service's names.
	enrolmentKeys := kube.NewEnrolmentKeys(cl.adminKube, ns)
	key, err := enrolmentKeys.Ensure(ctx, rand.Reader)
	require.NoError(t, err)
	var service string
	for _, u := range s.objects {
		if u.GetKind() == "Service" {
			service = u.GetName()
		}
	}
	require.NotEmpty(t, service, "config/enrolment has a Service")
	svc := service + "." + ns
	require.NoError(t, enrolmentKeys.EnsureServing(ctx, rand.Reader, key, providerID, []string{service, svc, svc + ".svc", svc + ".svc.cluster.local"},
		time.Now(), 90*24*time.Hour))
	secret, err := cl.adminKube.CoreV1().Secrets(ns).Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	mountDir := t.TempDir()
	mode := os.FileMode(0o644) // the kubelet's default
	for _, v := range s.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == kube.EnrolmentTLSSecretName && v.Secret.DefaultMode != nil {
			mode = os.FileMode(*v.Secret.DefaultMode)
		}
	}
	for k, data := range secret.Data {
		require.NoError(t, os.WriteFile(filepath.Join(mountDir, k), data, mode))
	}

	// The pod's token, in a kubeconfig: outside a pod the endpoint finds
	// no in-cluster configuration and reads $KUBECONFIG.
	token, err := cl.adminKube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, s.deployment.Spec.Template.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["provider"] = &clientcmdapi.Cluster{Server: cl.tc.Host(), CertificateAuthorityData: cl.tc.CA()}
	kc.AuthInfos["kubepact-enrolment"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["kubepact-enrolment"] = &clientcmdapi.Context{Cluster: "provider", AuthInfo: "kubepact-enrolment", Namespace: ns}
	kc.CurrentContext = "kubepact-enrolment"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))

	// A consumer committed and granted, before the endpoint starts.
	ca, _, err := csr.GenerateCA(nil, "provider CA", time.Now(), time.Hour)
	require.NoError(t, err)
	granted := newConsumer(t, "consumer-granted", key, ca)
	cl.commit(t, granted, metav1.ConditionTrue)

	runArgs, addr := s.forTheTest(t, mountDir)
	var logs syncWriter
	cmd := exec.CommandContext(ctx, bin, runArgs...)
	cmd.Env = testenv.New(t, testenv.Options{Kubeconfig: kubeconfig})
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("kubepact-enrolment %q:\n%s", runArgs, logs.String())
		}
	})
	base := "https://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("kubepact-enrolment exited before it was ready: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if ready(base) {
			break
		}
		require.True(t, time.Now().Before(deadline), "kubepact-enrolment ready within 30s")
	}

	// Every request to the grants' handler counts against the client's
	// budget; the probes do not.
	requests, first := 0, time.Now()
	client := &enrolhttp.Client{EnrolmentKeys: []crypto.PublicKey{key.Public()}, Timeout: 5 * time.Second}
	g, err := client.Fetch(ctx, base, granted.request)
	requests++
	require.NoError(t, err, "the granted consumer's grant")
	assert.Equal(t, granted.grant, g)
	pin, err := enrol.CAPin(ca)
	require.NoError(t, err)
	_, err = enrol.VerifyGrant(g, enrol.Trust{
		ProviderID: providerID, ConsumerID: granted.id, EnrolmentKeys: client.EnrolmentKeys, CASHA256: pin, Request: granted.request,
	})
	require.NoError(t, err, "the grant verifies")

	unknown := newConsumer(t, "consumer-unknown", key, ca)
	_, err = client.Fetch(ctx, base, unknown.request)
	requests++
	assert.ErrorIs(t, err, enrolhttp.ErrNotAuthorized, "an unknown consumer")

	// The answers themselves: one 404 "not authorized", whatever is not
	// authorized.
	raw := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the certificate is checked by client.Fetch above; only the answer is looked at
	get := func(id, csrSHA256 string) (int, string) {
		t.Helper()
		requests++
		resp, err := raw.Get(base + enrolhttp.GrantsPath + id + "?" + url.Values{enrolhttp.CSRParam: {csrSHA256}}.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get(unknown.id, unknown.request.CSRSHA256())
	assert.Equal(t, http.StatusNotFound, code, "an unknown consumer")
	assert.Equal(t, enrolhttp.ErrNotAuthorized.Error()+"\n", body, "an unknown consumer")
	otherCode, otherBody := get(granted.id, unknown.request.CSRSHA256())
	assert.Equal(t, code, otherCode, "another CSR of a granted consumer")
	assert.Equal(t, body, otherBody, "another CSR of a granted consumer")
	okCode, okBody := get(granted.id, granted.request.CSRSHA256())
	assert.Equal(t, http.StatusOK, okCode, "the granted consumer, raw")
	assert.Contains(t, okBody, `"consumerID":"`+granted.id+`"`)

	// The shipped --rate and --burst reach the handler: past the burst
	// and what the rate refilled since the first request, 429.
	require.Greater(t, shippedOptions.burst, requests, "the shipped burst outlasts the requests above")
	allowed := requests
	limited := false
	for range 10 * shippedOptions.burst {
		code, _ := get(unknown.id, unknown.request.CSRSHA256())
		if code == http.StatusTooManyRequests {
			limited = true
			break
		}
		require.Equal(t, http.StatusNotFound, code)
		allowed++
	}
	elapsed := time.Since(first)
	t.Logf("%d requests allowed in %s at --rate=%g --burst=%d", allowed, elapsed.Round(time.Millisecond), shippedOptions.rate, shippedOptions.burst)
	require.True(t, limited, "a client is limited")
	assert.GreaterOrEqual(t, allowed, shippedOptions.burst, "the shipped burst is allowed")
	assert.LessOrEqual(t, float64(allowed), float64(shippedOptions.burst)+shippedOptions.rate*elapsed.Seconds()+1,
		"at most the shipped burst and rate: %d requests in %s", allowed, elapsed)
	assert.Equal(t, http.StatusOK, probe(t, base+"/healthz"), "probes are not limited")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit code 0 on SIGTERM")
	case <-time.After(20 * time.Second):
		t.Fatal("kubepact-enrolment did not stop within 20s of SIGTERM")
	}
	out := logs.String()
	assert.NotContains(t, out, `"level":"error"`, "no error logged")
	assert.NotContains(t, out, "goroutine ", "no stack trace")
	assert.Contains(t, out, `"msg":"serving grants"`)
}

// applyObjects applies objects to cl as kubectl apply does, with
// server-side apply.
func applyObjects(ctx context.Context, t *testing.T, cl *cluster, objects []*unstructured.Unstructured) {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cl.adminKube.Discovery()))
	for _, u := range objects {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
		var ri dynamic.ResourceInterface = cl.adminDyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = cl.adminDyn.Resource(m.Resource).Namespace(u.GetNamespace())
		} else {
			u.SetNamespace("") // kustomize may not know a kind is cluster-scoped
		}
		_, err = ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
		require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
	}
}

// ready reports whether the endpoint at base answers /readyz with 200.
func ready(base string) bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a probe, as the kubelet's
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

const (
	providerID = "provider-1"
	// serviceAccount is the endpoint's, as config/enrolment binds it.
	serviceAccount = "system:serviceaccount:kubepact-system:kubepact-enrolment"
)

// cluster is a real API server with the CRDs installed, the endpoint's
// ClusterRole bound to its ServiceAccount, and clients as the
// administrator and as that ServiceAccount.
type cluster struct {
	tc                *testcluster.Cluster
	admin, sa         *rest.Config
	adminPeering      *rest.RESTClient
	saPeering         *rest.RESTClient
	adminKube, saKube kubernetes.Interface
	adminDyn, saDyn   dynamic.Interface
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := newCluster(t)
	ctx := t.Context()

	// The ClusterRole exactly as shipped, bound to the ServiceAccount.
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "enrolment", "rbac", "cluster_role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	_, err = c.adminKube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.adminKube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kubepact-system", Name: "kubepact-enrolment"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return c
}

// newCluster is a cluster with the CRDs installed and the clients, but no
// RBAC for the ServiceAccount.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	tc := testcluster.StartT(t)
	ctx := t.Context()
	c := &cluster{tc: tc, admin: tc.AdminConfig()}
	c.sa = rest.CopyConfig(c.admin)
	c.sa.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kubepact-system", "system:authenticated"},
	}
	var err error
	for _, s := range []struct {
		cfg     *rest.Config
		peering **rest.RESTClient
		kube    *kubernetes.Interface
		dyn     *dynamic.Interface
	}{{c.admin, &c.adminPeering, &c.adminKube, &c.adminDyn}, {c.sa, &c.saPeering, &c.saKube, &c.saDyn}} {
		*s.peering, err = newRESTClient(s.cfg)
		require.NoError(t, err)
		*s.kube, err = kubernetes.NewForConfig(s.cfg)
		require.NoError(t, err)
		*s.dyn, err = dynamic.NewForConfig(s.cfg)
		require.NoError(t, err)
	}

	// authentication.liqo.io (Tenants) and peering.kubepact.io
	require.NoError(t, kube.InstallCRDs(ctx, c.admin))
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		var list peeringv1alpha1.AuthorizedConsumerList
		assert.NoError(c2, c.adminPeering.Get().Resource(peeringv1alpha1.AuthorizedConsumerResource).Do(ctx).Into(&list))
	}, 30*time.Second, 100*time.Millisecond, "authorizedconsumers served")
	return c
}

// consumer is one consumer's request, and the grant the provider signs
// for it.
type consumer struct {
	id      string
	cluster *keys.PrivateKey
	request *enrol.Request
	grant   *peeringv1alpha1.Grant
}

func newConsumer(t *testing.T, id string, enrolment *keys.PrivateKey, ca []byte) consumer {
	t.Helper()
	c := consumer{id: id, cluster: generateKey(t)}
	var err error
	c.request, err = enrol.NewRequest(nil, providerID, id, c.cluster, generateKey(t))
	require.NoError(t, err)
	c.grant, err = enrol.NewGrant(nil, enrolment, c.request, &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		Namespace:  ptr.To(clusterid.TenantNamespace(id)),
		AuthParams: authv1beta1.AuthParams{CA: ca, SignedCRT: []byte("certificate"), APIServer: "https://provider.example:6443"},
	}})
	require.NoError(t, err)
	return c
}

// commit creates c's AuthorizedConsumer as the administrator, then
// writes its status, with the grant, through the status subresource: Ready
// is ready, for the object's generation.
func (cl *cluster) commit(t *testing.T, c consumer, ready metav1.ConditionStatus) *peeringv1alpha1.AuthorizedConsumer {
	t.Helper()
	pub, err := keys.MarshalPublicKey(c.cluster.Public())
	require.NoError(t, err)
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: c.id},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: c.id, PublicKeys: []string{string(pub)}, Request: c.request.API()},
	}
	var created peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, cl.adminPeering.Post().Resource(peeringv1alpha1.AuthorizedConsumerResource).Body(ac).Do(t.Context()).Into(&created))
	return cl.setStatus(t, &created, c.grant, ready)
}

func (cl *cluster) setStatus(t *testing.T, ac *peeringv1alpha1.AuthorizedConsumer, g *peeringv1alpha1.Grant, ready metav1.ConditionStatus) *peeringv1alpha1.AuthorizedConsumer {
	t.Helper()
	ac = ac.DeepCopy()
	ac.Status = peeringv1alpha1.AuthorizedConsumerStatus{
		ObservedGeneration: ac.Generation,
		Conditions: []metav1.Condition{{
			Type: peeringv1alpha1.ConditionReady, Status: ready, Reason: "Test", ObservedGeneration: ac.Generation,
			LastTransitionTime: metav1.Now(),
		}},
		Grant: g,
	}
	var updated peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, cl.adminPeering.Put().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(ac.Name).SubResource("status").
		Body(ac).Do(t.Context()).Into(&updated))
	return &updated
}

// tlsFiles writes a serving key pair issued by enrolment into dir.
func tlsFiles(t *testing.T, dir string, enrolment *keys.PrivateKey) (string, string) {
	t.Helper()
	return writePair(t, dir, enrolment, time.Now())
}

// start runs the endpoint as the ServiceAccount with args, and returns
// its address once it is ready, and the function that stops it as SIGTERM
// does and returns what run returned. The test's cleanup stops it too.
func (cl *cluster) start(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	addrs := make(chan net.Addr, 1)
	listening = func(a net.Addr) { addrs <- a }
	t.Cleanup(func() { listening = nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr := &syncWriter{}
	go func() {
		done <- run(ctx, append([]string{"--bind-address=127.0.0.1:0"}, args...), cl.sa, &bytes.Buffer{}, stderr)
	}()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				stopErr = errors.New("the endpoint did not stop within 20s")
			}
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("the endpoint's log:\n%s", stderr.String())
		}
	})
	var addr string
	select {
	case a := <-addrs:
		addr = a.String()
	case err := <-done:
		t.Fatalf("the endpoint stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the endpoint does not listen")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, http.StatusOK, probe(c, "https://"+addr+"/readyz"))
	}, 30*time.Second, 50*time.Millisecond, "ready")
	return addr, stop
}

// probe gets url as the kubelet's probes do, without checking the
// certificate, and returns the status code.
func probe(t assert.TestingT, url string) int {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url)
	if !assert.NoError(t, err) {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestEndpoint runs the endpoint as its ServiceAccount, holding exactly the
// shipped ClusterRole, against a real API server, fetches grants from it
// as a consumer does, and tries what that ServiceAccount must not do.
func TestEndpoint(t *testing.T) {
	cl := startCluster(t)
	ca, _, err := csr.GenerateCA(nil, "provider CA", time.Now(), time.Hour)
	require.NoError(t, err)
	enrolment := generateKey(t)
	dir := t.TempDir()
	certFile, keyFile := tlsFiles(t, dir, enrolment)

	ready := newConsumer(t, "consumer-ready", enrolment, ca)
	cl.commit(t, ready, metav1.ConditionTrue)
	notReady := newConsumer(t, "consumer-not-ready", enrolment, ca)
	notReadyAC := cl.commit(t, notReady, metav1.ConditionFalse)
	stale := newConsumer(t, "consumer-stale", enrolment, ca)
	staleAC := cl.commit(t, stale, metav1.ConditionTrue)
	// A change of the spec after the status: the controller has not judged
	// generation 2.
	staleAC.Spec.PublicKeys = append(staleAC.Spec.PublicKeys, mustPublicPEM(t, generateKey(t)))
	require.NoError(t, cl.adminPeering.Put().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(staleAC.Name).Body(staleAC).Do(t.Context()).Into(staleAC))
	require.Equal(t, int64(2), staleAC.Generation)

	addr, stop := cl.start(t, "--tls-cert-file="+certFile, "--tls-key-file="+keyFile, "--rate=1000", "--burst=1000")
	url := "https://" + addr
	client := &enrolhttp.Client{EnrolmentKeys: []crypto.PublicKey{enrolment.Public()}, Timeout: 5 * time.Second}
	pin, err := enrol.CAPin(ca)
	require.NoError(t, err)

	t.Run("served", func(t *testing.T) {
		g, err := client.Fetch(t.Context(), url, ready.request)
		require.NoError(t, err)
		assert.Equal(t, ready.grant, g)
		_, err = enrol.VerifyGrant(g, enrol.Trust{
			ProviderID: providerID, ConsumerID: ready.id, EnrolmentKeys: client.EnrolmentKeys, CASHA256: pin, Request: ready.request,
		})
		assert.NoError(t, err)
	})
	t.Run("not authorized", func(t *testing.T) {
		for name, r := range map[string]*enrol.Request{
			"not Ready":                   notReady.request,
			"Ready for an old generation": stale.request,
			"unknown":                     newConsumer(t, "consumer-unknown", enrolment, ca).request,
			"another CSR":                 newConsumer(t, ready.id, enrolment, ca).request,
		} {
			_, err := client.Fetch(t.Context(), url, r)
			assert.ErrorIs(t, err, enrolhttp.ErrNotAuthorized, name)
		}
	})
	t.Run("follows the watch", func(t *testing.T) {
		cl.setStatus(t, notReadyAC, notReady.grant, metav1.ConditionTrue)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			g, err := client.Fetch(t.Context(), url, notReady.request)
			assert.NoError(c, err)
			assert.Equal(c, notReady.grant, g)
		}, 10*time.Second, 50*time.Millisecond, "served once Ready")

		require.NoError(t, cl.adminPeering.Delete().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(ready.id).Do(t.Context()).Error())
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := client.Fetch(t.Context(), url, ready.request)
			assert.ErrorIs(c, err, enrolhttp.ErrNotAuthorized)
		}, 10*time.Second, 50*time.Millisecond, "forgotten once deleted")
	})
	t.Run("renewed TLS key pair", func(t *testing.T) {
		// The enrolment key rotates: the Secret now holds a certificate of
		// the next key, and a consumer that committed only the next key
		// gets in once the endpoint has re-read the files.
		next := generateKey(t)
		writePair(t, dir, next, time.Now().Add(time.Minute))
		nextClient := &enrolhttp.Client{EnrolmentKeys: []crypto.PublicKey{next.Public()}, Timeout: 5 * time.Second}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := nextClient.Fetch(t.Context(), url, notReady.request)
			assert.NoError(c, err)
		}, 10*time.Second, 100*time.Millisecond)
		_, err := client.Fetch(t.Context(), url, notReady.request)
		assert.ErrorIs(t, err, enrol.ErrEndpointCertificate, "the old key's consumers no longer recognise it")
	})
	t.Run("healthz", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, probe(t, url+"/healthz"))
	})
	t.Run("HTTP/1.1 only", func(t *testing.T) {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}},
		}}
		resp, err := c.Get(url + "/healthz")
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, 1, resp.ProtoMajor, "no HTTP/2")
	})
	t.Run("the ServiceAccount may do nothing else", func(t *testing.T) {
		ctx := t.Context()
		tenants := schema.GroupVersionResource{Group: authv1beta1.SchemeGroupVersion.Group, Version: authv1beta1.SchemeGroupVersion.Version, Resource: "tenants"}
		tenant := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": authv1beta1.SchemeGroupVersion.String(), "kind": authv1beta1.TenantKind,
			"metadata": map[string]any{"name": "consumer-x", "namespace": "default"},
			"spec":     map[string]any{"clusterID": "consumer-x"},
		}}
		ac := &peeringv1alpha1.AuthorizedConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: "consumer-x"},
			Spec: peeringv1alpha1.AuthorizedConsumerSpec{
				ClusterID: "consumer-x", PublicKeys: []string{mustPublicPEM(t, generateKey(t))}, Request: ready.request.API(),
			},
		}
		existing := notReadyAC.DeepCopy()
		existing.Status.Grant = ready.grant
		for name, call := range map[string]func() error{
			"get a Secret": func() error {
				_, err := cl.saKube.CoreV1().Secrets("kube-system").Get(ctx, "any", metav1.GetOptions{})
				return err
			},
			"list Secrets": func() error {
				_, err := cl.saKube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
				return err
			},
			"create a Tenant": func() error {
				_, err := cl.saDyn.Resource(tenants).Namespace("default").Create(ctx, tenant, metav1.CreateOptions{})
				return err
			},
			"create an AuthorizedConsumer": func() error {
				return cl.saPeering.Post().Resource(peeringv1alpha1.AuthorizedConsumerResource).Body(ac).Do(ctx).Error()
			},
			"update an AuthorizedConsumer": func() error {
				return cl.saPeering.Put().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(existing.Name).Body(existing).Do(ctx).Error()
			},
			"update an AuthorizedConsumer's status": func() error {
				return cl.saPeering.Put().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(existing.Name).SubResource("status").
					Body(existing).Do(ctx).Error()
			},
			"delete an AuthorizedConsumer": func() error {
				return cl.saPeering.Delete().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(existing.Name).Do(ctx).Error()
			},
			"get an AuthorizedConsumer by name": func() error {
				return cl.saPeering.Get().Resource(peeringv1alpha1.AuthorizedConsumerResource).Name(existing.Name).Do(ctx).Error()
			},
			"list TrustedProviders": func() error {
				return cl.saPeering.Get().Resource(peeringv1alpha1.TrustedProviderResource).Do(ctx).Error()
			},
		} {
			err := call()
			assert.Truef(t, apierrors.IsForbidden(err), "%s: %v, want Forbidden", name, err)
		}
		// What it needs, it may.
		var list peeringv1alpha1.AuthorizedConsumerList
		assert.NoError(t, cl.saPeering.Get().Resource(peeringv1alpha1.AuthorizedConsumerResource).Do(ctx).Into(&list))
	})
	t.Run("rate limit", func(t *testing.T) {
		// --rate and --burst reach the handler: a second endpoint allows
		// this client three requests.
		certFile, keyFile := tlsFiles(t, t.TempDir(), enrolment)
		addr, _ := cl.start(t, "--tls-cert-file="+certFile, "--tls-key-file="+keyFile, "--rate=0.001", "--burst=3")
		for i := range 3 {
			_, err := client.Fetch(t.Context(), "https://"+addr, notReady.request)
			require.NoError(t, err, "request %d", i)
		}
		_, err := client.Fetch(t.Context(), "https://"+addr, notReady.request)
		require.Error(t, err)
		assert.NotErrorIs(t, err, enrolhttp.ErrNotAuthorized, "429 is no answer about the consumer")
		assert.Equal(t, http.StatusOK, probe(t, "https://"+addr+"/healthz"), "probes are not limited")
	})
	t.Run("the binary", func(t *testing.T) {
		certFile, keyFile := tlsFiles(t, t.TempDir(), enrolment)
		testBinary(t, cl, client, notReady.request, "--tls-cert-file="+certFile, "--tls-key-file="+keyFile)
	})
	t.Run("stops cleanly", func(t *testing.T) {
		require.NoError(t, stop(), "SIGTERM: run returns nil")
		_, err := net.DialTimeout("tcp", addr, time.Second)
		assert.Error(t, err, "the listener is closed")
	})
}

// testBinary builds kubepact-enrolment and runs it as a Deployment
// would, with a kubeconfig of the ServiceAccount (by impersonation) and
// args: it serves r's grant to client, then exits 0 on SIGTERM. --help
// exits 0 and a bad flag 2.
func testBinary(t *testing.T, cl *cluster, client *enrolhttp.Client, r *enrol.Request, args ...string) {
	dir := t.TempDir()
	bin := buildBinary(t)

	kc, err := clientcmd.Load(cl.tc.AdminKubeconfig())
	require.NoError(t, err)
	for _, a := range kc.AuthInfos {
		a.Impersonate = serviceAccount
		a.ImpersonateGroups = cl.sa.Impersonate.Groups
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))

	env := testenv.New(t, testenv.Options{})
	for code, args := range map[int][]string{0: {"--help"}, 2: {"--no-such-flag"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		err := cmd.Run()
		if code == 0 {
			assert.NoError(t, err, args)
		} else {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, args)
			assert.Equal(t, code, exit.ExitCode(), args)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfig, "--bind-address=" + addr}, args...)...)
	cmd.Env = env
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("kubepact-enrolment's log:\n%s", stderr.String())
		}
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, http.StatusOK, probe(c, "https://"+addr+"/readyz"))
	}, 30*time.Second, 100*time.Millisecond, "ready")
	_, err = client.Fetch(t.Context(), "https://"+addr, r)
	require.NoError(t, err)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NoError(t, err, "SIGTERM exits 0")
	case <-time.After(20 * time.Second):
		t.Fatal("no exit 20s after SIGTERM")
	}
}

// buildBinary builds kubepact-enrolment and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubepact-enrolment")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = testenv.New(t, testenv.Options{Go: true})
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func mustPublicPEM(t *testing.T, k *keys.PrivateKey) string {
	t.Helper()
	b, err := keys.MarshalPublicKey(k.Public())
	require.NoError(t, err)
	return string(b)
}

// syncWriter serialises writes: the endpoint logs from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// TestPeeringFromGitAsShipped peers two clusters from Git with both
// controllers as config/ ships them: its RBAC and admission policies, the
// Deployment's args, as the ServiceAccount. The provider's controller
// keeps its enrolment key, its record and the endpoint's certificate in
// its own namespace, grants the AuthorizedConsumer, and the consumer's
// controller applies the grant of its TrustedProvider.
func TestPeeringFromGitAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-gitops-p"}, peer{consumerEnv, "ctl-gitops-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	_, ac, tp := peerFromGit(ctx, t, a, b, enrolhttp.Limits{PerClient: 100, Burst: 100})
	requireControlPlaneWorks(ctx, t, a, b)

	require.NoError(t, a.typed.Delete(ctx, ac))
	require.NoError(t, b.typed.Delete(ctx, tp))
	waitFor(t, "both objects gone, through their controllers", func() bool {
		return apierrors.IsNotFound(a.typed.Get(ctx, client.ObjectKeyFromObject(ac), &peeringv1alpha1.AuthorizedConsumer{})) &&
			apierrors.IsNotFound(b.typed.Get(ctx, client.ObjectKeyFromObject(tp), &peeringv1alpha1.TrustedProvider{}))
	})
}

// enrolmentEndpoint serves a's enrolment endpoint as kubepact-enrolment
// serves it (its lookup, the certificate a's controller keeps, limits) and
// returns it with the TrustedProvider that commits a at it.
func enrolmentEndpoint(ctx context.Context, t testing.TB, a peer, limits enrolhttp.Limits, wrap func(http.Handler) http.Handler) (*httptest.Server, *peeringv1alpha1.TrustedProvider) {
	t.Helper()
	// The endpoint, as kubepact-enrolment serves it, with the certificate
	// the provider's controller keeps.
	var serving *corev1.Secret
	require.Eventually(t, func() bool {
		s, err := a.admin.CoreV1().Secrets("kubepact-system").Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
		serving = s
		return err == nil
	}, twoWayWait, 100*time.Millisecond, "the enrolment endpoint's certificate, within %s", twoWayWait)
	pair, err := tls.X509KeyPair(serving.Data[corev1.TLSCertKey], serving.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	var h http.Handler = enrolhttp.NewHandler(func(id string) *peeringv1alpha1.Grant {
		var ac peeringv1alpha1.AuthorizedConsumer
		if err := a.typed.Get(ctx, client.ObjectKey{Name: id}, &ac); err != nil ||
			!meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) || ac.Status.ObservedGeneration != ac.Generation {
			return nil
		}
		return ac.Status.Grant
	}, limits)
	if wrap != nil {
		h = wrap(h) // to watch what the endpoint answers
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	record, err := kube.NewEnrolmentKeyRecord(a.admin, "kubepact-system").Get(ctx)
	require.NoError(t, err)
	recordPEM, err := keys.MarshalPublicKey(record)
	require.NoError(t, err)
	pin, err := enrol.CAPin(a.cluster.CA())
	require.NoError(t, err)

	tp := &peeringv1alpha1.TrustedProvider{
		ObjectMeta: metav1.ObjectMeta{Name: a.id},
		Spec: peeringv1alpha1.TrustedProviderSpec{ClusterID: a.id, Endpoint: srv.URL, CASHA256: pin,
			EnrolmentKeys: []string{string(recordPEM)}},
	}
	return srv, tp
}

// adminConsumer is c's consumer as an administrator runs it (kubepact
// generate authorized-consumer): its own keyring, from c's admin
// credentials.
func adminConsumer(t testing.TB, c peer) *consumer.Consumer {
	t.Helper()
	cons, err := consumer.New(c.id, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(c.admin), Keys: kube.NewKeyStore(c.admin, keys.DefaultNamespace),
			Identities: kube.NewIdentityStore(c.typed), Secrets: kube.NewSecretWriter(c.admin),
		},
		IdentityKeys: kube.NewKeyring(c.admin, keys.DefaultNamespace),
	}, &consumer.Options{KeyNamespace: keys.DefaultNamespace})
	require.NoError(t, err)
	return cons
}

// peerFromGit serves a's enrolment endpoint (enrolmentEndpoint), commits
// a TrustedProvider on b, then the AuthorizedConsumer of its request on
// a, and waits until both are Ready.
func peerFromGit(ctx context.Context, t *testing.T, a, b peer, limits enrolhttp.Limits) (*httptest.Server, *peeringv1alpha1.AuthorizedConsumer, *peeringv1alpha1.TrustedProvider) {
	t.Helper()
	return peerFromGitWith(ctx, t, a, b, limits, nil)
}

// peerFromGitWith is peerFromGit with the AuthorizedConsumer's
// spec.policy.
func peerFromGitWith(ctx context.Context, t *testing.T, a, b peer, limits enrolhttp.Limits,
	policy *peeringv1alpha1.ConsumerPolicy) (*httptest.Server, *peeringv1alpha1.AuthorizedConsumer, *peeringv1alpha1.TrustedProvider) {
	t.Helper()
	srv, tp := enrolmentEndpoint(ctx, t, a, limits, nil)
	require.NoError(t, b.typed.Create(ctx, tp))
	t.Cleanup(func() { _ = b.typed.Delete(context.Background(), tp) })
	waitFor(t, "the TrustedProvider's request", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return tp.Status.Request != nil
	})
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: b.id},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: b.id, PublicKeys: []string{tp.Status.PublicKey},
			Request: *tp.Status.Request, Policy: policy},
	}
	require.NoError(t, a.typed.Create(ctx, ac))
	t.Cleanup(func() { _ = a.typed.Delete(context.Background(), ac) })
	waitFor(t, "the AuthorizedConsumer granted", func() bool {
		require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	waitFor(t, "the TrustedProvider ready (it asks every 30 s)", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	return srv, ac, tp
}

// TestStrangersWriteNothing peers two clusters from Git as shipped, then
// sends the provider's enrolment endpoint 1,000 requests no one was
// granted: unknown consumer IDs, the committed consumer with CSRs it did
// not commit, and paths and methods that name no grant. Each gets the same
// 404 "not authorized", and the provider holds exactly the objects it held
// before (namespaces, Secrets, ConfigMaps, Tenants, bindings, CSRs,
// Events), its AuthorizedConsumer unchanged.
func TestStrangersWriteNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-strangers-p"}, peer{consumerEnv, "ctl-strangers-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	srv, ac, _ := peerFromGit(ctx, t, a, b, enrolhttp.Limits{PerClient: 10000, Burst: 10000})
	// Other tests' namespaces may still be terminating: count once the
	// cluster is quiet.
	var before map[string]string
	waitFor(t, "the provider quiet", func() bool {
		first := providerObjects(ctx, t, a)
		time.Sleep(time.Second)
		before = providerObjects(ctx, t, a)
		return maps.Equal(first, before)
	})

	// A stranger need not check who serves: it asks whatever answers.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}, //nolint:gosec // the stranger's side
	}}
	bad := func(k int) (string, string) {
		hash := fmt.Sprintf("%064x", k)
		switch k % 4 {
		case 0:
			return http.MethodGet, fmt.Sprintf("%s%scl-stranger-%d?%s=%s", srv.URL, enrolhttp.GrantsPath, k, enrolhttp.CSRParam, hash)
		case 1:
			return http.MethodGet, fmt.Sprintf("%s%s%s?%s=%s", srv.URL, enrolhttp.GrantsPath, b.id, enrolhttp.CSRParam, hash)
		case 2:
			return http.MethodPost, fmt.Sprintf("%s%s%s?%s=%s", srv.URL, enrolhttp.GrantsPath, b.id, enrolhttp.CSRParam, ac.Status.Grant.CSRSHA256)
		default:
			return http.MethodGet, fmt.Sprintf("%s%s../%s/%d", srv.URL, enrolhttp.GrantsPath, b.id, k)
		}
	}
	for k := range 1000 {
		method, url := bad(k)
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s %s", method, url)
		require.Equal(t, enrolhttp.ErrNotAuthorized.Error(), strings.TrimSpace(string(body)), "the same answer to every stranger")
	}

	after := providerObjects(ctx, t, a)
	require.Equal(t, before, after, "1,000 requests no one was granted wrote nothing on the provider")
}

// providerObjects counts what p's cluster holds, by kind, with the
// AuthorizedConsumers' resourceVersions: what a stranger's request could
// have made or changed.
func providerObjects(ctx context.Context, t *testing.T, p peer) map[string]string {
	t.Helper()
	out := map[string]string{}
	count := func(kind string, n int, err error) {
		require.NoError(t, err, kind)
		out[kind] = strconv.Itoa(n)
	}
	ns, err := p.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	count("namespaces", len(ns.Items), err)
	secrets, err := p.admin.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	count("secrets", len(secrets.Items), err)
	cms, err := p.admin.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	count("configmaps", len(cms.Items), err)
	rbs, err := p.admin.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	count("rolebindings", len(rbs.Items), err)
	crbs, err := p.admin.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	count("clusterrolebindings", len(crbs.Items), err)
	csrs, err := p.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	count("certificatesigningrequests", len(csrs.Items), err)
	events, err := p.admin.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	count("events", len(events.Items), err)
	var tenants authv1beta1.TenantList
	err = p.typed.List(ctx, &tenants)
	count("tenants", len(tenants.Items), err)
	var acs peeringv1alpha1.AuthorizedConsumerList
	require.NoError(t, p.typed.List(ctx, &acs))
	for _, ac := range acs.Items {
		out["authorizedconsumer/"+ac.Name] = ac.ResourceVersion
	}
	return out
}

// TestPeeringFromGitProviderFirst commits the provider's object first: the
// AuthorizedConsumer the consumer's cluster makes as kubepact generate
// authorized-consumer does (its cluster key, its request, from its own
// keyring), applied before the consumer commits anything. The provider
// grants it at once; the TrustedProvider, committed later, makes the same
// request from the same keyring, fetches that grant at its first look, and
// the consumer's ControlPlane identity works: the same result as the other
// order (TestPeeringFromGitAsShipped).
func TestPeeringFromGitProviderFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-first-p"}, peer{consumerEnv, "ctl-first-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	_, tp := enrolmentEndpoint(ctx, t, a, enrolhttp.Limits{PerClient: 100, Burst: 100}, nil)

	c := adminConsumer(t, b)
	r, err := c.EnrolmentRequest(ctx, a.id, nil)
	require.NoError(t, err)
	pub, err := c.PublicKey(ctx)
	require.NoError(t, err)
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: b.id},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: b.id, PublicKeys: []string{publicPEM(t, pub)}, Request: r.API()},
	}
	require.NoError(t, a.typed.Create(ctx, ac))
	t.Cleanup(func() { _ = a.typed.Delete(context.Background(), ac) })
	waitFor(t, "the AuthorizedConsumer granted before the consumer commits anything", func() bool {
		require.NoError(t, a.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
		return meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady)
	})

	require.NoError(t, b.typed.Create(ctx, tp))
	t.Cleanup(func() { _ = b.typed.Delete(context.Background(), tp) })
	waitFor(t, "the TrustedProvider ready at its first look", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	})
	require.Equal(t, r.API(), *tp.Status.Request, "the same request, from the same keyring")
	requireControlPlaneWorks(ctx, t, a, b)
}

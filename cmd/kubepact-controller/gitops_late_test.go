package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
)

// consumerPoll is how often the consumer's controller asks the provider's
// endpoint again while it is not authorized: the controllers package's
// notAuthorizedPoll, which this package cannot read.
const consumerPoll = 30 * time.Second

// providerLate is how long after the consumer's TrustedProvider the
// provider's AuthorizedConsumer is committed in
// TestPeeringFromGitProviderMinutesLate: four of the consumer's polls
// (consumerPoll), so that besides its first look three more are refused
// while nothing is committed, and the test sees a consumer that keeps
// asking with the same request and a provider that keeps writing nothing,
// not just the first refusal.
const providerLate = 2 * time.Minute

// lateReadyMargin is what the provider's grant (its Tenant accepted, the
// CSR signed by kube-controller-manager, the grant signed) and the
// consumer's apply may take beyond the poll that fetches the grant.
const lateReadyMargin = 20 * time.Second

// endpointAnswers counts the status codes an enrolment endpoint answered.
type endpointAnswers struct {
	mu    sync.Mutex
	codes map[int]int
}

// count returns how many answers had code, and how many there were.
func (a *endpointAnswers) count(code int) (n, all int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c, k := range a.codes {
		all += k
		if c == code {
			n += k
		}
	}
	return n, all
}

// wrap returns h, counting its answers in a.
func (a *endpointAnswers) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.codes == nil {
			a.codes = map[int]int{}
		}
		a.codes[code]++
	})
}

// statusRecorder records the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// selfSubjectReview asks p's API server who c is, with the ControlPlane
// kubeconfig c holds for p, and returns the user name it answers.
func selfSubjectReview(ctx context.Context, p, c peer) (string, error) {
	s, err := c.admin.CoreV1().Secrets(clusterid.TenantNamespace(p.id)).Get(ctx, kubeconfig.SecretName(identity.ControlPlaneName(p.id)), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	if err != nil {
		return "", err
	}
	rc, err := cfg.RESTConfig()
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// requireNothingWrittenFor checks that p holds nothing for consumer c:
// no AuthorizedConsumer, no tenant namespace, no Tenant, and no
// CertificateSigningRequest labelled with c's ID or asking for csrPEM.
func requireNothingWrittenFor(ctx context.Context, t *testing.T, p, c peer, csrPEM string) {
	t.Helper()
	err := p.typed.Get(ctx, client.ObjectKey{Name: c.id}, &peeringv1alpha1.AuthorizedConsumer{})
	require.True(t, apierrors.IsNotFound(err), "no AuthorizedConsumer %s: %v", c.id, err)
	_, err = p.admin.CoreV1().Namespaces().Get(ctx, clusterid.TenantNamespace(c.id), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no tenant namespace for %s: %v", c.id, err)
	var tenants authv1beta1.TenantList
	require.NoError(t, p.typed.List(ctx, &tenants))
	for _, tn := range tenants.Items {
		require.False(t, tn.Name == c.id || tn.Namespace == clusterid.TenantNamespace(c.id), "Tenant %s/%s", tn.Namespace, tn.Name)
	}
	csrs, err := p.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range csrs.Items {
		require.NotEqual(t, c.id, o.Labels[clusterid.Label], "CertificateSigningRequest %s", o.Name)
		require.NotEqual(t, csrPEM, string(o.Spec.Request), "CertificateSigningRequest %s asks for the consumer's request", o.Name)
	}
}

// TestPeeringFromGitProviderMinutesLate commits the consumer's
// TrustedProvider first and the provider's AuthorizedConsumer only
// providerLate later, both controllers as shipped. All that time the
// TrustedProvider is Reconciling, NotAuthorized, publishing one request,
// the consumer's polls are refused, and the provider writes nothing for
// the consumer. Once the AuthorizedConsumer of that request is committed,
// the TrustedProvider is Ready within a poll, with the very request it
// published (nothing made again), and the consumer's ControlPlane identity
// works on the provider.
func TestPeeringFromGitProviderMinutesLate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), providerLate+4*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-late-p"}, peer{consumerEnv, "ctl-late-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	answers := &endpointAnswers{}
	_, tp := enrolmentEndpoint(ctx, t, a, enrolhttp.Limits{PerClient: 100, Burst: 100}, answers.wrap)

	require.NoError(t, b.typed.Create(ctx, tp))
	t.Cleanup(func() { _ = b.typed.Delete(context.Background(), tp) })
	notAuthorized := func(tp *peeringv1alpha1.TrustedProvider) bool {
		c := meta.FindStatusCondition(tp.Status.Conditions, peeringv1alpha1.ConditionReconciling)
		return tp.Status.ObservedGeneration == tp.Generation && c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == contract.ReasonNotAuthorized && !meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	}
	waitFor(t, "the TrustedProvider not authorized, its request published", func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return tp.Status.Request != nil && notAuthorized(tp)
	})
	published := tp.Status.Request.DeepCopy()
	publicKey := tp.Status.PublicKey
	require.Equal(t, b.id, tp.Status.ConsumerID)
	refusedAtFirst, _ := answers.count(http.StatusNotFound)
	require.GreaterOrEqual(t, refusedAtFirst, 1, "the first look was refused")

	// The gap: the provider's administrators have not committed anything
	// yet. The consumer keeps asking, the same request, and is refused;
	// the provider writes nothing for it.
	gapEnd := time.Now().Add(providerLate)
	for time.Now().Before(gapEnd) {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		require.True(t, notAuthorized(tp), "the TrustedProvider stays not authorized: %+v", tp.Status.Conditions)
		require.Equal(t, published, tp.Status.Request, "the published request stays the same")
		require.Equal(t, publicKey, tp.Status.PublicKey)
		requireNothingWrittenFor(ctx, t, a, b, published.CSR)
		time.Sleep(2 * time.Second)
	}
	refused, all := answers.count(http.StatusNotFound)
	require.Equal(t, all, refused, "every poll of the gap was refused")
	require.GreaterOrEqual(t, refused, int(providerLate/consumerPoll),
		"the first look and a poll every %s were refused in %s", consumerPoll, providerLate)

	// The provider's administrators commit the request the consumer
	// published minutes ago.
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: b.id},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: b.id, PublicKeys: []string{publicKey}, Request: *published},
	}
	committed := time.Now()
	require.NoError(t, a.typed.Create(ctx, ac))
	t.Cleanup(func() { _ = a.typed.Delete(context.Background(), ac) })
	require.Eventually(t, func() bool {
		require.NoError(t, b.typed.Get(ctx, client.ObjectKeyFromObject(tp), tp))
		return meta.IsStatusConditionTrue(tp.Status.Conditions, peeringv1alpha1.ConditionReady)
	}, consumerPoll+lateReadyMargin, 100*time.Millisecond, "the TrustedProvider Ready within a poll (%s) and %s of the commit", consumerPoll, lateReadyMargin)
	t.Logf("the TrustedProvider Ready %s after the commit, %d polls refused before", time.Since(committed).Round(time.Millisecond), refused)
	require.Equal(t, contract.ReasonPeered, meta.FindStatusCondition(tp.Status.Conditions, peeringv1alpha1.ConditionReady).Reason)
	require.Equal(t, published, tp.Status.Request, "the request granted is the one published during the gap")
	require.Equal(t, publicKey, tp.Status.PublicKey)
	csrs, err := a.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + b.id})
	require.NoError(t, err)
	require.Len(t, csrs.Items, 1, "one CertificateSigningRequest for the consumer")
	require.Equal(t, published.CSR, string(csrs.Items[0].Spec.Request), "the provider signed the CSR published during the gap")

	requireControlPlaneWorks(ctx, t, a, b)
	user, err := selfSubjectReview(ctx, a, b)
	require.NoError(t, err)
	require.Equal(t, b.id, user, "the provider's API server knows the consumer as itself")

	require.NoError(t, a.typed.Delete(ctx, ac))
	require.NoError(t, b.typed.Delete(ctx, tp))
	waitFor(t, "both objects gone, through their controllers", func() bool {
		return apierrors.IsNotFound(a.typed.Get(ctx, client.ObjectKeyFromObject(ac), &peeringv1alpha1.AuthorizedConsumer{})) &&
			apierrors.IsNotFound(b.typed.Get(ctx, client.ObjectKeyFromObject(tp), &peeringv1alpha1.TrustedProvider{}))
	})
}

package enrolhttp_test

import (
	"crypto"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
)

const (
	providerID = "provider-1"
	consumerID = "consumer-1"
)

func generate(t testing.TB) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	return k
}

// fixture is a provider's enrolment key and a consumer's request and
// grant.
type fixture struct {
	enrolment *keys.PrivateKey
	request   *enrol.Request
	grant     *peeringv1alpha1.Grant
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	f := fixture{enrolment: generate(t)}
	var err error
	f.request, err = enrol.NewRequest(nil, providerID, consumerID, generate(t), generate(t))
	require.NoError(t, err)
	ca, _, err := csr.GenerateCA(nil, "provider CA", time.Now(), time.Hour)
	require.NoError(t, err)
	f.grant, err = enrol.NewGrant(nil, f.enrolment, f.request, &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		Namespace: ptr.To(clusterid.TenantNamespace(consumerID)),
		AuthParams: authv1beta1.AuthParams{
			CA: ca, SignedCRT: []byte("certificate"), APIServer: "https://provider.example:6443", ProxyURL: ptr.To("http://proxy.example:3128"),
		},
	}})
	require.NoError(t, err)
	return f
}

// grants serves f's grant for consumerID, and counts lookups.
func (f fixture) grants() (enrolhttp.Grants, *int) {
	var mu sync.Mutex
	n := new(int)
	return func(id string) *peeringv1alpha1.Grant {
		mu.Lock()
		*n++
		mu.Unlock()
		if id == consumerID {
			return f.grant
		}
		return nil
	}, n
}

func (f fixture) trust() enrol.Trust {
	pin, err := enrol.CAPin(f.grant.CA)
	if err != nil {
		panic(err)
	}
	return enrol.Trust{
		ProviderID: providerID, ConsumerID: consumerID, EnrolmentKeys: []crypto.PublicKey{f.enrolment.Public()},
		CASHA256: pin, Request: f.request,
	}
}

var unlimited = enrolhttp.Limits{PerClient: rate.Inf}

func serve(h http.Handler, method, target, remote string) *http.Response {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func grantURL(id, sum string) string {
	return enrolhttp.GrantsPath + id + "?" + enrolhttp.CSRParam + "=" + sum
}

func TestHandlerServesGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	resp := serve(enrolhttp.NewHandler(grants, unlimited), http.MethodGet, grantURL(consumerID, f.request.CSRSHA256()), "192.0.2.1:1234")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))

	var got peeringv1alpha1.Grant
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))
	assert.Equal(t, f.grant, &got)
	_, err := enrol.VerifyGrant(&got, f.trust())
	assert.NoError(t, err, "what is served verifies")
}

// TestHandlerNotAuthorized: whatever is not found, the answer is the same
// 404, and an unknown consumer costs the lookup a known one costs.
func TestHandlerNotAuthorized(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, lookups := f.grants()
	h := enrolhttp.NewHandler(grants, unlimited)
	ok := serve(h, http.MethodGet, grantURL(consumerID, f.request.CSRSHA256()), "192.0.2.1:1")
	require.Equal(t, http.StatusOK, ok.StatusCode)

	var bodies []string
	for _, tc := range []struct {
		name, method, target string
		lookup               bool
	}{
		{"unknown ID", http.MethodGet, grantURL("consumer-2", f.request.CSRSHA256()), true},
		{"unknown ID and the stand-in's CSR", http.MethodGet, grantURL("consumer-2", strings.Repeat("0", 64)), true},
		{"wrong csr", http.MethodGet, grantURL(consumerID, strings.Repeat("0", 64)), true},
		{"csr in upper case", http.MethodGet, grantURL(consumerID, strings.ToUpper(f.request.CSRSHA256())), true},
		{"no csr", http.MethodGet, enrolhttp.GrantsPath + consumerID, true},
		{"empty csr", http.MethodGet, grantURL(consumerID, ""), true},
		{"POST", http.MethodPost, grantURL(consumerID, f.request.CSRSHA256()), false},
		{"HEAD", http.MethodHead, grantURL(consumerID, f.request.CSRSHA256()), false},
		{"nested path", http.MethodGet, grantURL(consumerID+"/x", f.request.CSRSHA256()), false},
		{"escaped slash", http.MethodGet, grantURL(consumerID+"%2Fx", f.request.CSRSHA256()), false},
		{"no ID", http.MethodGet, grantURL("", f.request.CSRSHA256()), false},
		{"another path", http.MethodGet, "/v1alpha1/other/" + consumerID, false},
		{"root", http.MethodGet, "/", false},
	} {
		before := *lookups
		resp := serve(h, tc.method, tc.target, "192.0.2.1:1")
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, tc.name)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), tc.name)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if tc.method != http.MethodHead {
			bodies = append(bodies, string(body))
		}
		assert.Equal(t, tc.lookup, *lookups > before, "%s: looked up", tc.name)
	}
	for _, b := range bodies {
		assert.Equal(t, bodies[0], b, "every 404 says the same")
	}
	assert.Equal(t, enrolhttp.ErrNotAuthorized.Error()+"\n", bodies[0])
}

func TestHandlerRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	h := enrolhttp.NewHandler(grants, enrolhttp.Limits{PerClient: rate.Every(time.Hour), Burst: 3})
	target := grantURL(consumerID, f.request.CSRSHA256())
	for i := range 3 {
		assert.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.1:1000").StatusCode, "request %d", i)
	}
	resp := serve(h, http.MethodGet, target, "192.0.2.1:1001")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "past the burst, from another port")
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Equal(t, http.StatusTooManyRequests, serve(h, http.MethodGet, grantURL("consumer-2", "x"), "192.0.2.1:1").StatusCode,
		"an unknown ID is limited the same")
	assert.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.2:1000").StatusCode, "another client has its own budget")

	// IPv6: a client's /64 shares one budget.
	for i := range 3 {
		assert.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "[2001:db8:1:1::1]:1000").StatusCode, "request %d", i)
	}
	assert.Equal(t, http.StatusTooManyRequests, serve(h, http.MethodGet, target, "[2001:db8:1:1::ffff]:1000").StatusCode, "same /64")
	assert.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "[2001:db8:1:2::1]:1000").StatusCode, "another /64")
}

// TestHandlerForgetsOldestClient: past Clients addresses, the one seen
// longest ago starts afresh.
func TestHandlerForgetsOldestClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	h := enrolhttp.NewHandler(grants, enrolhttp.Limits{PerClient: rate.Every(time.Hour), Burst: 1, Clients: 2})
	target := grantURL(consumerID, f.request.CSRSHA256())
	require.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.1:1").StatusCode)
	require.Equal(t, http.StatusTooManyRequests, serve(h, http.MethodGet, target, "192.0.2.1:1").StatusCode)
	time.Sleep(time.Millisecond) // the handler orders clients by the wall clock
	require.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.2:1").StatusCode)
	time.Sleep(time.Millisecond)
	require.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.3:1").StatusCode, "192.0.2.1 forgotten")
	assert.Equal(t, http.StatusOK, serve(h, http.MethodGet, target, "192.0.2.1:1").StatusCode, "192.0.2.1 afresh")
}

// BenchmarkHandler measures one request served from memory: a grant
// served, an unknown consumer refused, and a known one asking for another
// CSR refused.
func BenchmarkHandler(b *testing.B) {
	f := newFixture(b)
	grants, _ := f.grants()
	h := enrolhttp.NewHandler(grants, unlimited)
	for _, bc := range []struct{ name, target string }{
		{"served", grantURL(consumerID, f.request.CSRSHA256())},
		{"unknown", grantURL("consumer-2", f.request.CSRSHA256())},
		{"wrong-csr", grantURL(consumerID, strings.Repeat("0", 64))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			r := httptest.NewRequest(http.MethodGet, bc.target, nil)
			r.RemoteAddr = "192.0.2.1:1"
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK && w.Code != http.StatusNotFound {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

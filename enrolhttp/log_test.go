package enrolhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrolhttp"
)

// TestHandlerRecordsWhy: the caller of a refused request is told "not
// authorized" and nothing more, while the handler records the real reason
// for the provider's readers; a grant served records nothing.
func TestHandlerRecordsWhy(t *testing.T) {
	t.Parallel()
	csr := strings.Repeat("a", 64)
	grants := func(id string) *peeringv1alpha1.Grant {
		if id == "consumer-1" {
			return &peeringv1alpha1.Grant{ConsumerID: id, CSRSHA256: csr}
		}
		return nil
	}
	type record struct{ consumerID, why string }
	var got []record
	h := enrolhttp.NewHandler(grants, enrolhttp.Limits{PerClient: 100, Burst: 100}).
		WithLog(func(_, consumerID, why string) { got = append(got, record{consumerID, why}) })
	for _, tc := range []struct {
		method, target string
		want           []record
		status         int
	}{
		{http.MethodGet, enrolhttp.GrantsPath + "consumer-1?csr=" + csr, nil, http.StatusOK},
		{http.MethodGet, enrolhttp.GrantsPath + "consumer-2?csr=" + csr, []record{{"consumer-2", enrolhttp.WhyNoGrant}}, http.StatusNotFound},
		{http.MethodGet, enrolhttp.GrantsPath + "consumer-1?csr=" + strings.Repeat("b", 64), []record{{"consumer-1", enrolhttp.WhyOtherCSR}}, http.StatusNotFound},
		{http.MethodPost, enrolhttp.GrantsPath + "consumer-1?csr=" + csr, []record{{"", enrolhttp.WhyNotAGrant}}, http.StatusNotFound},
	} {
		got = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
		assert.Equal(t, tc.status, rec.Code, "%s %s", tc.method, tc.target)
		assert.Equal(t, tc.want, got, "%s %s", tc.method, tc.target)
		if tc.status == http.StatusNotFound {
			assert.Equal(t, "not authorized\n", rec.Body.String(), "the caller learns nothing more")
		}
	}
}

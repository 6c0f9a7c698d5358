package enrolhttp_test

import (
	"context"
	"crypto"
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
)

// endpoint starts an HTTPS server for h whose certificate key issued,
// valid for an hour from now, and returns its URL.
func endpoint(t *testing.T, key *keys.PrivateKey, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{servingPair(t, key, time.Now(), time.Hour)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

func servingPair(t *testing.T, key *keys.PrivateKey, now time.Time, lifetime time.Duration) tls.Certificate {
	t.Helper()
	serving := generate(t)
	certPEM, err := enrol.ServingCertificate(nil, key, providerID, serving.Public(), nil, now, lifetime)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	return tls.Certificate{Certificate: [][]byte{block.Bytes}, PrivateKey: serving}
}

func client(f fixture) *enrolhttp.Client {
	return &enrolhttp.Client{EnrolmentKeys: []crypto.PublicKey{f.enrolment.Public()}, Timeout: 5 * time.Second}
}

func TestClientFetches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	url := endpoint(t, f.enrolment, enrolhttp.NewHandler(grants, unlimited))

	g, err := client(f).Fetch(t.Context(), url, f.request)
	require.NoError(t, err)
	assert.Equal(t, f.grant, g)
	_, err = enrol.VerifyGrant(g, f.trust())
	assert.NoError(t, err)

	// Under a path prefix, as behind an ingress.
	mux := http.NewServeMux()
	mux.Handle("/enrol/", http.StripPrefix("/enrol", enrolhttp.NewHandler(grants, unlimited)))
	g, err = client(f).Fetch(t.Context(), endpoint(t, f.enrolment, mux)+"/enrol", f.request)
	require.NoError(t, err)
	assert.Equal(t, f.grant, g)
}

func TestClientNotAuthorized(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	url := endpoint(t, f.enrolment, enrolhttp.NewHandler(grants, unlimited))
	other := newFixture(t) // another consumer-1 request: another CSR
	_, err := client(f).Fetch(t.Context(), url, other.request)
	assert.ErrorIs(t, err, enrolhttp.ErrNotAuthorized)

	forbidden := endpoint(t, f.enrolment, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	_, err = client(f).Fetch(t.Context(), forbidden, f.request)
	assert.ErrorIs(t, err, enrolhttp.ErrNotAuthorized)
}

func TestClientRefusesOtherEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()

	t.Run("certificate issued by another key", func(t *testing.T) {
		t.Parallel()
		var served atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			enrolhttp.NewHandler(grants, unlimited).ServeHTTP(w, r)
		})
		url := endpoint(t, generate(t), h)
		_, err := client(f).Fetch(t.Context(), url, f.request)
		assert.ErrorIs(t, err, enrol.ErrEndpointCertificate)
		assert.Zero(t, served.Load(), "no request is sent to an endpoint that is not the provider's")
	})
	t.Run("certificate expired", func(t *testing.T) {
		t.Parallel()
		url := endpoint(t, f.enrolment, enrolhttp.NewHandler(grants, unlimited))
		c := client(f)
		c.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		_, err := c.Fetch(t.Context(), url, f.request)
		assert.ErrorIs(t, err, enrol.ErrEndpointCertificate)
	})
	t.Run("a CA-issued certificate", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewTLSServer(enrolhttp.NewHandler(grants, unlimited)) // httptest's own CA
		t.Cleanup(srv.Close)
		_, err := client(f).Fetch(t.Context(), srv.URL, f.request)
		assert.ErrorIs(t, err, enrol.ErrEndpointCertificate)
	})
}

func TestClientFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grants, _ := f.grants()
	var contacted atomic.Int32
	target := endpoint(t, f.enrolment, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contacted.Add(1)
		enrolhttp.NewHandler(grants, unlimited).ServeHTTP(w, r)
	}))
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := endpoint(t, f.enrolment, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.RequestURI(), code)
		}))
		g, err := client(f).Fetch(t.Context(), redirector, f.request)
		assert.Error(t, err, code)
		assert.NotErrorIs(t, err, enrolhttp.ErrNotAuthorized)
		assert.Nil(t, g)
	}
	assert.Zero(t, contacted.Load(), "the redirect's target is never contacted")
}

func TestClientRefusesForbiddenURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, url := range []string{
		"http://127.0.0.1:1",
		"https://169.254.169.254",
		"https://[fe80::1]:8443",
		"https://metadata.google.internal",
		"https://user:pass@127.0.0.1:1",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := client(f).Fetch(ctx, url, f.request)
		cancel()
		assert.ErrorIs(t, err, enrolhttp.ErrForbiddenURL, url)
	}
}

func TestClientRefusesMalformedGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, body := range map[string]string{
		"unknown field": `{"providerID":"provider-1","extra":1}`,
		"not JSON":      `<html>`,
		"too large":     `{"providerID":"` + string(make([]byte, enrolhttp.MaxGrantSize)) + `"}`,
	} {
		url := endpoint(t, f.enrolment, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}))
		_, err := client(f).Fetch(t.Context(), url, f.request)
		assert.ErrorIs(t, err, enrol.ErrMalformed, name)
	}
}

func TestClientOtherStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError} {
		url := endpoint(t, f.enrolment, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no", code)
		}))
		_, err := client(f).Fetch(t.Context(), url, f.request)
		require.Error(t, err, code)
		assert.NotErrorIs(t, err, enrolhttp.ErrNotAuthorized, code)
	}
}

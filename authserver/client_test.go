package authserver_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/identity"
)

// hostile is a TLS server that answers /ids as providerID and the
// certificate request with answer.
func hostile(t *testing.T, answer http.HandlerFunc) authserver.Remote {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == authserver.IDsPath {
			_ = json.NewEncoder(w).Encode(authserver.IDs{ClusterID: providerID})
			return
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	tok, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return authserver.Remote{ProviderID: providerID, URL: srv.URL, CA: ca, Token: tok}
}

// TestClientErrors: every answer of the server maps to a typed error, the
// server's message is quoted bounded, and an answer that is not a valid
// identity writes no kubeconfig.
func TestClientErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"BadRequest", http.StatusBadRequest, `{"message":"no"}`, authserver.ErrBadRequest},
		{"Unauthorized", http.StatusUnauthorized, `{"message":"wrong token"}`, authserver.ErrUnauthorized},
		{"Forbidden", http.StatusForbidden, ``, authserver.ErrRefused},
		{"TooLarge", http.StatusRequestEntityTooLarge, `{}`, authserver.ErrTooLarge},
		{"RateLimited", http.StatusTooManyRequests, `{}`, authserver.ErrRateLimited},
		{"ServerError", http.StatusInternalServerError, `oops`, authserver.ErrServer},
		{"Unavailable", http.StatusServiceUnavailable, ``, authserver.ErrServer},
		{"Redirect", http.StatusTemporaryRedirect, ``, authserver.ErrProtocol},
		{"AcceptedNotJSON", http.StatusAccepted, `<html>`, authserver.ErrProtocol},
		{"OKInsteadOfAccepted", http.StatusOK, `{}`, authserver.ErrProtocol},
		{"Huge", http.StatusAccepted, `{"namespace":"` + strings.Repeat("a", 2<<20) + `"}`, authserver.ErrProtocol},
		{"NotACertificate", http.StatusAccepted, `{"namespace":"liqo-tenant-consumer-a","certificate":"bm9wZQ==","apiServerUrl":"https://provider.invalid"}`, identity.ErrMalformed},
		{"PlainHTTPServer", http.StatusAccepted, `{"namespace":"liqo-tenant-consumer-a","certificate":"bm9wZQ==","apiServerUrl":"http://provider.invalid"}`, identity.ErrInvalidServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote := hostile(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.status == http.StatusTemporaryRedirect {
					w.Header().Set("Location", "https://elsewhere.invalid/steal")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			c := newConsumer(t, "consumer-a")
			_, err := authserver.Authenticate(context.Background(), c.c, c.ports(), remote, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			if _, ok := c.cluster.Secrets.Get("liqo-tenant-"+providerID, "kubeconfig-controlplane-"+providerID); ok {
				t.Fatal("a kubeconfig Secret was written")
			}
		})
	}
}

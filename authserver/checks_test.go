package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kubepact/kubepact/accept"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/csr"
)

var errNotListed = errors.New("consumer not on the allow-list")

// TestCallerCheckRefusesTokenRequests: a check added through
// Options.Checks refuses the token flow as it refuses Accept, in either
// stage, with 403, its error logged, and nothing issued; the other
// consumers are served.
func TestCallerCheckRefusesTokenRequests(t *testing.T) {
	for _, stage := range []accept.Stage{accept.StageRedeem, accept.StageIssue} {
		t.Run(stage.String(), func(t *testing.T) {
			allowList := accept.Check{Name: "allow-list", Stage: stage, Run: func(_ context.Context, f *accept.Facts) error {
				if f.ConsumerID != "consumer-listed" {
					return errNotListed
				}
				return nil
			}}
			f := newFixture(t, nil)
			errs := &errorSink{}
			srv, err := authserver.New(providerID, f.provider.Endpoint(), f.provider.ProviderPorts(), f.tokens,
				&authserver.Options{Logger: logr.New(errs), Checks: []accept.Check{allowList}})
			if err != nil {
				t.Fatal(err)
			}
			f.url, f.ca = serve(t, srv)
			status, body := f.post(t, request(t, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
			if status != http.StatusForbidden {
				t.Fatalf("an unlisted consumer: %d %s, want 403", status, body)
			}
			if err := errs.last(); !errors.Is(err, errNotListed) {
				t.Fatalf("logged %v, want the check's error", err)
			}
			f.assertNothingIssued(t, "consumer-a")

			status, body = f.post(t, request(t, "consumer-listed", f.token.Reveal(), csr.ControlPlaneSubject("consumer-listed"), nil))
			if status != http.StatusAccepted {
				t.Fatalf("a listed consumer: %d %s, want 202", status, body)
			}
		})
	}
}

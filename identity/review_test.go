package identity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

// answer is a Reviewer that answers the same whatever it is asked.
type answer struct {
	user   string
	groups []string
	err    error
}

func (a answer) Review(context.Context, *kubeconfig.Config) (string, []string, error) {
	return a.user, a.groups, a.err
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, err := kubeconfig.FromIdentity(f.identity(t), f.key)
	require.NoError(t, err)
	unreachable := errors.New("connection refused")
	tests := []struct {
		name string
		r    identity.Reviewer
		want error
	}{
		{"the consumer", answer{user: consumerID, groups: []string{"liqo.io", "system:authenticated"}}, nil},
		{"rejected", answer{err: fmt.Errorf("%w: 401 Unauthorized", identity.ErrRejected)}, identity.ErrRejected},
		{"unreachable", answer{err: unreachable}, unreachable},
		{"another user", answer{user: "cl-other", groups: []string{"liqo.io"}}, identity.ErrWrongUser},
		{"anonymous", answer{user: "system:anonymous", groups: []string{"system:unauthenticated"}}, identity.ErrWrongUser},
		{"without liqo.io", answer{user: consumerID, groups: []string{"system:authenticated"}}, identity.ErrWrongUser},
		{"no groups", answer{user: consumerID}, identity.ErrWrongUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := identity.Confirm(t.Context(), tt.r, cfg, consumerID)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			if tt.want != identity.ErrRejected {
				require.NotErrorIs(t, err, identity.ErrRejected)
			}
		})
	}
	require.ErrorIs(t, identity.Confirm(t.Context(), nil, cfg, consumerID), identity.ErrMalformed)
	require.ErrorIs(t, identity.Confirm(t.Context(), answer{}, nil, consumerID), identity.ErrMalformed)
}

func ExampleConfirm() {
	// In a test, a Reviewer that answers as the provider's API server would
	// for a certificate of another cluster.
	var r identity.Reviewer = answer{user: "cl-other", groups: []string{"liqo.io", "system:authenticated"}}

	// The consumer's kubeconfig, built from the Identity it verified.
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	caPEM, caKey, _ := csr.GenerateCA(nil, "provider-ca", now, 24*time.Hour)
	ca, _ := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	key, _ := keys.Generate(nil, keys.Ed25519)
	req, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	checked, _ := csr.Check(req, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	cert, _ := ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: time.Hour})
	id, _ := identity.Build("cl-provider", authv1beta1.AuthParams{SignedCRT: cert, APIServer: "https://provider.example:6443"}, nil)
	cfg, _ := kubeconfig.FromIdentity(id, key)

	// Before writing the kubeconfig, the consumer asks the provider who it
	// authenticates as.
	err := identity.Confirm(context.Background(), r, cfg, "cl-consumer")
	fmt.Println(errors.Is(err, identity.ErrWrongUser))
	// Output:
	// true
}

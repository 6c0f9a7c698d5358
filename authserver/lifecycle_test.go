package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

// errorSink is a logr.LogSink that keeps the error values logged, so a
// test finds the typed error behind a refusal with errors.Is and errors.As.
type errorSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errorSink) Init(logr.RuntimeInfo)          {}
func (s *errorSink) Enabled(int) bool               { return true }
func (s *errorSink) WithName(string) logr.LogSink   { return s }
func (s *errorSink) WithValues(...any) logr.LogSink { return s }
func (s *errorSink) Info(_ int, _ string, kv ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range kv {
		if err, ok := v.(error); ok {
			s.errs = append(s.errs, err)
		}
	}
}
func (s *errorSink) Error(err error, msg string, kv ...any) { s.Info(0, msg, append(kv, err)...) }

// last returns the last error logged, nil when there is none.
func (s *errorSink) last() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		return nil
	}
	return s.errs[len(s.errs)-1]
}

// lifecycleFixture is a server over an in-memory provider, logging to an
// errorSink, with the Provider that cordons, drains and forgets on the
// same ports.
type lifecycleFixture struct {
	*fixture
	errs     *errorSink
	provider *kubepact.Provider
}

func newLifecycleFixture(t *testing.T) *lifecycleFixture {
	t.Helper()
	f := newFixture(t, nil)
	lf := &lifecycleFixture{fixture: f, errs: &errorSink{}}
	srv, err := authserver.New(providerID, f.provider.Endpoint(), f.provider.ProviderPorts(), f.tokens, &authserver.Options{Logger: logr.New(lf.errs)})
	if err != nil {
		t.Fatal(err)
	}
	f.url, f.ca = serve(t, srv)
	if lf.provider, err = provider.New(providerID, f.provider.Endpoint(), f.provider.ProviderPorts(), nil); err != nil {
		t.Fatal(err)
	}
	return lf
}

const bindingName = "liqo-binding-liqo-remote-controlplane"

func (f *lifecycleFixture) bound(consumerID string) bool {
	_, ok := f.cluster().RBAC.RoleBinding(clusterid.TenantNamespace(consumerID), bindingName)
	return ok
}

// cluster is the provider cluster in memory.
func (f *lifecycleFixture) cluster() *memory.Cluster { return f.fixture.provider }

// TestTokenConsumerHasATenant: the server records the Tenant that cordon
// and drain act on, owning the binding; cordon works on it and does not
// stop the consumer; drain deletes the binding and records the
// certificates as revoked.
func TestTokenConsumerHasATenant(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixture(t)
	c := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); err != nil {
		t.Fatal(err)
	}
	tn, err := f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a")
	if err != nil {
		t.Fatalf("no Tenant recorded for a token consumer: %v", err)
	}
	if lifecycle.FlowOf(tn) != lifecycle.FlowSharedToken || tn.Spec.AuthzPolicy != authv1beta1.TolerateNoHandshake ||
		tn.Status.AuthParams == nil || len(tn.Status.AuthParams.SignedCRT) == 0 {
		t.Fatalf("Tenant %+v", tn)
	}
	b, ok := f.cluster().RBAC.RoleBinding(clusterid.TenantNamespace("consumer-a"), bindingName)
	if !ok || len(b.OwnerReferences) != 1 || b.OwnerReferences[0].UID != tn.UID {
		t.Fatalf("the binding is not owned by the Tenant: %+v", b)
	}

	if err := f.provider.Cordon(ctx, "consumer-a"); err != nil {
		t.Fatalf("cordon of a token consumer: %v", err)
	}
	if tn, _ = f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a"); tn.Spec.TenantCondition != authv1beta1.TenantConditionCordoned {
		t.Fatalf("condition %q", tn.Spec.TenantCondition)
	}
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); err != nil {
		t.Fatalf("a cordoned consumer keeps its ControlPlane identity: %v", err)
	}
	if err := f.provider.Drain(ctx, "consumer-a"); err != nil {
		t.Fatalf("drain of a token consumer: %v", err)
	}
	if f.bound("consumer-a") {
		t.Fatal("drain left the binding")
	}
	if _, err := f.provider.Revocation(ctx, "consumer-a"); err != nil {
		t.Fatalf("drain recorded no revocation: %v", err)
	}
}

// TestDrainedTokenConsumerRefused: a drained consumer asking again, with
// the key whose certificate is cached (the cache-hit path), gets 403, the
// typed error is logged, and no binding is made again.
func TestDrainedTokenConsumerRefused(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixture(t)
	c := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.provider.Drain(ctx, "consumer-a"); err != nil {
		t.Fatal(err)
	}
	// The same key posts again; its certificate is still cached.
	if _, err := f.cluster().Certificates.Get(ctx, csr.CacheKey{ConsumerID: "consumer-a"}); err != nil {
		t.Fatalf("the cache-hit path needs the cached certificate: %v", err)
	}
	key, err := c.cluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
	if err != nil {
		t.Fatal(err)
	}
	signed := f.cluster().Signer.Signed()
	status, body := f.post(t, requestFor(t, key.Key, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
	if status != http.StatusForbidden {
		t.Fatalf("drained consumer: %d %s, want 403", status, body)
	}
	if err := f.errs.last(); !errors.Is(err, lifecycle.ErrDrained) {
		t.Fatalf("logged %v, want lifecycle.ErrDrained", err)
	}
	if f.bound("consumer-a") {
		t.Fatal("the drained consumer was bound again")
	}
	if n := f.cluster().Signer.Signed(); n != signed {
		t.Fatalf("signed %d certificates for a drained consumer", n-signed)
	}
}

// TestRevokedTokenConsumerRefused: while a revocation record is in force,
// the consumer is refused with a *lifecycle.RevokedError, whether its
// certificate is still cached or it was forgotten, and never bound; once
// readmitted it is served again.
func TestRevokedTokenConsumerRefused(t *testing.T) {
	ctx := context.Background()
	for _, forget := range []bool{false, true} {
		t.Run(map[bool]string{false: "record beside the cached certificate", true: "revoked"}[forget], func(t *testing.T) {
			f := newLifecycleFixture(t)
			c := newConsumer(t, "consumer-a")
			if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); err != nil {
				t.Fatal(err)
			}
			ns := clusterid.TenantNamespace("consumer-a")
			if forget {
				if err := f.provider.Revoke(ctx, "consumer-a"); err != nil {
					t.Fatal(err)
				}
			} else {
				// A record an earlier drain or forget left, the binding gone:
				// the Tenant and the cached certificate are still there.
				if err := f.cluster().Revocations.Put(ctx, lifecycle.Revocation{ConsumerID: "consumer-a",
					Until: time.Now().Add(time.Hour), Reason: lifecycle.ReasonForgotten}); err != nil {
					t.Fatal(err)
				}
				if err := f.cluster().RBAC.DeleteRoleBinding(ctx, ns, bindingName); err != nil {
					t.Fatal(err)
				}
			}
			// The consumer holds its identity already: it posts again with
			// the same key, as one that lost the answer does.
			key, err := c.cluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
			if err != nil {
				t.Fatal(err)
			}
			post := func() (int, string) {
				return f.post(t, requestFor(t, key.Key, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
			}
			if status, body := post(); status != http.StatusForbidden {
				t.Fatalf("revoked consumer: %d %s, want 403", status, body)
			}
			var revoked *lifecycle.RevokedError
			if err := f.errs.last(); !errors.As(err, &revoked) || revoked.ConsumerID != "consumer-a" {
				t.Fatalf("logged %v, want a *lifecycle.RevokedError", err)
			}
			if f.bound("consumer-a") {
				t.Fatal("the revoked consumer was bound again")
			}
			if err := f.provider.Readmit(ctx, "consumer-a"); err != nil {
				t.Fatal(err)
			}
			if status, body := post(); status != http.StatusAccepted {
				t.Fatalf("after readmit: %d %s", status, body)
			}
			if !f.bound("consumer-a") {
				t.Fatal("not bound after readmit")
			}
		})
	}
}

// TestNoSilentSharing: whichever flow issued the live certificate of a
// consumer ID, the other flow refuses another key for it with a
// *lifecycle.HeldError naming the holder's flow, and issues, binds and
// records nothing.
func TestNoSilentSharing(t *testing.T) {
	ctx := context.Background()

	t.Run("token server first, then a nonce handshake of another key", func(t *testing.T) {
		f := newLifecycleFixture(t)
		c := newConsumer(t, "consumer-a")
		if _, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil); err != nil {
			t.Fatal(err)
		}
		held, err := f.cluster().Certificates.Get(ctx, csr.CacheKey{ConsumerID: "consumer-a"})
		if err != nil {
			t.Fatal(err)
		}
		squatter := newConsumer(t, "consumer-a")
		_, err = kubepact.Authenticate(ctx, squatter.c, f.provider, nil)
		var he *lifecycle.HeldError
		if !errors.As(err, &he) || he.ConsumerID != "consumer-a" || he.Flow != lifecycle.FlowSharedToken {
			t.Fatalf("handshake over a token identity: %v, want a *lifecycle.HeldError of the SharedToken flow", err)
		}
		again, err := f.cluster().Certificates.Get(ctx, csr.CacheKey{ConsumerID: "consumer-a"})
		if err != nil || string(again.Certificate) != string(held.Certificate) {
			t.Fatalf("the holder's cached certificate changed: %v", err)
		}
		tn, err := f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a")
		if err != nil || lifecycle.FlowOf(tn) != lifecycle.FlowSharedToken {
			t.Fatalf("the holder's Tenant changed: %v", err)
		}
	})

	t.Run("nonce handshake first, then the token server with another key", func(t *testing.T) {
		f := newLifecycleFixture(t)
		holder := newConsumer(t, "consumer-a")
		if _, err := kubepact.Authenticate(ctx, holder.c, f.provider, nil); err != nil {
			t.Fatal(err)
		}
		before, err := f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a")
		if err != nil {
			t.Fatal(err)
		}
		signed := f.cluster().Signer.Signed()
		squatter := newConsumer(t, "consumer-a")
		if _, err := authserver.Authenticate(ctx, squatter.c, squatter.ports(), f.remote(f.token), nil); !errors.Is(err, authserver.ErrRefused) {
			t.Fatalf("token request over a handshake identity: %v, want ErrRefused", err)
		}
		var he *lifecycle.HeldError
		if err := f.errs.last(); !errors.As(err, &he) || he.ConsumerID != "consumer-a" || he.Flow != lifecycle.FlowHandshake {
			t.Fatalf("logged %v, want a *lifecycle.HeldError of the NonceHandshake flow", err)
		}
		if n := f.cluster().Signer.Signed(); n != signed {
			t.Fatalf("signed %d certificates for the squatter", n-signed)
		}
		after, err := f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a")
		if err != nil || after.ResourceVersion != before.ResourceVersion || lifecycle.FlowOf(after) != lifecycle.FlowHandshake {
			t.Fatalf("the holder's Tenant changed: %v", err)
		}
	})

	t.Run("the handshake's holder at the token server, with its own key", func(t *testing.T) {
		f := newLifecycleFixture(t)
		holder := newConsumer(t, "consumer-a")
		if _, err := kubepact.Authenticate(ctx, holder.c, f.provider, nil); err != nil {
			t.Fatal(err)
		}
		// The holder's TLS key: its identity's own (Authenticate against a
		// kubepact provider gives it one).
		key, err := holder.cluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(f.provider.ClusterID()))
		if err != nil {
			t.Fatal(err)
		}
		status, body := f.post(t, requestFor(t, key.Key, "consumer-a", f.token.Reveal(), csr.ControlPlaneSubject("consumer-a"), nil))
		if status != http.StatusAccepted {
			t.Fatalf("the holder's own key: %d %s", status, body)
		}
		tn, err := f.cluster().Tenants.Get(ctx, clusterid.TenantNamespace("consumer-a"), "consumer-a")
		if err != nil || lifecycle.FlowOf(tn) != lifecycle.FlowHandshake || len(tn.Spec.Signature) == 0 {
			t.Fatalf("the handshake's Tenant was replaced: %v", err)
		}
	})
}

package saidentity_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// memProvider is a provider in memory, with a consumer's view of it.
type memProvider struct {
	clock   *clocktesting.FakeClock
	ns      *fake.Namespaces
	sas     *fake.ServiceAccounts
	rbac    *fake.ServiceAccountRBAC
	secrets *fake.KubeconfigSecrets
	client  *fake.TokenClient
}

func newMemProvider() *memProvider {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m := &memProvider{clock: clk, ns: &fake.Namespaces{}, sas: &fake.ServiceAccounts{Clock: clk}, rbac: &fake.ServiceAccountRBAC{}, secrets: &fake.KubeconfigSecrets{}}
	m.client = &fake.TokenClient{ServiceAccounts: m.sas, RBAC: m.rbac}
	return m
}

func (m *memProvider) ports() saidentity.ProviderPorts {
	return saidentity.ProviderPorts{Namespaces: m.ns, ServiceAccounts: m.sas, RBAC: m.rbac}
}

func (m *memProvider) consumerPorts() saidentity.ConsumerPorts {
	return saidentity.ConsumerPorts{Tokens: m.client, Reviewer: m.client, Secrets: m.secrets}
}

var memEndpoint = saidentity.Endpoint{Server: "https://provider.example:6443"}

// issueAndStore issues an identity and stores it as the consumer does.
func (m *memProvider) issueAndStore(t *testing.T, consumerID, providerID string, exp time.Duration) *saidentity.Identity {
	t.Helper()
	id, err := saidentity.Issue(t.Context(), m.ports(), memEndpoint, consumerID, &saidentity.IssueOptions{Expiration: exp})
	if err != nil {
		t.Fatal(err)
	}
	s, err := saidentity.SecretFor(providerID, id.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.secrets.Write(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return id
}

func (m *memProvider) stored(t *testing.T, providerID string) []byte {
	t.Helper()
	s, err := m.secrets.Get(t.Context(), tenant.Namespace(providerID).Name, saidentity.SecretName(providerID))
	if err != nil {
		t.Fatal(err)
	}
	return s.Data[kubeconfig.SecretKey]
}

// TestIssueRejections checks every refusal of Issue on in-memory ports:
// each is typed and leaves no ServiceAccount, no RBAC and no namespace.
func TestIssueRejections(t *testing.T) {
	t.Parallel()
	const id = "consumer"
	tests := []struct {
		name     string
		id       string
		endpoint *saidentity.Endpoint
		opts     *saidentity.IssueOptions
		plant    func(m *memProvider)
		ports    func(p *saidentity.ProviderPorts)
		want     error
		// foreign is the Kind a *saidentity.ForeignError must name.
		foreign string
		nsStays bool
	}{
		{name: "no Namespaces", ports: func(p *saidentity.ProviderPorts) { p.Namespaces = nil }, want: saidentity.ErrInvalidOptions},
		{name: "no ServiceAccounts", ports: func(p *saidentity.ProviderPorts) { p.ServiceAccounts = nil }, want: saidentity.ErrInvalidOptions},
		{name: "no RBAC", ports: func(p *saidentity.ProviderPorts) { p.RBAC = nil }, want: saidentity.ErrInvalidOptions},
		{name: "invalid ID", id: "UPPER", want: clusterid.ErrInvalid},
		{name: "ID too long", id: strings.Repeat("a", 52), want: clusterid.ErrInvalid},
		{name: "no server", endpoint: &saidentity.Endpoint{}, want: saidentity.ErrInvalidOptions},
		{name: "proxy with no host", endpoint: &saidentity.Endpoint{Server: memEndpoint.Server, ProxyURL: "user:pass@"}, want: saidentity.ErrInvalidOptions},
		{name: "expiration below minimum", opts: &saidentity.IssueOptions{Expiration: saidentity.MinExpiration - time.Second}, want: saidentity.ErrInvalidOptions},
		{name: "expiration above maximum", opts: &saidentity.IssueOptions{Expiration: saidentity.MaxExpiration + time.Second}, want: saidentity.ErrInvalidOptions},
		{name: "negative expiration", opts: &saidentity.IssueOptions{Expiration: -time.Hour}, want: saidentity.ErrInvalidOptions},
		{name: "invalid provider ID", opts: &saidentity.IssueOptions{ProviderID: "No"}, want: saidentity.ErrInvalidOptions},
		{name: "user may read every Secret", want: rbac.ErrPrivilegedUser, plant: func(m *memProvider) {
			m.rbac.PlantClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secrets"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}}}})
			m.rbac.PlantClusterRoleBinding(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "planted"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: saidentity.UserName(id)}},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "secrets"}})
		}},
		{name: "ServiceAccount may run pods in its namespace", want: rbac.ErrPrivilegedUser, plant: func(m *memProvider) {
			m.rbac.PlantClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}})
			m.rbac.PlantRoleBinding(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: saidentity.Name(id), Namespace: clusterid.TenantNamespace(id)},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saidentity.Name(id)}},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "pods"}})
		}},
		{name: "hostile ServiceAccount", want: saidentity.ErrForeign, foreign: "ServiceAccount", nsStays: true, plant: func(m *memProvider) {
			sa := saidentity.ServiceAccount(id)
			sa.Labels = nil
			m.sas.Plant(sa)
		}},
		{name: "hostile Role", want: saidentity.ErrForeign, nsStays: true, plant: func(m *memProvider) {
			m.rbac.PlantRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: saidentity.Name(id), Namespace: clusterid.TenantNamespace(id)}})
		}},
		{name: "hostile ClusterRoleBinding", want: saidentity.ErrForeign, nsStays: true, plant: func(m *memProvider) {
			m.rbac.PlantClusterRoleBinding(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: saidentity.ClusterName(id), Labels: map[string]string{saidentity.IdentityLabel: "someone-else"}},
				RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMemProvider()
			consumerID := id
			if tc.id != "" {
				consumerID = tc.id
			}
			ep := memEndpoint
			if tc.endpoint != nil {
				ep = *tc.endpoint
			}
			if tc.plant != nil {
				tc.plant(m)
			}
			ports := m.ports()
			if tc.ports != nil {
				tc.ports(&ports)
			}
			roles, bindings := len(m.rbac.Roles.Objects("")), len(m.rbac.ClusterRoleBindings.Objects(""))
			_, err := saidentity.Issue(t.Context(), ports, ep, consumerID, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Issue: %v, want %v", err, tc.want)
			}
			if tc.foreign != "" {
				var fe *saidentity.ForeignError
				if !errors.As(err, &fe) || fe.Kind != tc.foreign {
					t.Fatalf("Issue: %v, want a *ForeignError for a %s", err, tc.foreign)
				}
			}
			if sa, ok := m.sas.Get(clusterid.TenantNamespace(consumerID), saidentity.Name(consumerID)); ok && saidentity.Owned(sa, consumerID) {
				t.Error("a ServiceAccount of kubepact's was left")
			}
			if len(m.rbac.Roles.Objects(""))+len(m.rbac.RoleBindings.Objects(clusterid.TenantNamespace(consumerID))) > roles+1 ||
				len(m.rbac.ClusterRoleBindings.Objects("")) != bindings {
				t.Error("RBAC was written")
			}
			if _, ok := m.ns.Get(clusterid.TenantNamespace(consumerID)); ok && !tc.nsStays && !errors.Is(err, rbac.ErrPrivilegedUser) {
				t.Error("the tenant namespace was created")
			}
		})
	}
}

// wrongUID hands out tokens of another ServiceAccount than the one ensured,
// as if it had been deleted and created again between the two calls.
type wrongUID struct{ *fake.ServiceAccounts }

func (w wrongUID) Token(ctx context.Context, namespace, name string, req saidentity.TokenRequest) (*saidentity.Token, error) {
	if err := w.ServiceAccounts.Delete(ctx, namespace, name); err != nil {
		return nil, err
	}
	sa := saidentity.ServiceAccount("consumer")
	if _, _, err := w.ServiceAccounts.Ensure(ctx, sa); err != nil {
		return nil, err
	}
	return w.ServiceAccounts.Token(ctx, namespace, name, req)
}

func TestIssueRefusesTokenOfAnotherServiceAccount(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	p := m.ports()
	p.ServiceAccounts = wrongUID{m.sas}
	_, err := saidentity.Issue(t.Context(), p, memEndpoint, "consumer", nil)
	if !errors.Is(err, saidentity.ErrWrongServiceAccount) {
		t.Fatalf("Issue: %v, want ErrWrongServiceAccount", err)
	}
}

func TestIssueInMemory(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	id := m.issueAndStore(t, "consumer", "provider", 0)
	if got := id.Token.Expiry().Sub(m.clock.Now()); got != saidentity.DefaultExpiration {
		t.Fatalf("expires in %s, want %s", got, saidentity.DefaultExpiration)
	}
	user, _, err := m.client.Review(t.Context(), id.Kubeconfig)
	if err != nil || user != saidentity.UserName("consumer") {
		t.Fatalf("Review: %q %v", user, err)
	}
	// Issuing again keeps the ServiceAccount and issues a new token.
	again, err := saidentity.Issue(t.Context(), m.ports(), memEndpoint, "consumer", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, uid1 := id.Token.ServiceAccount()
	_, _, uid2 := again.Token.ServiceAccount()
	if uid1 != uid2 || again.Token.Equal(id.Token) {
		t.Fatal("a second Issue replaced the ServiceAccount or repeated the token")
	}
	// The token expires at its time.
	m.clock.Step(saidentity.DefaultExpiration)
	if _, _, err := m.client.Review(t.Context(), id.Kubeconfig); !errors.Is(err, identity.ErrRejected) {
		t.Fatalf("Review of an expired token: %v, want ErrRejected", err)
	}
}

// fixedRand returns b forever.
type fixedRand byte

func (r fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestDeadlineIsWithinTheWindow(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	id := m.issueAndStore(t, "consumer", "provider", time.Hour)
	for rnd, want := range map[fixedRand]time.Duration{0x00: 42 * time.Minute, 0xff: 54 * time.Minute} {
		r, err := saidentity.NewRefresher(m.consumerPorts(), "provider", &saidentity.RefresherOptions{Rand: rnd})
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Deadline(id.Token)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Sub(id.Token.IssuedAt()); got < want-time.Second || got > want+time.Second {
			t.Errorf("rand %#x: deadline after %s, want %s", byte(rnd), got, want)
		}
	}
	r, err := saidentity.NewRefresher(m.consumerPorts(), "provider", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		d, err := r.Deadline(id.Token)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Sub(id.Token.IssuedAt()); got < 42*time.Minute || got > 54*time.Minute {
			t.Fatalf("deadline after %s, outside 70-90%% of an hour", got)
		}
	}
}

func TestNewRefresherRejects(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	if _, err := saidentity.NewRefresher(m.consumerPorts(), "Bad", nil); !errors.Is(err, clusterid.ErrInvalid) {
		t.Errorf("bad provider ID: %v", err)
	}
	p := m.consumerPorts()
	p.Reviewer = nil
	if _, err := saidentity.NewRefresher(p, "provider", nil); !errors.Is(err, saidentity.ErrInvalidOptions) {
		t.Errorf("no reviewer: %v", err)
	}
	r, err := saidentity.NewRefresher(m.consumerPorts(), "provider", &saidentity.RefresherOptions{Rand: bytes.NewReader(nil)})
	if err != nil {
		t.Fatal(err)
	}
	id := m.issueAndStore(t, "consumer", "provider", time.Hour)
	if _, err := r.Deadline(id.Token); err == nil {
		t.Error("Deadline with an empty Rand succeeded")
	}
}

// TestRefreshFailuresKeepTheSecret checks each way a refresh can fail
// after reading the Secret: the stored kubeconfig is never replaced.
func TestRefreshFailuresKeepTheSecret(t *testing.T) {
	t.Parallel()
	errDown := errors.New("provider unreachable")
	tests := []struct {
		name   string
		setup  func(m *memProvider)
		faults func(op string) error
		want   error
	}{
		{name: "revoked", setup: func(m *memProvider) {
			if err := saidentity.Revoke(context.Background(), m.ports(), "consumer"); err != nil {
				panic(err)
			}
		}, want: saidentity.ErrRevoked},
		{name: "expired", setup: func(m *memProvider) { m.clock.Step(time.Hour) }, want: saidentity.ErrRevoked},
		{name: "token right taken away", setup: func(m *memProvider) {
			g, _ := saidentity.BuildGrants("consumer")
			_ = m.rbac.Remove(context.Background(), g)
		}, want: identity.ErrRejected},
		{name: "unreachable", faults: func(string) error { return errDown }, want: errDown},
		{name: "new token refused on review", faults: func(op string) error {
			if op == "Review" {
				return fmt.Errorf("%w: 401", identity.ErrRejected)
			}
			return nil
		}, want: saidentity.ErrRevoked},
		{name: "new token for another user", want: identity.ErrWrongUser},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMemProvider()
			m.issueAndStore(t, "consumer", "provider", time.Hour)
			before := m.stored(t, "provider")
			if tc.setup != nil {
				tc.setup(m)
			}
			m.client.Faults = tc.faults
			ports := m.consumerPorts()
			if tc.want == identity.ErrWrongUser {
				ports.Reviewer = otherUser{}
			}
			r, err := saidentity.NewRefresher(ports, "provider", &saidentity.RefresherOptions{Clock: m.clock})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Refresh(t.Context())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Refresh: %v, want %v", err, tc.want)
			}
			if !bytes.Equal(m.stored(t, "provider"), before) {
				t.Fatal("a failed refresh replaced the stored kubeconfig")
			}
		})
	}
}

// otherUser takes every kubeconfig for the admin.
type otherUser struct{}

func (otherUser) Review(context.Context, *kubeconfig.Config) (string, []string, error) {
	return "kubernetes-admin", []string{"system:masters"}, nil
}

// TestRefreshRefusesJunk stores kubeconfigs that hold no ServiceAccount
// token and checks a refresh refuses them and writes nothing.
func TestRefreshRefusesJunk(t *testing.T) {
	t.Parallel()
	enc := base64.RawURLEncoding.EncodeToString
	for name, token := range map[string]string{
		"not a JWT":         "abc",
		"payload not JSON":  enc([]byte("{}")) + "." + enc([]byte("nope")) + ".sig",
		"no serviceaccount": enc([]byte("{}")) + "." + enc([]byte(`{"exp":2,"iat":1}`)) + ".sig",
		"exp before iat":    enc([]byte("{}")) + "." + enc([]byte(`{"exp":1,"iat":2,"kubernetes.io":{"namespace":"n","serviceaccount":{"name":"s","uid":"u"}}}`)) + ".sig",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newMemProvider()
			cfg, err := kubeconfig.BuildToken(kubeconfig.TokenParams{Name: "p", Server: memEndpoint.Server, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			s, err := saidentity.SecretFor("provider", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.secrets.Write(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			before := m.stored(t, "provider")
			r, err := saidentity.NewRefresher(m.consumerPorts(), "provider", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Refresh(t.Context())
			if !errors.Is(err, saidentity.ErrMalformedToken) {
				t.Fatalf("Refresh: %v, want ErrMalformedToken", err)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatal("the error quotes the token")
			}
			if !bytes.Equal(m.stored(t, "provider"), before) {
				t.Fatal("the Secret changed")
			}
			if err := r.Run(t.Context()); !errors.Is(err, saidentity.ErrMalformedToken) {
				t.Fatalf("Run: %v, want ErrMalformedToken", err)
			}
		})
	}
}

// TestRunRetriesTransientFailures runs a Refresher on the fakes: a failed
// refresh that may succeed later is retried after RetryInterval, and the
// token is replaced before it expires.
func TestRunRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	id := m.issueAndStore(t, "consumer", "provider", time.Hour)
	failures := 2
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	m.client.Faults = func(op string) error {
		<-mu
		defer func() { mu <- struct{}{} }()
		if op == "Token" && failures > 0 {
			failures--
			return errors.New("connection refused")
		}
		return nil
	}
	refreshed := make(chan *saidentity.Token, 1)
	errs := make(chan error, 4)
	r, err := saidentity.NewRefresher(m.consumerPorts(), "provider", &saidentity.RefresherOptions{
		Clock: m.clock, Rand: fixedRand(0xff), RetryInterval: time.Minute,
		OnRefresh: func(tok *saidentity.Token) { refreshed <- tok },
		OnError:   func(err error) { errs <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitFor(ctx, t, "the first wait", m.clock.HasWaiters)
	m.clock.Step(54 * time.Minute) // the 90% deadline of fixedRand(0xff)
	for range 2 {
		select {
		case <-errs:
		case <-time.After(10 * time.Second):
			t.Fatal("no retried failure")
		}
		waitFor(ctx, t, "the retry wait", m.clock.HasWaiters)
		m.clock.Step(time.Minute)
	}
	var tok *saidentity.Token
	select {
	case tok = <-refreshed:
	case <-time.After(10 * time.Second):
		t.Fatal("no refresh after the retries")
	}
	if !tok.Expiry().After(id.Token.Expiry()) || tok.Lifetime() != time.Hour {
		t.Fatalf("new token %v, lifetime %s", tok, tok.Lifetime())
	}
	if m.clock.Now().After(id.Token.Expiry()) {
		t.Fatal("refreshed after the old token expired")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
}

// plantingBinder plants a privileged binding for the identity while its
// Grant runs, as a concurrent writer could.
type plantingBinder struct{ *fake.ServiceAccountRBAC }

func (p plantingBinder) Grant(ctx context.Context, g saidentity.Grants) error {
	p.PlantClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "impersonator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}}}})
	p.PlantClusterRoleBinding(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + clusterid.TenantNamespace("consumer")}},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "impersonator"}})
	return p.ServiceAccountRBAC.Grant(ctx, g)
}

func TestIssueChecksAgainAfterGranting(t *testing.T) {
	t.Parallel()
	m := newMemProvider()
	p := m.ports()
	p.RBAC = plantingBinder{m.rbac}
	id, err := saidentity.Issue(t.Context(), p, memEndpoint, "consumer", nil)
	var pe *rbac.PrivilegedError
	if !errors.As(err, &pe) || pe.Probe.Verb != "impersonate" || id != nil {
		t.Fatalf("Issue: %v, %v; want a *rbac.PrivilegedError for impersonate and no identity", id, err)
	}
}

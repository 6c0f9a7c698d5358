// Package saidentitytest is the conformance suite of saidentity's provider
// ports, saidentity.ServiceAccounts and saidentity.Binder.
//
// Run checks the contracts written on the ports:
//
//   - Ensure creates a ServiceAccount with its labels and a UID, and
//     returns a stored one unchanged rather than take it over;
//   - Token issues a token bound to the ServiceAccount's namespace, name
//     and UID, whose expiry is the lifetime asked for from about now, and
//     wraps saidentity.ErrNotFound for a ServiceAccount that does not exist
//     (deleted ones included);
//   - Delete succeeds when there is nothing to delete;
//   - Grant gives the identity's ServiceAccount what saidentity.BuildGrants
//     describes and nothing more, as Allowed answers; it is idempotent; it
//     refuses a foreign Role, RoleBinding, ClusterRole or ClusterRoleBinding
//     of the identity's names with a *saidentity.ForeignError and writes
//     nothing then;
//   - Remove takes every grant away and succeeds when there is nothing to
//     remove;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// Every test uses consumer IDs no other test uses, so the suite runs
// against a real API server as well as against package fake.
package saidentitytest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/saidentity"
)

// Harness adapts the implementation under test.
type Harness struct {
	// New returns the ports under test, over one provider.
	New func(t *testing.T) (saidentity.ServiceAccounts, saidentity.Binder)
	// Namespace creates the namespace name, tolerating one that exists.
	Namespace func(t *testing.T, name string)
	// Plant stores obj (a *rbacv1.Role, *rbacv1.RoleBinding,
	// *rbacv1.ClusterRole or *rbacv1.ClusterRoleBinding) as someone other
	// than kubepact would.
	Plant func(t *testing.T, obj metav1.Object)
	// Parallel runs the tests in parallel.
	Parallel bool
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness, id string)
	}{
		{"EnsureCreatesAndNeverTakesOver", testEnsure},
		{"TokenIsBoundAndExpires", testToken},
		{"TokenOfMissingServiceAccount", testTokenNotFound},
		{"GrantIsLeastPrivilege", testGrant},
		{"GrantRefusesForeignObjects", testGrantForeign},
		{"RemoveTakesEverythingAway", testRemove},
		{"CancelledContext", testCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h.Parallel {
				t.Parallel()
			}
			tc.fn(t, h, consumerID(t.Name()))
		})
	}
}

// consumerID returns a cluster ID unique to a test name.
func consumerID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return fmt.Sprintf("sa-%x", sum[:6])
}

func testEnsure(t *testing.T, h Harness, id string) {
	sas, _ := h.New(t)
	h.Namespace(t, clusterid.TenantNamespace(id))
	want := saidentity.ServiceAccount(id)
	got, created, err := sas.Ensure(t.Context(), want)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if !created {
		t.Error("first Ensure did not report creating the ServiceAccount")
	}
	if got.UID == "" || got.Name != want.Name || got.Namespace != want.Namespace || !saidentity.Owned(got, id) {
		t.Fatalf("Ensure returned %s/%s uid=%q labels=%v", got.Namespace, got.Name, got.UID, got.Labels)
	}
	other := saidentity.ServiceAccount(id)
	other.Labels = map[string]string{"planted": "true"}
	again, created, err := sas.Ensure(t.Context(), other)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if created {
		t.Error("second Ensure reported creating the ServiceAccount")
	}
	if again.UID != got.UID || !saidentity.Owned(again, id) || again.Labels["planted"] != "" {
		t.Fatalf("second Ensure changed the stored ServiceAccount: uid %q→%q labels %v", got.UID, again.UID, again.Labels)
	}
}

func testToken(t *testing.T, h Harness, id string) {
	sas, _ := h.New(t)
	h.Namespace(t, clusterid.TenantNamespace(id))
	sa, _, err := sas.Ensure(t.Context(), saidentity.ServiceAccount(id))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	tok, err := sas.Token(t.Context(), sa.Namespace, sa.Name, saidentity.TokenRequest{Expiration: 15 * time.Minute})
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	ns, name, uid := tok.ServiceAccount()
	if ns != sa.Namespace || name != sa.Name || uid != sa.UID {
		t.Fatalf("token for %s/%s uid %s, want %s/%s uid %s", ns, name, uid, sa.Namespace, sa.Name, sa.UID)
	}
	if tok.Lifetime() != 15*time.Minute {
		t.Fatalf("lifetime %s, want 15m", tok.Lifetime())
	}
	if tok.IssuedAt().Before(before) || tok.IssuedAt().After(time.Now().Add(time.Minute)) {
		t.Fatalf("issued at %s, want about now", tok.IssuedAt())
	}
	second, err := sas.Token(t.Context(), sa.Namespace, sa.Name, saidentity.TokenRequest{Expiration: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if second.Equal(tok) {
		t.Fatal("two TokenRequests returned the same token")
	}
}

func testTokenNotFound(t *testing.T, h Harness, id string) {
	sas, _ := h.New(t)
	ns := clusterid.TenantNamespace(id)
	h.Namespace(t, ns)
	_, err := sas.Token(t.Context(), ns, saidentity.Name(id), saidentity.TokenRequest{Expiration: time.Hour})
	if !errors.Is(err, saidentity.ErrNotFound) {
		t.Fatalf("Token of a missing ServiceAccount: %v, want ErrNotFound", err)
	}
	if _, _, err := sas.Ensure(t.Context(), saidentity.ServiceAccount(id)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := sas.Delete(t.Context(), ns, saidentity.Name(id)); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	_, err = sas.Token(t.Context(), ns, saidentity.Name(id), saidentity.TokenRequest{Expiration: time.Hour})
	if !errors.Is(err, saidentity.ErrNotFound) {
		t.Fatalf("Token of a deleted ServiceAccount: %v, want ErrNotFound", err)
	}
}

// access lists requests of the identity of id and whether they are allowed
// once granted.
func access(id string) map[string]struct {
	attrs authorizationv1.ResourceAttributes
	want  bool
} {
	ns := clusterid.TenantNamespace(id)
	type probe = struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}
	return map[string]probe{
		"get own secret":       {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Version: "v1", Resource: "secrets", Name: id}, true},
		"update own secret":    {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Version: "v1", Resource: "secrets", Name: id}, true},
		"own token":            {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Version: "v1", Resource: "serviceaccounts", Subresource: "token", Name: saidentity.Name(id)}, true},
		"get own peering":      {authorizationv1.ResourceAttributes{Verb: "get", Group: saidentity.PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests", Name: id}, true},
		"get other secret":     {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Version: "v1", Resource: "secrets", Name: "other"}, false},
		"list secrets":         {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Version: "v1", Resource: "secrets"}, false},
		"create secrets":       {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Version: "v1", Resource: "secrets"}, false},
		"secret elsewhere":     {authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Version: "v1", Resource: "secrets", Name: id}, false},
		"other token":          {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Version: "v1", Resource: "serviceaccounts", Subresource: "token", Name: "default"}, false},
		"get pods":             {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Version: "v1", Resource: "pods", Name: id}, false},
		"list peerings":        {authorizationv1.ResourceAttributes{Verb: "list", Group: saidentity.PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests"}, false},
		"get other peering":    {authorizationv1.ResourceAttributes{Verb: "get", Group: saidentity.PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests", Name: "other"}, false},
		"update own sa object": {authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Version: "v1", Resource: "serviceaccounts", Name: saidentity.Name(id)}, false},
	}
}

func checkAccess(t *testing.T, b saidentity.Binder, id string, granted bool) {
	t.Helper()
	for name, p := range access(id) {
		got, err := b.Allowed(t.Context(), saidentity.UserName(id), saidentity.Groups(id), p.attrs)
		if err != nil {
			t.Fatalf("Allowed(%s): %v", name, err)
		}
		if want := p.want && granted; got != want {
			t.Errorf("%s: allowed=%v, want %v", name, got, want)
		}
	}
}

func testGrant(t *testing.T, h Harness, id string) {
	_, b := h.New(t)
	h.Namespace(t, clusterid.TenantNamespace(id))
	g, err := saidentity.BuildGrants(id)
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, b, id, false)
	for i := range 2 {
		if err := b.Grant(t.Context(), g); err != nil {
			t.Fatalf("Grant %d: %v", i, err)
		}
	}
	checkAccess(t, b, id, true)
	if err := saidentity.CheckUnprivileged(t.Context(), b, id); err != nil {
		t.Fatalf("CheckUnprivileged after Grant: %v", err)
	}
}

func testGrantForeign(t *testing.T, h Harness, id string) {
	g, err := saidentity.BuildGrants(id)
	if err != nil {
		t.Fatal(err)
	}
	planted := map[string]metav1.Object{
		"Role":               &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: g.Role.Name, Namespace: g.Role.Namespace}},
		"RoleBinding":        &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: g.RoleBinding.Name, Namespace: g.RoleBinding.Namespace}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}},
		"ClusterRole":        &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: g.ClusterRole.Name}},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: g.ClusterRoleBinding.Name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}},
	}
	for kind, obj := range planted {
		t.Run(kind, func(t *testing.T) {
			sub := id + "-" + map[string]string{"Role": "r", "RoleBinding": "rb", "ClusterRole": "cr", "ClusterRoleBinding": "crb"}[kind]
			g, err := saidentity.BuildGrants(sub)
			if err != nil {
				t.Fatal(err)
			}
			_, b := h.New(t)
			h.Namespace(t, clusterid.TenantNamespace(sub))
			obj.SetName(map[string]string{
				"Role": g.Role.Name, "RoleBinding": g.RoleBinding.Name, "ClusterRole": g.ClusterRole.Name, "ClusterRoleBinding": g.ClusterRoleBinding.Name,
			}[kind])
			if obj.GetNamespace() != "" {
				obj.SetNamespace(clusterid.TenantNamespace(sub))
			}
			obj.SetLabels(map[string]string{clusterid.Label: sub})
			h.Plant(t, obj)
			err = b.Grant(t.Context(), g)
			var fe *saidentity.ForeignError
			if !errors.As(err, &fe) || !errors.Is(err, saidentity.ErrForeign) || fe.Kind != kind {
				t.Fatalf("Grant over a foreign %s: %v, want a *ForeignError for it", kind, err)
			}
			checkAccess(t, b, sub, false)
		})
	}
}

func testRemove(t *testing.T, h Harness, id string) {
	_, b := h.New(t)
	h.Namespace(t, clusterid.TenantNamespace(id))
	g, err := saidentity.BuildGrants(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Grant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := b.Remove(t.Context(), g); err != nil {
			t.Fatalf("Remove %d: %v", i, err)
		}
	}
	checkAccess(t, b, id, false)
}

func testCancelled(t *testing.T, h Harness, id string) {
	sas, b := h.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g, err := saidentity.BuildGrants(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sas.Ensure(ctx, saidentity.ServiceAccount(id)); !errors.Is(err, context.Canceled) {
		t.Errorf("Ensure: %v, want context.Canceled", err)
	}
	if err := b.Grant(ctx, g); !errors.Is(err, context.Canceled) {
		t.Errorf("Grant: %v, want context.Canceled", err)
	}
	if err := b.Remove(ctx, g); !errors.Is(err, context.Canceled) {
		t.Errorf("Remove: %v, want context.Canceled", err)
	}
}

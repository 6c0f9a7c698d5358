package saidentity_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// jwtClaims decodes the payload of a JWT, as any holder of the token can.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts, want 3", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// clientsOf returns clients that authenticate with id's kubeconfig only.
func clientsOf(t *testing.T, id *saidentity.Identity) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	rc, err := id.Kubeconfig.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

// TestIssueRealCluster issues an identity on the real provider and checks
// what its kubeconfig may do there: its own Secret and PeeringRequest, and
// nothing else. The token's JWT claims expire as requested, and the token
// appears in no printed form of the identity.
func TestIssueRealCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	consumerID := uniqueID(t.Name(), 0)
	ns := clusterid.TenantNamespace(consumerID)
	id, err := saidentity.Issue(ctx, realProvider(), endpoint(), consumerID, &saidentity.IssueOptions{Expiration: 15 * time.Minute})
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}

	// The expiry is the TokenRequest's, and the JWT says the same.
	token := id.Kubeconfig.BearerToken()
	claims := jwtClaims(t, token)
	exp, iat := int64(claims["exp"].(float64)), int64(claims["iat"].(float64))
	if exp != id.Token.Expiry().Unix() || exp-iat != int64((15*time.Minute)/time.Second) {
		t.Fatalf("exp=%d iat=%d, want exp=%d and 900 s of lifetime", exp, iat, id.Token.Expiry().Unix())
	}
	if d := time.Until(id.Token.Expiry()); d < 14*time.Minute || d > 16*time.Minute {
		t.Fatalf("token expires in %s, want about 15m", d)
	}
	for _, s := range []string{fmt.Sprint(id), fmt.Sprintf("%+v %#v %s %v", id.Token, id.Token, id.Kubeconfig, *id)} {
		if strings.Contains(s, token) || strings.Contains(s, strings.Split(token, ".")[2]) {
			t.Fatalf("the token is printed: %s", s)
		}
	}

	// Objects the identity may or may not touch, made by the admin.
	for _, name := range []string{consumerID, "other"} {
		if _, err := provider.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "discovery.liqo.io/v1alpha1", "kind": "PeeringRequest",
			"metadata": map[string]any{"name": consumerID + "-" + name},
		}}
		if name == consumerID {
			pr.SetName(consumerID)
		}
		if _, err := provider.dynamic.Resource(peeringRequests).Create(ctx, pr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	c, d := clientsOf(t, id)
	secrets := c.CoreV1().Secrets(ns)
	own, err := secrets.Get(ctx, consumerID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get own Secret: %v", err)
	}
	own.Data = map[string][]byte{"k": []byte("v")}
	if _, err := secrets.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update own Secret: %v", err)
	}
	if _, err := d.Resource(peeringRequests).Get(ctx, consumerID, metav1.GetOptions{}); err != nil {
		t.Fatalf("get own PeeringRequest: %v", err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, saidentity.Name(consumerID), tokenRequest(600), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create own token: %v", err)
	}

	forbidden := map[string]func() error{
		"get other Secret": func() error { _, err := secrets.Get(ctx, "other", metav1.GetOptions{}); return err },
		"list Secrets":     func() error { _, err := secrets.List(ctx, metav1.ListOptions{}); return err },
		"watch Secrets":    func() error { _, err := secrets.Watch(ctx, metav1.ListOptions{}); return err },
		"create a Secret": func() error {
			_, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			return err
		},
		"Secret elsewhere": func() error {
			_, err := c.CoreV1().Secrets("kube-system").Get(ctx, consumerID, metav1.GetOptions{})
			return err
		},
		"list pods":       func() error { _, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); return err },
		"list namespaces": func() error { _, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err },
		"other PR": func() error {
			_, err := d.Resource(peeringRequests).Get(ctx, consumerID+"-other", metav1.GetOptions{})
			return err
		},
		"list PRs": func() error { _, err := d.Resource(peeringRequests).List(ctx, metav1.ListOptions{}); return err },
		"default SA token": func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", tokenRequest(600), metav1.CreateOptions{})
			return err
		},
		"read own SA": func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{})
			return err
		},
		"read own Role": func() error {
			_, err := c.RbacV1().Roles(ns).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{})
			return err
		},
		"list RoleBindings": func() error {
			_, err := c.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
			return err
		},
	}
	for what, call := range forbidden {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
}

// TestRevokeRealCluster revokes an identity: at once, the token issued
// before may do nothing it could (403, or 401); once the API server's
// token authentication cache (10 s by default) forgets it, it is refused
// outright (401); and it stays refused when the identity is issued again
// under the same names.
func TestRevokeRealCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	consumerID := uniqueID(t.Name(), 0)
	ports := realProvider()
	id, err := saidentity.Issue(ctx, ports, endpoint(), consumerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := id.Token.Lifetime(); d != saidentity.DefaultExpiration {
		t.Fatalf("default lifetime %s, want %s", d, saidentity.DefaultExpiration)
	}
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		t.Fatal(err)
	}
	user, _, err := reviewer.Review(ctx, id.Kubeconfig)
	if err != nil || user != saidentity.UserName(consumerID) {
		t.Fatalf("Review before Revoke: %q, %v", user, err)
	}
	ns := clusterid.TenantNamespace(consumerID)
	if _, err := provider.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: consumerID}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, _ := clientsOf(t, id)
	getOwn := func() error { _, err := c.CoreV1().Secrets(ns).Get(ctx, consumerID, metav1.GetOptions{}); return err }
	if err := getOwn(); err != nil {
		t.Fatalf("get own Secret before Revoke: %v", err)
	}
	if err := saidentity.Revoke(ctx, ports, consumerID); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	revoked := time.Now()
	// The authorizer's caches of RBAC follow within milliseconds.
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	waitFor(waitCtx, t, "own Secret Forbidden", func() bool {
		err := getOwn()
		return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
	})
	forbiddenAfter := time.Since(revoked)
	waitCtx, cancel = context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var reviewErr error
	waitFor(waitCtx, t, "401", func() bool {
		_, _, reviewErr = reviewer.Review(ctx, id.Kubeconfig)
		return apierrors.IsUnauthorized(reviewErr)
	})
	t.Logf("after Revoke: Forbidden within %s, Unauthorized within %s", forbiddenAfter, time.Since(revoked))
	if !errors.Is(reviewErr, identity.ErrRejected) {
		t.Fatalf("Review after Revoke: %v, want identity.ErrRejected", reviewErr)
	}
	if strings.Contains(reviewErr.Error(), id.Kubeconfig.BearerToken()) {
		t.Fatal("the error quotes the token")
	}
	if _, err := provider.client.RbacV1().Roles(ns).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Role after Revoke: %v, want NotFound", err)
	}
	if _, err := provider.client.RbacV1().ClusterRoleBindings().Get(ctx, saidentity.ClusterName(consumerID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding after Revoke: %v, want NotFound", err)
	}
	if err := saidentity.Revoke(ctx, ports, consumerID); err != nil {
		t.Fatalf("second Revoke: %v", err)
	}

	// A new identity under the same names does not revive the old token.
	again, err := saidentity.Issue(ctx, ports, endpoint(), consumerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reviewer.Review(ctx, again.Kubeconfig); err != nil {
		t.Fatalf("Review of the new identity: %v", err)
	}
	if _, _, err := reviewer.Review(ctx, id.Kubeconfig); !apierrors.IsUnauthorized(err) {
		t.Fatalf("old token after a new Issue: %v, want 401", err)
	}
}

// TestIssueRejectionsRealCluster checks that bad input and hostile objects
// on the provider make Issue fail with a typed error and leave no
// ServiceAccount and no RBAC.
func TestIssueRejectionsRealCluster(t *testing.T) {
	t.Parallel()
	admin := provider.client
	// createNS makes the tenant namespace of id as kubepact or Liqo make
	// it, labelled, so that Issue takes it and meets what was planted
	// there.
	createNS := func(t *testing.T, id string) {
		if _, err := admin.CoreV1().Namespaces().Create(t.Context(), tenant.Namespace(id), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	saSubject := func(id string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: "ServiceAccount", Name: saidentity.Name(id), Namespace: clusterid.TenantNamespace(id)}}
	}
	tests := []struct {
		name    string
		id      string
		opts    *saidentity.IssueOptions
		plant   func(t *testing.T, id string)
		check   func(err error) bool
		foreign bool // the planted ServiceAccount stays
	}{
		{name: "invalid ID", id: "Not_A_Cluster", check: func(err error) bool { return errors.Is(err, clusterid.ErrInvalid) }},
		{name: "expiration below minimum", opts: &saidentity.IssueOptions{Expiration: 9 * time.Minute},
			check: func(err error) bool { return errors.Is(err, saidentity.ErrInvalidOptions) }},
		{name: "expiration above maximum", opts: &saidentity.IssueOptions{Expiration: 25 * time.Hour},
			check: func(err error) bool { return errors.Is(err, saidentity.ErrInvalidOptions) }},
		{name: "user bound to cluster-admin", check: isPrivileged, plant: func(t *testing.T, id string) {
			plantClusterRoleBinding(t, "planted-"+id, "cluster-admin", []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: saidentity.UserName(id)}})
		}},
		{name: "group reads kube-system Secrets", check: isPrivileged, plant: func(t *testing.T, id string) {
			plantRoleBinding(t, "kube-system", "planted-"+id, "view-secrets-"+id, []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccounts:" + clusterid.TenantNamespace(id)}})
		}},
		{name: "hostile RoleBinding of our name grants edit", check: isPrivileged, plant: func(t *testing.T, id string) {
			createNS(t, id)
			plantRoleBinding(t, clusterid.TenantNamespace(id), saidentity.Name(id), "edit", saSubject(id))
		}},
		{name: "hostile RoleBinding grants Secrets in the tenant namespace", check: isPrivileged, plant: func(t *testing.T, id string) {
			createNS(t, id)
			plantRoleBinding(t, clusterid.TenantNamespace(id), "planted", "view-secrets-"+id, saSubject(id))
		}},
		{name: "hostile ServiceAccount", foreign: true, check: isForeign("ServiceAccount"), plant: func(t *testing.T, id string) {
			createNS(t, id)
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saidentity.Name(id), Labels: map[string]string{clusterid.Label: id}}}
			if _, err := admin.CoreV1().ServiceAccounts(clusterid.TenantNamespace(id)).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "tenant namespace someone else made", check: isSquatted, plant: func(t *testing.T, id string) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterid.TenantNamespace(id)}}
			if _, err := admin.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "hostile ClusterRole of our name", check: isForeign("ClusterRole"), plant: func(t *testing.T, id string) {
			createNS(t, id)
			plantClusterRole(t, saidentity.ClusterName(id))
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			id := tc.id
			if id == "" {
				id = uniqueID(t.Name(), i)
			}
			if tc.plant != nil {
				plantClusterRole(t, "view-secrets-"+id)
				tc.plant(t, id)
			}
			_, err := saidentity.Issue(ctx, realProvider(), endpoint(), id, tc.opts)
			if !tc.check(err) {
				t.Fatalf("Issue: %v", err)
			}
			if clusterid.Validate(id) != nil {
				return
			}
			ns := clusterid.TenantNamespace(id)
			sa, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, saidentity.Name(id), metav1.GetOptions{})
			switch {
			case tc.foreign && (err != nil || saidentity.Owned(sa, id)):
				t.Errorf("the planted ServiceAccount: %v, owned=%v", err, err == nil && saidentity.Owned(sa, id))
			case !tc.foreign && !apierrors.IsNotFound(err):
				t.Errorf("ServiceAccount after a refused Issue: %v, want NotFound", err)
			}
			if r, err := admin.RbacV1().Roles(ns).Get(ctx, saidentity.Name(id), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("Role after a refused Issue: %v %v, want NotFound", r.GetName(), err)
			}
			if b, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, saidentity.ClusterName(id), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ClusterRoleBinding after a refused Issue: %v %v, want NotFound", b.GetName(), err)
			}
		})
	}
}

// isSquatted reports a tenant namespace refused for lacking the tenant
// namespace labels.
func isSquatted(err error) bool {
	var nerr *tenant.NamespaceError
	return errors.As(err, &nerr) && nerr.Label == tenant.NamespaceLabel && errors.Is(err, tenant.ErrNotTenantNamespace)
}

func isPrivileged(err error) bool {
	var pe *rbac.PrivilegedError
	return errors.As(err, &pe) && errors.Is(err, rbac.ErrPrivilegedUser)
}

func isForeign(kind string) func(error) bool {
	return func(err error) bool {
		var fe *saidentity.ForeignError
		return errors.As(err, &fe) && fe.Kind == kind && errors.Is(err, saidentity.ErrForeign)
	}
}

func tokenRequest(seconds int64) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestTokenPolicyRealCluster checks that the admission policy Issue
// installs makes the real API server refuse a consumer's request for a
// token longer than MaxExpiration, which its Role would otherwise allow,
// and still allows one within it.
func TestTokenPolicyRealCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	consumerID := uniqueID(t.Name(), 0)
	id, err := saidentity.Issue(ctx, realProvider(), endpoint(), consumerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := clientsOf(t, id)
	sas := c.CoreV1().ServiceAccounts(clusterid.TenantNamespace(consumerID))
	long := int64((saidentity.MaxExpiration + time.Hour) / time.Second)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The API server enforces a new policy once its informer has it.
	var lastErr error
	waitFor(waitCtx, t, "the policy to be enforced", func() bool {
		_, lastErr = sas.CreateToken(ctx, saidentity.Name(consumerID), tokenRequest(long), metav1.CreateOptions{})
		return lastErr != nil
	})
	if !apierrors.IsForbidden(lastErr) || !strings.Contains(lastErr.Error(), saidentity.TokenPolicyName) {
		t.Fatalf("a token of %d s: %v, want Forbidden by %s", long, lastErr, saidentity.TokenPolicyName)
	}
	within := int64(saidentity.MaxExpiration / time.Second)
	got, err := sas.CreateToken(ctx, saidentity.Name(consumerID), tokenRequest(within), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %d s: %v", within, err)
	}
	if d := time.Until(got.Status.ExpirationTimestamp.Time); d > saidentity.MaxExpiration {
		t.Fatalf("token lives %s", d)
	}
	// Tokens of other ServiceAccounts are not the policy's business.
	other := int64((48 * time.Hour) / time.Second)
	if _, err := provider.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", tokenRequest(other), metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin's token for default/default: %v", err)
	}
}

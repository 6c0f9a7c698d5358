package saidentity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/saidentity"
)

// TestTokenSecretForIdentityIsRefused plays a user who may only create and
// update Secrets in a consumer's tenant namespace. Kubernetes' token
// controller fills a Secret of type kubernetes.io/service-account-token
// with a token that never expires for the ServiceAccount it names, so
// without TokenPolicy that user could mint a lasting token for the
// consumer's identity (remote-<ID>) and hold it past every bound Issue and
// Refresher keep. The policy refuses such a Secret on create, and an
// update that makes another token Secret name the identity; the user's
// other Secrets, and token Secrets of other ServiceAccounts, are not its
// business.
func TestTokenSecretForIdentityIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	consumerID := uniqueID(t.Name(), 0)
	if _, err := saidentity.Issue(ctx, realProvider(), endpoint(), consumerID, nil); err != nil {
		t.Fatal(err)
	}
	ns := clusterid.TenantNamespace(consumerID)
	writer := secretWriter(t, ctx, ns)
	secrets := writer.CoreV1().Secrets(ns)
	tokenSecret := func(name, serviceAccount string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: serviceAccount}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}
	}

	// The policy Issue installed is enforced once the API server's
	// informer has it; until then this create could pass, so it is retried
	// on a fresh name.
	var err error
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n := 0
	waitFor(waitCtx, t, "the policy to be enforced", func() bool {
		n++
		_, err = secrets.Create(ctx, tokenSecret(fmt.Sprintf("minted-%d", n), saidentity.Name(consumerID)), metav1.CreateOptions{})
		return err != nil
	})
	requirePolicyRefusal(t, err)
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "minted-", Annotations: map[string]string{corev1.ServiceAccountNameKey: saidentity.Name(consumerID)}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{})
	requirePolicyRefusal(t, err)

	// Not the policy's business: a token Secret of another ServiceAccount,
	// and an Opaque Secret carrying the same annotation.
	if _, err := provider.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "workload"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := secrets.Create(ctx, tokenSecret("workload-token", "workload"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token Secret for ServiceAccount workload: %v", err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "note", Annotations: map[string]string{corev1.ServiceAccountNameKey: saidentity.Name(consumerID)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an Opaque Secret: %v", err)
	}

	// Turning the other token Secret towards the identity is refused too.
	// The token controller fills that Secret meanwhile: an update that
	// conflicts with it reads the Secret again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := secrets.Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Annotations[corev1.ServiceAccountNameKey] = saidentity.Name(consumerID)
		_, err = secrets.Update(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	requirePolicyRefusal(t, err)
}

// requirePolicyRefusal fails t unless err is the API server's Forbidden.
// The user's Role allows the request, so only admission can refuse it.
func requirePolicyRefusal(t *testing.T, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want Forbidden by %s", err, saidentity.TokenPolicyName)
	}
}

// secretWriter returns a client for a user who may create, get and update
// Secrets in ns, and nothing else.
func secretWriter(t *testing.T, ctx context.Context, ns string) kubernetes.Interface {
	t.Helper()
	user := "secret-writer-" + ns
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "get", "update"}}},
	}
	if _, err := provider.client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := provider.client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(provider.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

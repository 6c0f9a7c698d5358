package kube_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// controlPlaneGroups are the groups of a ControlPlane certificate.
var controlPlaneGroups = []string{csr.ControlPlaneOrganization}

// freshID returns a cluster ID no binding names.
func freshID(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return "cl-fresh-" + hex.EncodeToString(b[:])
}

// bindCluster binds user to clusterRole cluster-wide, as an administrator
// of the provider would have done before kubepact ran.
func bindCluster(t *testing.T, name, user, clusterRole string) {
	t.Helper()
	_, err := providerEnv.client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// checkPrivileged runs rbac.CheckUnprivileged for a ControlPlane user
// until it refuses it, for at most 30 seconds (the authorizer reads
// bindings from a cache), and returns its last error.
func checkPrivileged(ctx context.Context, t *testing.T, r rbac.Reviewer, user string) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := rbac.CheckUnprivileged(ctx, r, user, controlPlaneGroups)
		if errors.Is(err, rbac.ErrPrivilegedUser) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requirePrivileged checks that err refuses user for the probe at index
// probe of rbac.PrivilegeProbes.
func requirePrivileged(t *testing.T, err error, user string, probe int) {
	t.Helper()
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	var pe *rbac.PrivilegedError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, user, pe.User)
	require.Equal(t, []string{csr.ControlPlaneOrganization, rbac.AuthenticatedGroup}, pe.Groups)
	require.Equal(t, rbac.PrivilegeProbes()[probe], pe.Probe)
}

// A consumer whose cluster ID names a user that already holds bindings on
// the provider would inherit them with its certificate: the check, a
// SubjectAccessReview per probe on the real authorizer, refuses it.
func TestCheckUnprivilegedRefusesExistingUsers(t *testing.T) {
	t.Parallel()
	r := kube.NewRBAC(providerEnv.client)

	t.Run("ClusterAdmin", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		bindCluster(t, "kubepact-test-cl-admin", "cl-admin", "cluster-admin")
		requirePrivileged(t, checkPrivileged(ctx, t, r, "cl-admin"), "cl-admin", 0)
	})
	t.Run("EditInKubeSystem", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		_, err := providerEnv.client.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-cl-ops"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cl-ops"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		// edit is aggregated by the controller-manager, rule by rule, on a
		// fresh cluster: wait until it grants the probe looked for.
		var err2 error
		deadline := time.Now().Add(30 * time.Second)
		for {
			err2 = checkPrivileged(ctx, t, r, "cl-ops")
			var pe *rbac.PrivilegedError
			if (errors.As(err2, &pe) && pe.Probe == rbac.PrivilegeProbes()[1]) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		requirePrivileged(t, err2, "cl-ops", 1)
	})
	t.Run("ImpersonatorOnly", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-impersonator"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users", "groups"}, Verbs: []string{"impersonate"}}},
		}
		require.NoError(t, r.ApplyClusterRole(ctx, role))
		bindCluster(t, "kubepact-test-cl-impersonator", "cl-impersonator", role.Name)
		requirePrivileged(t, checkPrivileged(ctx, t, r, "cl-impersonator"), "cl-impersonator", 5)
	})
	t.Run("FreshIDPasses", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		require.NoError(t, rbac.CheckUnprivileged(ctx, r, freshID(t), controlPlaneGroups))
	})
	t.Run("ControlPlaneBindingStaysUnprivileged", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		id := freshID(t)
		ns := clusterid.TenantNamespace(id)
		ensureNamespace(t, ns)
		require.NoError(t, r.ApplyClusterRole(ctx, rbac.ControlPlaneClusterRole()))
		require.NoError(t, r.ApplyRoleBinding(ctx, rbac.ControlPlaneRoleBinding(ns, id)))
		require.Eventually(t, func() bool {
			ok, err := r.Allowed(ctx, id, controlPlaneGroups, authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Group: "authentication.liqo.io", Resource: "resourceslices",
			})
			return err == nil && ok
		}, 30*time.Second, 20*time.Millisecond, "the ControlPlane binding is in force")
		require.NoError(t, rbac.CheckUnprivileged(ctx, r, id, controlPlaneGroups))
	})
}

// One SubjectAccessReview per probe: an unprivileged user, the common case,
// costs len(rbac.PrivilegeProbes()) requests.
func TestCheckUnprivilegedRequests(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	client, err := kubernetes.NewForConfig(countingConfig(providerEnv.cluster.AdminConfig(), &n))
	require.NoError(t, err)
	require.NoError(t, rbac.CheckUnprivileged(t.Context(), kube.NewRBAC(client), freshID(t), controlPlaneGroups))
	require.Equal(t, int64(len(rbac.PrivilegeProbes())), n.Load())
	require.Equal(t, 7, len(rbac.PrivilegeProbes()))
}

// The provider's own client needs create on subjectaccessreviews and
// nothing more for the check; without it the check fails, never passes.
func TestCheckUnprivilegedPermissions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bindCluster(t, "kubepact-test-cl-admin", "cl-admin", "cluster-admin")
	self := "kubepact-test-provider-" + freshID(t)
	cfg := rest.CopyConfig(providerEnv.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: self}
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	r := kube.NewRBAC(client)

	err = rbac.CheckUnprivileged(ctx, r, freshID(t), controlPlaneGroups)
	require.Error(t, err, "a client that may not create SubjectAccessReviews cannot check")
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.NotErrorIs(t, err, rbac.ErrPrivilegedUser)

	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-reviewer"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"},
		}},
	}
	require.NoError(t, kube.NewRBAC(providerEnv.client).ApplyClusterRole(ctx, role))
	bindCluster(t, self, self, role.Name)
	fresh := freshID(t)
	require.Eventually(t, func() bool {
		return rbac.CheckUnprivileged(ctx, r, fresh, controlPlaneGroups) == nil
	}, 30*time.Second, 20*time.Millisecond, "the check passes once the client may create SubjectAccessReviews")
	requirePrivileged(t, checkPrivileged(ctx, t, r, "cl-admin"), "cl-admin", 0)
}

// Allowed sends the user, groups and attributes as given, and fails closed
// when an authorizer could not decide: a review that did not allow the
// request but reports an evaluationError is an error, not "no".
func TestAllowedReadsTheReview(t *testing.T) {
	t.Parallel()
	probe := rbac.PrivilegeProbes()[1]
	tests := []struct {
		name    string
		status  authorizationv1.SubjectAccessReviewStatus
		want    bool
		wantErr bool
	}{
		{name: "allowed", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}, want: true},
		{name: "allowed despite another authorizer's error", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, EvaluationError: "webhook: timeout"}, want: true},
		{name: "no opinion", status: authorizationv1.SubjectAccessReviewStatus{Reason: `RBAC: clusterrole "x" not found`}},
		{name: "denied", status: authorizationv1.SubjectAccessReviewStatus{Denied: true}},
		{name: "not allowed with an error", status: authorizationv1.SubjectAccessReviewStatus{EvaluationError: "webhook: timeout"}, wantErr: true},
		{name: "denied with an error", status: authorizationv1.SubjectAccessReviewStatus{Denied: true, EvaluationError: "webhook: timeout"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := clientfake.NewClientset()
			var sent *authorizationv1.SubjectAccessReview
			client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
				sent = a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
				got := sent.DeepCopy()
				got.Status = tt.status
				return true, got, nil
			})
			ok, err := kube.NewRBAC(client).Allowed(t.Context(), "cl-admin", controlPlaneGroups, probe)
			require.NotNil(t, sent)
			require.Equal(t, authorizationv1.SubjectAccessReviewSpec{
				User: "cl-admin", Groups: controlPlaneGroups, ResourceAttributes: &probe,
			}, sent.Spec)
			require.Equal(t, tt.want, ok)
			if tt.wantErr {
				require.ErrorContains(t, err, tt.status.EvaluationError)
				require.ErrorContains(t, rbac.CheckUnprivileged(t.Context(), kube.NewRBAC(client), "cl-admin", nil), tt.status.EvaluationError)
				return
			}
			require.NoError(t, err)
		})
	}
}

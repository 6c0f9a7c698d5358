package kubepact_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/wire/intercept"
)

// A consumer accepted before its user, or the group of its certificate,
// is granted a privilege: once the provider is told to check again
// (Recheck, as a controller does when a binding naming the consumer
// changes), Accept refuses it, deletes the bindings it had applied and
// signs nothing; once the grant goes, Accept binds it again with the
// certificate already issued.
func TestAcceptRefusesAConsumerGrantedAPrivilegeLater(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grant func(ctx context.Context, t *testing.T, r *fake.RBAC) func()
	}{
		{"its user, cluster-wide", func(ctx context.Context, t *testing.T, r *fake.RBAC) func() {
			b := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "granted-later"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
			}
			require.NoError(t, r.ApplyClusterRoleBinding(ctx, b))
			return func() { require.NoError(t, r.DeleteClusterRoleBinding(ctx, b.Name)) }
		}},
		{"the group of its certificate, in kube-system", func(ctx context.Context, t *testing.T, r *fake.RBAC) func() {
			b := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "granted-later"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: csr.ControlPlaneOrganization}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
			}
			require.NoError(t, r.ApplyRoleBinding(ctx, b))
			return func() { require.NoError(t, r.DeleteRoleBinding(ctx, b.Namespace, b.Name)) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, counting := recheckPair(t, 0) // DefaultRecheckInterval
			stored := acceptedTenant(t, p)
			r := p.providerCluster.RBAC
			require.NoError(t, r.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "everything"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
			}))
			ns := clusterid.TenantNamespace(consumerID)
			bound := func() (controlPlane, clusterWide bool) {
				_, controlPlane = r.RoleBinding(ns, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
				for _, b := range r.ClusterRoleBindings.Objects("") {
					clusterWide = clusterWide || b.Name == rbac.ResourceSliceClusterRoleBindingName(consumerID)
				}
				return controlPlane, clusterWide
			}
			cp, cw := bound()
			require.True(t, cp && cw, "bound once accepted")
			revoke := tc.grant(ctx, t, r)
			signed, asked := p.providerCluster.Signer.Signed(), counting.asked.Load()

			// Within RecheckInterval a pass is trusted, unless the provider
			// is told to check again.
			_, err := p.provider.Accept(ctx, stored)
			require.NoError(t, err, "a pass is trusted for RecheckInterval")
			require.Equal(t, asked, counting.asked.Load())
			p.provider.Recheck(consumerID)
			_, err = p.provider.Accept(ctx, stored)
			require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
			var pe *rbac.PrivilegedError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, consumerID, pe.User)
			var se *step.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, step.CertificateIssued, se.Step)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "not re-signed")
			cp, cw = bound()
			require.False(t, cp, "the ControlPlane RoleBinding deleted")
			require.False(t, cw, "the slice ClusterRoleBinding deleted")

			// The grant goes: accepted again, with the certificate issued.
			revoke()
			p.provider.Recheck(consumerID)
			id, err := p.provider.Accept(ctx, stored)
			require.NoError(t, err)
			require.Equal(t, stored.Status.AuthParams.SignedCRT, id.Spec.AuthParams.SignedCRT)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "not re-signed")
			cp, cw = bound()
			require.True(t, cp && cw, "bound again")
		})
	}
}

// errUnbind is the fault of a binding's deletion.
var errUnbind = errors.New("injected: deleting the binding failed")

// A privileged consumer whose bindings Accept fails to delete gets both
// errors: the refusal (rbac.ErrPrivilegedUser) and the deletion's, so a
// caller retries until the bindings go; the next Accept deletes them.
func TestAcceptRefusingAPrivilegedConsumerReportsAFailedUnbinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newFaultyPair(t, false)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	r := p.providerCluster.RBAC
	require.NoError(t, r.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}))
	require.NoError(t, r.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "granted-later"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
	}))
	p.provider.Recheck(consumerID)
	p.faults.Set(func(_ context.Context, c intercept.Call) error {
		if c.Op == "RBAC.DeleteRoleBinding" && !c.After {
			return errUnbind
		}
		return nil
	})
	_, err = p.provider.Accept(ctx, stored)
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	require.ErrorIs(t, err, errUnbind)
	_, ok := r.RoleBinding(clusterid.TenantNamespace(consumerID), rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.True(t, ok, "still bound: the deletion failed")

	p.faults.Set(nil)
	_, err = p.provider.Accept(ctx, stored)
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	require.NotErrorIs(t, err, errUnbind)
	_, ok = r.RoleBinding(clusterid.TenantNamespace(consumerID), rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.False(t, ok, "unbound")
}

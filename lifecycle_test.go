package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

const tenantNS = "liqo-tenant-" + consumerID

// authenticated returns a pair whose consumer authenticated, and the
// Tenant the consumer sent.
func authenticated(t *testing.T) (*pair, *authv1beta1.Tenant) {
	t.Helper()
	ctx := context.Background()
	p := newPair(t)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	return p, tn
}

func storedCondition(t *testing.T, p *pair) authv1beta1.TenantCondition {
	t.Helper()
	st, err := p.providerCluster.Tenants.Get(context.Background(), tenantNS, consumerID)
	require.NoError(t, err)
	return lifecycle.Condition(st.Spec.TenantCondition)
}

func slice(name string) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: tenantNS,
			Labels:      map[string]string{"liqo.io/replicated": "true", "liqo.io/originID": consumerID, clusterid.Label: consumerID},
			Annotations: map[string]string{"example.com/note": "kept"},
		},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &[]string{consumerID}[0]},
	}
}

func TestCordonUncordon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := authenticated(t)
	_, _ = p.providerCluster.Slices.Put(context.Background(), slice("a"))
	_, _ = p.providerCluster.Slices.Put(context.Background(), slice("b"))

	require.NoError(t, p.provider.Cordon(ctx, consumerID))
	require.Equal(t, authv1beta1.TenantConditionCordoned, storedCondition(t, p))
	for _, s := range p.providerCluster.Slices.Objects(tenantNS) {
		require.Equal(t, map[string]string{lifecycle.CordonAnnotation: "true", "example.com/note": "kept"}, s.Annotations, s.Name)
		require.Equal(t, consumerID, s.Labels[clusterid.Label])
	}
	// The ControlPlane identity keeps its binding.
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.True(t, ok)

	require.NoError(t, p.provider.Uncordon(ctx, consumerID))
	require.Equal(t, authv1beta1.TenantConditionActive, storedCondition(t, p))
	for _, s := range p.providerCluster.Slices.Objects(tenantNS) {
		require.Equal(t, map[string]string{"example.com/note": "kept"}, s.Annotations, s.Name)
		require.Len(t, s.Labels, 3)
	}
}

func TestTransitionsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := authenticated(t)
	var te *lifecycle.TransitionError

	before := p.providerCluster.Tenants.Writes()
	err := p.provider.Uncordon(ctx, consumerID)
	require.ErrorAs(t, err, &te)
	require.Equal(t, lifecycle.TransitionError{From: authv1beta1.TenantConditionActive, To: authv1beta1.TenantConditionActive}, *te)
	require.Equal(t, before, p.providerCluster.Tenants.Writes(), "a refused transition writes nothing")

	require.NoError(t, p.provider.Cordon(ctx, consumerID))
	require.ErrorIs(t, p.provider.Cordon(ctx, consumerID), lifecycle.ErrTransition)

	require.NoError(t, p.provider.Drain(ctx, consumerID))
	require.ErrorIs(t, p.provider.Cordon(ctx, consumerID), lifecycle.ErrTransition)
	require.ErrorIs(t, p.provider.Uncordon(ctx, consumerID), lifecycle.ErrTransition)
	require.NoError(t, p.provider.Drain(ctx, consumerID), "draining again resumes")
	require.Equal(t, authv1beta1.TenantConditionDrained, storedCondition(t, p))

	require.ErrorIs(t, p.provider.Cordon(ctx, "unknown"), tenant.ErrNotFound)
	require.ErrorIs(t, p.provider.Drain(ctx, "Not_An_ID"), clusterid.ErrInvalid)
}

// TestAcceptKeepsTheProvidersCondition: the consumer re-applying its Tenant
// offline (which says Active) does not undo a cordon or a drain.
func TestAcceptKeepsTheProvidersCondition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, tn := authenticated(t)
	require.NoError(t, p.provider.Cordon(ctx, consumerID))

	_, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionCordoned, storedCondition(t, p))

	// The stored, cordoned Tenant is accepted again as the reconciler does.
	st, err := p.providerCluster.Tenants.Get(ctx, tenantNS, consumerID)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, st)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionCordoned, storedCondition(t, p))

	require.NoError(t, p.provider.Drain(ctx, consumerID))
	_, err = p.provider.Accept(ctx, tn)
	require.ErrorIs(t, err, lifecycle.ErrDrained)
	require.Equal(t, authv1beta1.TenantConditionDrained, storedCondition(t, p))
	_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.False(t, ok, "a drained Tenant is not bound again")
}

func consumerBinding(namespace, name string, subject rbacv1.Subject, labels map[string]string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Subjects:   []rbacv1.Subject{subject},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
	}
}

func TestDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := authenticated(t)
	pc := p.providerCluster
	pc.Slices.ServesNamespaceMaps = true
	_, _ = pc.Slices.Put(context.Background(), slice("a"))
	pc.Slices.PutNamespaceMaps(tenantNS, 2)
	for _, b := range rbac.ResourceSliceRoleBindings(consumerID, "liqo-virtual-kubelet-remote", []string{"offloaded-1", "offloaded-2"}) {
		require.NoError(t, pc.RBAC.ApplyRoleBinding(ctx, b))
	}
	ours := map[string]string{clusterid.Label: consumerID, rbac.ManagedByLabel: rbac.ManagedByValue}
	group := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID}
	require.NoError(t, pc.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-binding-liqo-virtual-kubelet-remote-clusterwide-" + consumerID, Labels: ours},
		Subjects:   []rbacv1.Subject{group},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}))
	// Bindings labelled for the consumer that are not its own survive.
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	require.NoError(t, pc.RBAC.ApplyRoleBinding(ctx, consumerBinding("team", "alice-edit", alice, ours)))
	require.NoError(t, pc.RBAC.ApplyRoleBinding(ctx, consumerBinding("team", "unmanaged", group, map[string]string{clusterid.Label: consumerID})))
	shared := consumerBinding("team", "shared", group, ours)
	shared.Subjects = append(shared.Subjects, alice)
	require.NoError(t, pc.RBAC.ApplyRoleBinding(ctx, shared))

	require.NoError(t, p.provider.Drain(ctx, consumerID))

	require.Empty(t, pc.Slices.Objects(tenantNS))
	require.Zero(t, pc.Slices.NamespaceMaps(tenantNS))
	require.Empty(t, pc.RBAC.ClusterRoleBindings.Objects(""))
	var left []string
	for _, b := range pc.RBAC.RoleBindings.Objects("") {
		left = append(left, b.Namespace+"/"+b.Name)
	}
	require.Equal(t, []string{"team/alice-edit", "team/shared", "team/unmanaged"}, left)

	// The consumer's user and group are allowed nothing kubepact granted.
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Namespace: tenantNS, Verb: "list", Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"},
		{Namespace: "offloaded-1", Verb: "create", Version: "v1", Resource: "pods"},
		{Verb: "get", Group: "metrics.liqo.io", Resource: "scrape"},
	} {
		ok, err := pc.RBAC.Allowed(ctx, consumerID, []string{csr.ControlPlaneOrganization}, attrs)
		require.NoError(t, err)
		require.False(t, ok, "%+v", attrs)
	}

	// The certificate issued is recorded as revoked until it expires.
	r, err := p.provider.Revocation(ctx, consumerID)
	require.NoError(t, err)
	require.Equal(t, lifecycle.ReasonDrained, r.Reason)
	st, err := pc.Tenants.Get(ctx, tenantNS, consumerID)
	require.NoError(t, err)
	leaf, err := csr.ParseCertificate(st.Status.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.False(t, r.Until.Before(leaf.NotAfter))
}

// A binding replaced under the same name between the list and the delete
// is not deleted.
func TestDeleteBindingChecksUID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := authenticated(t)
	bs, err := p.providerCluster.RBAC.ListBindings(ctx, consumerID)
	require.NoError(t, err)
	require.Len(t, bs, 2, "the ControlPlane RoleBinding and the cluster-wide slice role's binding")
	var stale lifecycle.Binding
	for _, b := range bs {
		if b.Namespace != "" {
			stale = b
		}
	}
	require.NoError(t, p.providerCluster.RBAC.DeleteRoleBinding(ctx, stale.Namespace, stale.Name))
	require.NoError(t, p.providerCluster.RBAC.ApplyRoleBinding(ctx, rbac.ControlPlaneRoleBinding(tenantNS, consumerID)))
	require.NoError(t, p.providerCluster.RBAC.DeleteBinding(ctx, stale))
	_, ok := p.providerCluster.RBAC.RoleBinding(stale.Namespace, stale.Name)
	require.True(t, ok)
}

// TestRecreateAfterRevocation: after a revocation (a drain, a Tenant
// deleted asking for it, Provider.Revoke) a Tenant for the same consumer is
// not bound again while a certificate issued before may be valid, unless
// the administrator readmits the consumer.
func TestRecreateAfterRevocation(t *testing.T) {
	t.Parallel()
	for name, revoke := range map[string]func(context.Context, *pair) error{
		"drain then delete": func(ctx context.Context, p *pair) error {
			if err := p.provider.Drain(ctx, consumerID); err != nil {
				return err
			}
			return p.provider.Forget(ctx, consumerID)
		},
		"revoke": func(ctx context.Context, p *pair) error { return p.provider.Revoke(ctx, consumerID) },
		"asked by the consumer": func(ctx context.Context, p *pair) error {
			st, err := p.providerCluster.Tenants.Get(ctx, tenantNS, consumerID)
			if err != nil {
				return err
			}
			st.Annotations[lifecycle.RevokeAnnotation] = "true"
			if _, err := p.providerCluster.Tenants.Apply(ctx, st); err != nil {
				return err
			}
			return p.provider.Forget(ctx, consumerID)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, _ := authenticated(t)
			require.NoError(t, revoke(ctx, p))
			r, err := p.provider.Revocation(ctx, consumerID)
			require.NoError(t, err)
			require.Zero(t, p.providerCluster.Certificates.Len(), "a revocation drops the cached certificate")

			again := func() error {
				n, err := p.provider.IssueNonce(ctx, consumerID)
				require.NoError(t, err)
				tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
				require.NoError(t, err)
				_, err = p.provider.Accept(ctx, tn)
				return err
			}
			signed := p.providerCluster.Signer.Signed()
			err = again()
			var revoked *lifecycle.RevokedError
			require.ErrorAs(t, err, &revoked)
			require.Equal(t, r.Until, revoked.Until)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing is signed")
			_, ok := p.providerCluster.RBAC.RoleBinding(tenantNS, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
			require.False(t, ok, "nothing is bound")

			// Until the record's end, then no longer.
			p.clock.SetTime(r.Until)
			require.ErrorIs(t, again(), lifecycle.ErrRevoked)
			p.clock.SetTime(r.Until.Add(time.Second))
			require.NoError(t, again())
		})
	}
	t.Run("readmit", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		p, tn := authenticated(t)
		require.NoError(t, p.provider.Drain(ctx, consumerID))
		require.NoError(t, p.provider.Readmit(ctx, consumerID))
		_, err := p.provider.Accept(ctx, tn)
		require.ErrorIs(t, err, lifecycle.ErrDrained, "readmitting does not undrain a Tenant")
		require.NoError(t, p.provider.Forget(ctx, consumerID))
		require.NoError(t, p.provider.Readmit(ctx, consumerID))
		_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
	})
}

// Forgetting a consumer that was never issued a certificate records nothing.
func TestForgetUnknownRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	require.Zero(t, p.providerCluster.Revocations.Len())
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}

// A record can only grow: forgetting after a drain keeps the later end.
func TestRevocationIsNeverShortened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := authenticated(t)
	require.NoError(t, p.provider.Drain(ctx, consumerID))
	first, err := p.provider.Revocation(ctx, consumerID)
	require.NoError(t, err)
	far := first.Until.Add(1000 * time.Hour)
	require.NoError(t, p.providerCluster.Revocations.Put(ctx, lifecycle.Revocation{ConsumerID: consumerID, Until: far, Reason: lifecycle.ReasonDrained}))
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	r, err := p.provider.Revocation(ctx, consumerID)
	require.NoError(t, err)
	require.False(t, r.Until.Before(far))
}

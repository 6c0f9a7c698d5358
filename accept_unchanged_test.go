package kubepact_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/wire/memory"
)

// cachedRecords reads the fake provider's records as a cache would hold
// them.
func cachedRecords(c *memory.Cluster) provider.CachedRecords {
	return provider.CachedRecords{
		Nonces:       peeker{c.Nonces},
		Certificates: c.Certificates,
		Revocations:  c.Revocations,
		Bindings:     fakeBindings{c.RBAC},
		Grants:       fakeGrants{c.RBAC},
		Commitments:  c.Commitments,
	}
}

// fakeGrants is a provider.GrantReader over a fake RBAC, which it scans as
// a controller's index of its cache finds the bindings
// (rbac.RoleBindingGrantees, rbac.ClusterRoleBindingGrantees).
type fakeGrants struct{ rbac *fake.RBAC }

func (g fakeGrants) Grants(_ context.Context, user string, groups []string) ([]string, error) {
	want := rbac.IdentityKeys(user, groups)
	names := func(keys []string, name string) []string {
		if slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(want, k) }) {
			return []string{name}
		}
		return nil
	}
	var found []string
	for _, b := range g.rbac.RoleBindings.Objects("") {
		found = append(found, names(rbac.RoleBindingGrantees(b), "RoleBinding "+b.Namespace+"/"+b.Name)...)
	}
	for _, b := range g.rbac.ClusterRoleBindings.Objects("") {
		found = append(found, names(rbac.ClusterRoleBindingGrantees(b), "ClusterRoleBinding "+b.Name)...)
	}
	return found, nil
}

// peeker peeks at a nonce store's entries with Get.
type peeker struct{ nonce.Store }

func (p peeker) Peek(ctx context.Context, id string) (nonce.Entry, bool) {
	e, err := p.Get(ctx, id)
	return e, err == nil
}

// fakeBindings is a provider.BindingReader over a fake RBAC.
type fakeBindings struct{ rbac *fake.RBAC }

func (b fakeBindings) RoleBindingApplied(_ context.Context, want *rbacv1.RoleBinding) (bool, error) {
	got, ok := b.rbac.RoleBinding(want.Namespace, want.Name)
	return ok && got.RoleRef == want.RoleRef && slices.Equal(got.Subjects, want.Subjects) &&
		equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences), nil
}

func (b fakeBindings) ClusterRoleBindingApplied(_ context.Context, want *rbacv1.ClusterRoleBinding) (bool, error) {
	for _, got := range b.rbac.ClusterRoleBindings.Objects("") {
		if got.Name == want.Name {
			return got.RoleRef == want.RoleRef && slices.Equal(got.Subjects, want.Subjects), nil
		}
	}
	return false, nil
}

// ClusterRoleBindingStored makes fakeBindings a
// provider.ClusterBindingFinder.
func (b fakeBindings) ClusterRoleBindingStored(_ context.Context, name string) (bool, error) {
	for _, got := range b.rbac.ClusterRoleBindings.Objects("") {
		if got.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// acceptedTenant runs a controller's handshake on p (a nonce, the
// consumer's Tenant, Accept) and returns the Tenant as stored.
func acceptedTenant(t *testing.T, p *pair) *authv1beta1.Tenant {
	t.Helper()
	ctx := context.Background()
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, ourTenantFor(t, p, n))
	require.NoError(t, err)
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	return stored
}

// TestUnchanged checks that a Tenant Accept recorded, with its records
// and bindings in place, is reported unchanged with the Identity Accept
// returns, without a write, a review or a signature; and that each change
// Accept must decide on is reported as one.
func TestUnchanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p *pair, tn *authv1beta1.Tenant)
	}{
		{"nothing", nil},
		{"the signature", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) { tn.Spec.Signature[0] ^= 1 }},
		{"the public key", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) { tn.Spec.PublicKey = append(tn.Spec.PublicKey, 0) }},
		{"the CSR", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) { tn.Spec.CSR = append([]byte{' '}, tn.Spec.CSR...) }},
		{"drained", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) {
			tn.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		}},
		{"being deleted", func(_ *testing.T, p *pair, tn *authv1beta1.Tenant) {
			now := metav1.NewTime(p.clock.Now())
			tn.DeletionTimestamp = &now
		}},
		{"the status", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) {
			tn.Status.AuthParams.APIServer = "https://elsewhere.example"
		}},
		{"no finalizer", func(_ *testing.T, _ *pair, tn *authv1beta1.Tenant) { tn.Finalizers = nil }},
		{"the ControlPlane binding deleted", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.RBAC.DeleteRoleBinding(ctx, clusterid.TenantNamespace(consumerID),
				rbac.BindingName(rbac.ControlPlaneClusterRoleName)))
		}},
		{"the cluster-wide binding deleted", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.RBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID)))
		}},
		{"the certificate record deleted", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.Certificates.Delete(ctx, csr.CacheKey{ConsumerID: consumerID}))
		}},
		{"a revocation in force", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.Revocations.Put(ctx, lifecycle.Revocation{
				ConsumerID: consumerID, Until: p.clock.Now().Add(time.Hour), Reason: lifecycle.ReasonRevoked}))
		}},
		{"a ClusterRoleBinding names the consumer's user", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "someone-granted"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			}))
		}},
		{"a RoleBinding names the group of its certificate", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.RBAC.ApplyRoleBinding(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "someone-granted"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: csr.ControlPlaneOrganization}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			}))
		}},
		{"a second ControlPlane RoleBinding elsewhere", func(t *testing.T, p *pair, _ *authv1beta1.Tenant) {
			require.NoError(t, p.providerCluster.RBAC.ApplyRoleBinding(ctx, rbac.ControlPlaneRoleBinding("kube-system", consumerID)))
		}},
		{"the certificate due for re-signing", func(_ *testing.T, p *pair, _ *authv1beta1.Tenant) {
			p.clock.Step(provider.DefaultCertificateLifetime * 9 / 10)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			tn := acceptedTenant(t, p)
			if tc.change != nil {
				tc.change(t, p, tn)
			}
			writes, signed := p.writes(), p.providerCluster.Signer.Signed()
			id, ok := p.provider.Unchanged(ctx, tn, cachedRecords(p.providerCluster))
			require.Equal(t, writes, p.writes(), "Unchanged writes nothing")
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "Unchanged signs nothing")
			if tc.change != nil {
				require.False(t, ok, "a change Accept must decide on")
				return
			}
			require.True(t, ok)
			want, err := p.provider.Accept(ctx, tn)
			require.NoError(t, err)
			require.Equal(t, want, id, "the Identity Accept returns")
		})
	}
}

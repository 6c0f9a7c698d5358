package resourceslice_test

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/resourceslice"
)

// TestVerify covers every rule of Verify in memory: each refusal is a
// *DeniedError naming the field at fault and wrapping ErrDenied and the
// cause's sentinel.
func TestVerify(t *testing.T) {
	t.Parallel()
	const consumerID, providerID, name = "cl-consumer", "cl-provider", "slice-a"
	gen := func() *keys.PrivateKey {
		k, err := keys.Generate(rand.Reader, keys.Ed25519)
		require.NoError(t, err)
		return k
	}
	clusterKey, cpKey, fresh := gen(), gen(), gen()
	clusterPub, err := keys.MarshalPublicKey(clusterKey.Public())
	require.NoError(t, err)
	cpCSR := func(k *keys.PrivateKey) []byte {
		b, err := csr.Create(rand.Reader, k, csr.ControlPlaneSubject(consumerID))
		require.NoError(t, err)
		return b
	}
	// slice is what the consumer built for key, as replicated to the
	// provider: in the consumer's tenant namespace there.
	slice := func(k *keys.PrivateKey) *authv1beta1.ResourceSlice {
		s, err := resourceslice.Build(rand.Reader, consumerID, providerID, name, k, nil)
		require.NoError(t, err)
		s.Namespace = clusterid.TenantNamespace(consumerID)
		return s
	}
	// tenant is the consumer's authenticated Tenant, its ControlPlane CSR
	// for cp.
	tenant := func(cp *keys.PrivateKey) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: clusterid.TenantNamespace(consumerID)},
			Spec:       authv1beta1.TenantSpec{ClusterID: consumerID, AuthzPolicy: authv1beta1.KeysExchange, PublicKey: clusterPub, CSR: cpCSR(cp)},
			Status:     authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{}},
		}
	}
	str := func(s string) *string { return &s }
	now := metav1.Now()

	for _, tc := range []struct {
		name  string
		slice *authv1beta1.ResourceSlice
		edit  func(*authv1beta1.ResourceSlice, *authv1beta1.Tenant)
		// cp is the key of the Tenant's ControlPlane CSR.
		cp     *keys.PrivateKey
		noTen  bool
		field  string
		want   error
		wantID string
	}{
		{name: "cluster key", slice: slice(clusterKey), cp: clusterKey, wantID: consumerID},
		{name: "fresh key beside a per-identity key", slice: slice(fresh), cp: cpKey, wantID: consumerID},
		{name: "any key without a handshake", slice: slice(fresh), cp: clusterKey, wantID: consumerID,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) {
				t.Spec.AuthzPolicy = authv1beta1.TolerateNoHandshake
			}},
		{name: "invalid name", slice: slice(clusterKey), cp: clusterKey, field: "metadata.name", want: resourceslice.ErrMalformed,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Name = "Slice_A" }},
		{name: "no tenant namespace", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrWrongNamespace,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Namespace = "default" }},
		{name: "no consumer ID", slice: slice(clusterKey), cp: clusterKey, field: "spec.consumerClusterID", want: clusterid.ErrInvalid,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.ConsumerClusterID = nil }},
		{name: "empty consumer ID", slice: slice(clusterKey), cp: clusterKey, field: "spec.consumerClusterID", want: clusterid.ErrInvalid,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.ConsumerClusterID = str("") }},
		{name: "another consumer ID", slice: slice(clusterKey), cp: clusterKey, field: "spec.consumerClusterID", want: resourceslice.ErrWrongNamespace,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.ConsumerClusterID = str("cl-other") }},
		{name: "no provider ID", slice: slice(clusterKey), cp: clusterKey, field: "spec.providerClusterID", want: resourceslice.ErrWrongProvider,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.ProviderClusterID = nil }},
		{name: "another provider ID", slice: slice(clusterKey), cp: clusterKey, field: "spec.providerClusterID", want: resourceslice.ErrWrongProvider,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.ProviderClusterID = str("cl-other") }},
		{name: "no Tenant", slice: slice(clusterKey), cp: clusterKey, noTen: true, field: "metadata.namespace", want: resourceslice.ErrNoTenant},
		{name: "Tenant not authenticated", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrNoTenant,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) { t.Status.AuthParams = nil }},
		{name: "Tenant being deleted", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrNoTenant,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) { t.DeletionTimestamp = &now }},
		{name: "Tenant of another consumer", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrNoTenant,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) { t.Spec.ClusterID = "cl-other" }},
		{name: "Tenant in another namespace", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrNoTenant,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) { t.Namespace = "liqo-tenant-cl-other" }},
		{name: "Tenant public key unreadable", slice: slice(clusterKey), cp: clusterKey, field: "metadata.namespace", want: resourceslice.ErrNoTenant,
			edit: func(_ *authv1beta1.ResourceSlice, t *authv1beta1.Tenant) { t.Spec.PublicKey = []byte("garbage") }},
		{name: "CSR not the cluster key", slice: slice(fresh), cp: clusterKey, field: "spec.csr", want: csr.ErrKeyMismatch},
		{name: "CSR for the cluster key beside a per-identity key", slice: slice(clusterKey), cp: cpKey, field: "spec.csr", want: csr.ErrKeyMismatch},
		{name: "CSR for the per-identity key", slice: slice(cpKey), cp: cpKey, field: "spec.csr", want: csr.ErrKeyMismatch},
		{name: "CSR unreadable", slice: slice(clusterKey), cp: clusterKey, field: "spec.csr", want: csr.ErrMalformed,
			edit: func(s *authv1beta1.ResourceSlice, _ *authv1beta1.Tenant) { s.Spec.CSR = []byte("garbage") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ten := tc.slice.DeepCopy(), tenant(tc.cp)
			if tc.edit != nil {
				tc.edit(s, ten)
			}
			if tc.noTen {
				ten = nil
			}
			v, err := resourceslice.Verify(s, providerID, ten)
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, tc.wantID, v.ConsumerID)
				return
			}
			require.ErrorIs(t, err, resourceslice.ErrDenied)
			require.ErrorIs(t, err, tc.want)
			var denied *resourceslice.DeniedError
			require.True(t, errors.As(err, &denied))
			require.Equal(t, tc.field, denied.Field)
			require.Nil(t, v)
		})
	}
}

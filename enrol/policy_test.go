package enrol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/resourceslice"
)

func TestPolicyTighten(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name   string
		policy enrol.Policy
		have   resourceslice.Bounds
		want   resourceslice.Bounds
	}{
		{"unset leaves the provider's", enrol.Policy{}, resourceslice.Bounds{MaxSlices: 3, CertificatesPerHour: 9}, resourceslice.Bounds{MaxSlices: 3, CertificatesPerHour: 9}},
		{"tighter holds", enrol.Policy{MaxSlices: n(1), CertificatesPerHour: n(2)}, resourceslice.Bounds{MaxSlices: 3, CertificatesPerHour: 9},
			resourceslice.Bounds{MaxSlices: 1, CertificatesPerHour: 2}},
		{"looser does not", enrol.Policy{MaxSlices: n(10)}, resourceslice.Bounds{MaxSlices: 3}, resourceslice.Bounds{MaxSlices: 3}},
		{"zero refuses every slice", enrol.Policy{MaxSlices: n(0)}, resourceslice.Bounds{MaxSlices: 3}, resourceslice.Bounds{MaxSlices: 0}},
		{"bounds where the provider has none", enrol.Policy{MaxSlices: n(5)}, resourceslice.Bounds{MaxSlices: -1}, resourceslice.Bounds{MaxSlices: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.policy.Tighten(tc.have))
		})
	}
}

func TestFromAuthorizedConsumerPolicy(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	ac := authorizedConsumer(t, c.request, c.cluster)
	two, negative := int32(2), int32(-1)
	ac.Spec.Policy = &peeringv1alpha1.ConsumerPolicy{MaxResourceSlices: &two}
	got, err := enrol.FromAuthorizedConsumer(ac)
	require.NoError(t, err)
	require.NotNil(t, got.Policy.MaxSlices)
	assert.Equal(t, 2, *got.Policy.MaxSlices)
	assert.Nil(t, got.Policy.CertificatesPerHour)

	ac.Spec.Policy.ResourceSliceCertificatesPerHour = &negative
	_, err = enrol.FromAuthorizedConsumer(ac)
	assert.ErrorIs(t, err, enrol.ErrMalformed)
}

// TestPolicySliceClusterWideRole: the policy can withhold the cluster-wide
// slice role, never grant it where the provider does not bind it.
func TestPolicySliceClusterWideRole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		policy        enrol.Policy
		providerBinds bool
		want          bool
	}{
		{"no policy: the provider's", enrol.Policy{}, true, true},
		{"withheld", enrol.Policy{NoSliceClusterWideRole: true}, true, false},
		{"the provider binds none", enrol.Policy{}, false, false},
		{"withheld where the provider binds none", enrol.Policy{NoSliceClusterWideRole: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.policy.SliceClusterWideRole(tc.providerBinds))
		})
	}
}

// TestFromAuthorizedConsumerClusterWideRole: spec.policy
// resourceSliceClusterWideRole false withholds the role; unset or true
// leave it to the provider.
func TestFromAuthorizedConsumerClusterWideRole(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	no, yes := false, true
	for _, tc := range []struct {
		name     string
		policy   *peeringv1alpha1.ConsumerPolicy
		withheld bool
	}{
		{"no policy", nil, false},
		{"unset", &peeringv1alpha1.ConsumerPolicy{}, false},
		{"true", &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &yes}, false},
		{"false", &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &no}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ac := authorizedConsumer(t, c.request, c.cluster)
			ac.Spec.Policy = tc.policy
			got, err := enrol.FromAuthorizedConsumer(ac)
			require.NoError(t, err)
			assert.Equal(t, tc.withheld, got.Policy.NoSliceClusterWideRole)
			assert.Equal(t, !tc.withheld, got.Policy.SliceClusterWideRole(true))
			assert.Nil(t, got.Policy.MaxSlices, "the other bounds stay unset")
			assert.Nil(t, got.Policy.CertificatesPerHour)
		})
	}
}

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

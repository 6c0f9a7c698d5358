package resourceslice_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/resourceslice"
)

func TestSetConditionChangesTimeOnlyOnTransition(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var s authv1beta1.ResourceSliceStatus
	res, auth := authv1beta1.ResourceSliceConditionTypeResources, authv1beta1.ResourceSliceConditionTypeAuthentication
	resourceslice.SetCondition(&s, res, authv1beta1.ResourceSliceConditionAccepted, resourceslice.ReasonResourcesAccepted, "ok", t0)
	resourceslice.SetCondition(&s, auth, authv1beta1.ResourceSliceConditionAccepted, resourceslice.ReasonAuthenticationAccepted, "ok", t0)
	require.Equal(t, auth, s.Conditions[0].Type, "sorted by type")

	resourceslice.SetCondition(&s, res, authv1beta1.ResourceSliceConditionAccepted, resourceslice.ReasonResourcesAccepted, "still ok", t0.Add(time.Hour))
	c := resourceslice.Condition(&s, res)
	require.True(t, c.LastTransitionTime.Time.Equal(t0))
	require.Equal(t, "still ok", c.Message)

	resourceslice.SetCondition(&s, res, authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonResourcesDenied, "no", t0.Add(2*time.Hour))
	require.True(t, resourceslice.Condition(&s, res).LastTransitionTime.Time.Equal(t0.Add(2*time.Hour)))
	require.False(t, resourceslice.Accepted(&s, res))
	require.True(t, resourceslice.Accepted(&s, auth))
	require.Len(t, s.Conditions, 2)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		class authv1beta1.ResourceSliceClass
		tc    authv1beta1.TenantCondition
		was   bool
		want  authv1beta1.ResourceSliceConditionStatus
	}{
		{"", "", false, authv1beta1.ResourceSliceConditionAccepted},
		{"default", authv1beta1.TenantConditionActive, false, authv1beta1.ResourceSliceConditionAccepted},
		{"default", authv1beta1.TenantConditionCordoned, false, authv1beta1.ResourceSliceConditionDenied},
		{"default", authv1beta1.TenantConditionCordoned, true, authv1beta1.ResourceSliceConditionAccepted},
		{"default", authv1beta1.TenantConditionDrained, true, authv1beta1.ResourceSliceConditionDenied},
		{"gpu", authv1beta1.TenantConditionActive, false, authv1beta1.ResourceSliceConditionDenied},
	} {
		got, why := resourceslice.Decide(tt.class, tt.tc, tt.was)
		require.Equal(t, tt.want, got, "%+v: %s", tt, why)
		require.NotEmpty(t, why)
	}
}

func TestBuildAndConsumerOfRejectBadInput(t *testing.T) {
	t.Parallel()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	for _, name := range []string{"", "Slice", "a_b", string(bytes.Repeat([]byte{'a'}, resourceslice.MaxNameLength+1))} {
		_, err := resourceslice.Build(nil, "cl-consumer", "cl-provider", name, key, nil)
		require.ErrorIs(t, err, resourceslice.ErrMalformed, "name %q", name)
	}
	_, err = resourceslice.Build(nil, "Bad", "cl-provider", "slice-a", key, nil)
	require.ErrorIs(t, err, clusterid.ErrInvalid)
	for _, ns := range []string{"default", "liqo-tenant-", "liqo-tenant-UPPER"} {
		_, err := resourceslice.ConsumerOf(ns)
		require.ErrorIs(t, err, resourceslice.ErrWrongNamespace, ns)
	}
}

func ExampleBuild() {
	_, key, _ := ed25519.GenerateKey(nil)
	s, err := resourceslice.Build(nil, "cl-consumer", "cl-provider", "slice-a", key, nil)
	if err != nil {
		panic(err)
	}
	checked, err := csr.Check(s.Spec.CSR, csr.ResourceSlicePolicy("cl-consumer", "slice-a", key.Public()))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Namespace, s.Name, s.Spec.Class, s.Labels[resourceslice.RemoteIDLabel])
	fmt.Println(checked.Subject().CommonName, checked.Subject().Organization)
	// Output:
	// liqo-tenant-cl-provider slice-a default cl-provider
	// slice-a-573ffa690333 [cl-consumer]
}

func ExampleDecide() {
	status, why := resourceslice.Decide("", authv1beta1.TenantConditionCordoned, false)
	fmt.Println(status, why)
	// Output: Denied the tenant is cordoned: no new slice is accepted
}

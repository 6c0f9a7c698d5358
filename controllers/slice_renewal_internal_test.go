package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// An accepted slice comes back at two thirds of its certificate's
// lifetime; a denied or pending one does not.
func TestSliceRenewal(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	chain := selfSigned(t, now, 30*time.Hour)
	status := func(auth authv1beta1.ResourceSliceConditionStatus, params *authv1beta1.AuthParams) *authv1beta1.ResourceSliceStatus {
		return &authv1beta1.ResourceSliceStatus{
			Conditions: []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: auth}},
			AuthParams: params,
		}
	}

	require.Equal(t, 20*time.Hour, sliceRenewal(status(authv1beta1.ResourceSliceConditionAccepted, &authv1beta1.AuthParams{SignedCRT: chain}), now).RequeueAfter)
	require.Zero(t, sliceRenewal(status(authv1beta1.ResourceSliceConditionDenied, &authv1beta1.AuthParams{SignedCRT: chain}), now).RequeueAfter)
	require.Zero(t, sliceRenewal(status(authv1beta1.ResourceSliceConditionAccepted, nil), now).RequeueAfter)
	require.Zero(t, sliceRenewal(nil, now).RequeueAfter)
}

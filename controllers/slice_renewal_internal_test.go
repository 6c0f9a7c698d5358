package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/renewal"
)

// An accepted slice comes back when its certificate falls due for
// re-signing (renewal.ProviderDeadline, between half and two thirds of its
// lifetime); a denied or pending one does not.
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

	cert, err := csr.ParseCertificate(chain)
	require.NoError(t, err)
	require.Equal(t, renewal.ProviderDeadline(cert).Sub(now), sliceRenewal(status(authv1beta1.ResourceSliceConditionAccepted, &authv1beta1.AuthParams{SignedCRT: chain}), now).RequeueAfter)
	require.Zero(t, sliceRenewal(status(authv1beta1.ResourceSliceConditionDenied, &authv1beta1.AuthParams{SignedCRT: chain}), now).RequeueAfter)
	require.Zero(t, sliceRenewal(status(authv1beta1.ResourceSliceConditionAccepted, nil), now).RequeueAfter)
	require.Zero(t, sliceRenewal(nil, now).RequeueAfter)
}

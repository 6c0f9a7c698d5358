package tenant_test

import (
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

const providerID = "cl-provider"

// signedTenant returns a Tenant with a version 2 transcript, and the key
// and nonce behind it.
func signedTenant(t *testing.T, proxy string) (*authv1beta1.Tenant, nonce.Nonce, time.Time) {
	t.Helper()
	now := time.Now()
	n := mustNonce(t)
	tn, err := tenant.Build(consumerID, mustKey(t, keys.Ed25519), n,
		&tenant.BuildOptions{ProviderID: providerID, Expiry: now.Add(time.Minute), ProxyURL: proxy})
	require.NoError(t, err)
	require.Equal(t, "2", tn.Annotations[tenant.TranscriptVersionAnnotation])
	return tn, n, now
}

// Every field of the spec that changes the outcome is covered: a Tenant
// whose terms were changed in transit is refused under both policies.
func TestTranscriptCoversTheTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		proxy  string
		tamper func(*authv1beta1.Tenant)
	}{
		{"proxy URL rewritten", "http://proxy.example:3128", func(tn *authv1beta1.Tenant) {
			p := "http://attacker.example:3128"
			tn.Spec.ProxyURL = &p
		}},
		{"proxy URL added", "", func(tn *authv1beta1.Tenant) {
			p := "http://attacker.example:3128"
			tn.Spec.ProxyURL = &p
		}},
		{"proxy URL removed", "http://proxy.example:3128", func(tn *authv1beta1.Tenant) { tn.Spec.ProxyURL = nil }},
		{"authorization policy changed", "", func(tn *authv1beta1.Tenant) {
			tn.Spec.AuthzPolicy = authv1beta1.TolerateNoHandshake
		}},
		{"tenant condition changed", "", func(tn *authv1beta1.Tenant) {
			tn.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
		}},
		{"version annotation removed (downgrade to 1)", "http://proxy.example:3128", func(tn *authv1beta1.Tenant) {
			delete(tn.Annotations, tenant.TranscriptVersionAnnotation)
		}},
		{"unknown version", "", func(tn *authv1beta1.Tenant) { tn.Annotations[tenant.TranscriptVersionAnnotation] = "3" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tn, n, now := signedTenant(t, tc.proxy)
			for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
				_, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: policy, Now: now})
				require.NoError(t, err, "untampered, %v", policy)
			}
			tc.tamper(tn)
			for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
				v, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: policy, Now: now})
				require.Nil(t, v)
				require.ErrorIs(t, err, tenant.ErrTranscriptMismatch, "%v", policy)
			}
		})
	}
}

// The API server fills in the default policy and condition; a Tenant sent
// without them verifies the same as its stored form.
func TestTranscriptDefaultsAreEquivalent(t *testing.T) {
	t.Parallel()
	tn, n, now := signedTenant(t, "")
	tn.Spec.AuthzPolicy, tn.Spec.TenantCondition = "", ""
	_, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict, Now: now})
	require.NoError(t, err)
}

// versionOne re-signs tn's transcript in the version 1 encoding, as older
// kubepact consumers did.
func versionOne(t *testing.T, key *keys.PrivateKey, tn *authv1beta1.Tenant, n nonce.Nonce, expiry time.Time) {
	t.Helper()
	msg, err := tenant.Transcript{Version: 1, ProviderID: providerID, ConsumerID: tn.Spec.ClusterID, Nonce: n,
		CSR: tn.Spec.CSR, Expiry: expiry}.Marshal()
	require.NoError(t, err)
	sig, err := keys.SignMessage(nil, key, msg)
	require.NoError(t, err)
	tn.Annotations = map[string]string{
		tenant.TranscriptSignatureAnnotation: base64.StdEncoding.EncodeToString(sig),
		tenant.TranscriptProviderAnnotation:  providerID,
		tenant.TranscriptExpiryAnnotation:    strconv.FormatInt(expiry.Unix(), 10),
	}
}

// A version 1 transcript covers no terms: it is still accepted where that
// loses nothing (Compatible, no proxy, default policy and condition) and
// refused everywhere else.
func TestTranscriptVersionOne(t *testing.T) {
	t.Parallel()
	now := time.Now()
	expiry := now.Add(time.Minute).Truncate(time.Second)
	key := mustKey(t, keys.Ed25519)
	n := mustNonce(t)
	build := func(proxy string) *authv1beta1.Tenant {
		tn, err := tenant.Build(consumerID, key, n, &tenant.BuildOptions{ProxyURL: proxy})
		require.NoError(t, err)
		versionOne(t, key, tn, n, expiry)
		return tn
	}

	v, err := tenant.Verify(build(""), n, &tenant.VerifyOptions{ProviderID: providerID, Now: now})
	require.NoError(t, err)
	require.True(t, v.Transcript)

	_, err = tenant.Verify(build(""), n, &tenant.VerifyOptions{ProviderID: providerID, Policy: tenant.Strict, Now: now})
	require.ErrorIs(t, err, tenant.ErrTranscriptMismatch)

	_, err = tenant.Verify(build("http://proxy.example:3128"), n, &tenant.VerifyOptions{ProviderID: providerID, Now: now})
	require.ErrorIs(t, err, tenant.ErrTranscriptMismatch)

	cordoned := build("")
	cordoned.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	_, err = tenant.Verify(cordoned, n, &tenant.VerifyOptions{ProviderID: providerID, Now: now})
	require.ErrorIs(t, err, tenant.ErrTranscriptMismatch)
}

// Recheck judges a verified Tenant at another time exactly as Verify
// would: the same verdict and, on a refusal, the same typed error.
func TestRecheckAgreesWithVerify(t *testing.T) {
	t.Parallel()
	tn, n, now := signedTenant(t, "")
	v, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Now: now})
	require.NoError(t, err)
	require.True(t, v.Transcript)
	require.Equal(t, now.Add(time.Minute).Truncate(time.Second), v.Expiry)
	for _, tc := range []struct {
		name    string
		at      time.Time
		expired bool
	}{
		{"as verified", now, false},
		{"just before the expiry", v.Expiry.Add(-time.Second), false},
		{"at the expiry", v.Expiry, true},
		{"after the expiry", v.Expiry.Add(time.Hour), true},
		{"more than the longest lifetime ahead", v.Expiry.Add(-tenant.MaxTranscriptLifetime - time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, want := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Now: tc.at})
			got := v.Recheck(tc.at)
			if !tc.expired {
				require.NoError(t, want)
				require.NoError(t, got)
				return
			}
			require.ErrorIs(t, want, tenant.ErrTranscriptExpired)
			require.ErrorIs(t, got, tenant.ErrTranscriptExpired)
			var wantField, gotField *tenant.FieldError
			require.ErrorAs(t, want, &wantField)
			require.ErrorAs(t, got, &gotField)
			require.Equal(t, wantField.Tenant, gotField.Tenant)
			require.Equal(t, wantField.Field, gotField.Field)
		})
	}
}

// A Tenant verified without a transcript (a Liqo consumer's) depends on no
// time: Recheck passes it at any time.
func TestRecheckWithoutTranscript(t *testing.T) {
	t.Parallel()
	n := mustNonce(t)
	tn, err := tenant.Build(consumerID, mustKey(t, keys.Ed25519), n, nil)
	require.NoError(t, err)
	v, err := tenant.Verify(tn, n, nil)
	require.NoError(t, err)
	require.False(t, v.Transcript)
	require.True(t, v.Expiry.IsZero())
	require.NoError(t, v.Recheck(time.Now().Add(100*365*24*time.Hour)))
}

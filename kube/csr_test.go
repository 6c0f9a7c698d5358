package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// approverFunc adapts a function to csr.Approver.
type approverFunc func(ctx context.Context, name string, c *csr.Checked) error

func (f approverFunc) Approve(ctx context.Context, name string, c *csr.Checked) error {
	return f(ctx, name, c)
}

func checkedCSR(t *testing.T, cn string) *csr.Checked {
	t.Helper()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(cn))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy(cn, key.Public()))
	require.NoError(t, err)
	return checked
}

// setCondition adds a condition to the CSR name, as an administrator or a
// signer would.
func setCondition(ctx context.Context, name string, cond certificatesv1.CertificateSigningRequestCondition) error {
	api := provider.client.CertificatesV1().CertificateSigningRequests()
	obj, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cond.Status, cond.LastUpdateTime = corev1.ConditionTrue, metav1.Now()
	obj.Status.Conditions = append(obj.Status.Conditions, cond)
	if cond.Type == certificatesv1.CertificateFailed {
		_, err = api.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	} else {
		_, err = api.UpdateApproval(ctx, name, obj, metav1.UpdateOptions{})
	}
	return err
}

// TestCSRSignerOutcomes checks that a request the API server never issues
// ends with a typed error, within the caller's deadline.
func TestCSRSignerOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		approve approverFunc
		check   func(t *testing.T, err error)
	}{
		{"denied on the API server", func(ctx context.Context, name string, _ *csr.Checked) error {
			return setCondition(ctx, name, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateDenied, Reason: "AdminDenied", Message: "not this one"})
		}, func(t *testing.T, err error) {
			var denied *csr.DeniedError
			require.ErrorAs(t, err, &denied)
			require.Equal(t, "AdminDenied", denied.Reason)
		}},
		{"failed by the signer", func(ctx context.Context, name string, _ *csr.Checked) error {
			return setCondition(ctx, name, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateFailed, Reason: "SignerFailed", Message: "no"})
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, csr.ErrFailed)
		}},
		{"deleted before it was issued", func(ctx context.Context, name string, _ *csr.Checked) error {
			return provider.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, csr.ErrFailed)
		}},
		{"never approved", func(context.Context, string, *csr.Checked) error { return nil },
			func(t *testing.T, err error) {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}},
		{"approver refuses", func(_ context.Context, name string, _ *csr.Checked) error {
			return &csr.DeniedError{Name: name, Reason: "Policy"}
		}, func(t *testing.T, err error) {
			var denied *csr.DeniedError
			require.ErrorAs(t, err, &denied)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const deadline = 3 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			_, err := kube.NewCSRSigner(provider.client, tt.approve).Sign(ctx, csr.Request{CSR: checkedCSR(t, "cl-outcome"), Lifetime: time.Hour})
			require.Error(t, err)
			tt.check(t, err)
			require.Less(t, time.Since(start), deadline+time.Second, "Sign must return by the caller's deadline")
		})
	}
}

// TestCSRSignerReusesItsRequest checks that signing the same CSR again
// re-uses the existing CertificateSigningRequest.
func TestCSRSignerReusesItsRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checked := checkedCSR(t, "cl-reuse")
	approvals := 0
	approver := approverFunc(func(ctx context.Context, name string, c *csr.Checked) error {
		approvals++
		return kube.NewApprover(provider.client).Approve(ctx, name, c)
	})
	signer := kube.NewCSRSigner(provider.client, approver)
	first, err := signer.Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	second, err := signer.Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	require.Equal(t, first, second)
	require.Equal(t, 1, approvals, "an issued request is not approved again")

	cert, err := csr.ParseCertificate(first)
	require.NoError(t, err)
	life := cert.NotAfter.Sub(cert.NotBefore)
	require.InDelta(t, (time.Hour + 5*time.Minute).Seconds(), life.Seconds(), 60, "lifetime requested, backdated 5 minutes")
}

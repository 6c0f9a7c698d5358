package kube_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

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
	api := providerEnv.client.CertificatesV1().CertificateSigningRequests()
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
			return providerEnv.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
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
	updates := csrUpdates(t)
	for _, tt := range tests {
		for _, mode := range []struct {
			name string
			opts *kube.CSRSignerOptions
		}{{"watched", nil}, {"informed", &kube.CSRSignerOptions{Updates: updates}}} {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				const deadline = 3 * time.Second
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				signer := kube.NewCSRSignerWithOptions(providerEnv.client, tt.approve, mode.opts)
				_, err := signer.Sign(ctx, csr.Request{CSR: checkedCSR(t, "cl-outcome"), Lifetime: time.Hour})
				require.Error(t, err)
				tt.check(t, err)
				require.Less(t, time.Since(start), deadline+time.Second, "Sign must return by the caller's deadline")
			})
		}
	}
}

// csrUpdates returns a kube.CSRUpdates fed by an informer on the provider's
// CertificateSigningRequests carrying kube.CSRLabel, as a controller's,
// running until t ends.
func csrUpdates(t *testing.T) *kube.CSRUpdates {
	t.Helper()
	api := providerEnv.client.CertificatesV1().CertificateSigningRequests()
	label := func(o *metav1.ListOptions) { o.LabelSelector = kube.CSRLabel }
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			label(&o)
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			label(&o)
			return api.Watch(ctx, o)
		},
	}, &certificatesv1.CertificateSigningRequest{}, 0, toolscache.Indexers{})
	updates := kube.NewCSRUpdates()
	_, err := informer.AddEventHandler(updates)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go informer.RunWithContext(ctx)
	require.True(t, toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	return updates
}

// A CSRSigner fed by CSRUpdates opens no watch of its own: its certificate
// comes from the informer, waiting and briefly waiting alike.
func TestCSRSignerInformed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	updates := csrUpdates(t)
	var watches atomic.Int64
	cfg := providerEnv.cluster.AdminConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("watch") == "true" {
				watches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, opts := range []*kube.CSRSignerOptions{
		{Updates: updates},
		{Updates: updates, NoWait: true, Wait: 30 * time.Second},
	} {
		r := csr.Request{CSR: checkedCSR(t, "cl-informed"), Lifetime: time.Hour}
		cert, err := kube.NewCSRSignerWithOptions(cs, kube.NewApprover(cs), opts).Sign(ctx, r)
		require.NoError(t, err)
		_, err = csr.CheckIssued(cert, r, time.Now())
		require.NoError(t, err)
	}
	require.Zero(t, watches.Load(), "no watch of the signer's own")
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
		return kube.NewApprover(providerEnv.client).Approve(ctx, name, c)
	})
	signer := kube.NewCSRSigner(providerEnv.client, approver)
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

package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
)

// TestCSRSignerEnsureErrors: each API request Sign makes to find or create
// its CertificateSigningRequest fails in turn, on a client in memory, and
// Sign returns that error, wrapped so that apierrors still tells what it
// is, naming what it was doing, and approves nothing.
func TestCSRSignerEnsureErrors(t *testing.T) {
	t.Parallel()
	csrs := schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}
	forbidden := apierrors.NewForbidden(csrs, "", nil)
	internal := apierrors.NewInternalError(context.DeadlineExceeded)
	tenYears := int32(10 * 365 * 24 * 3600)
	for _, tc := range []struct {
		name string
		// atOwnName, when set, is what holds the request's own name.
		atOwnName func(obj *certificatesv1.CertificateSigningRequest)
		verb      string
		resource  string
		// generated fails only the create under a generated name.
		generated bool
		fail      error
		is        func(error) bool
		says      string
	}{
		{name: "create at the request's own name", verb: "create", resource: "certificatesigningrequests", fail: forbidden,
			is: apierrors.IsForbidden, says: "creating CertificateSigningRequest"},
		{name: "list after the own name is taken", verb: "list", resource: "certificatesigningrequests", fail: internal,
			atOwnName: func(obj *certificatesv1.CertificateSigningRequest) { obj.Spec.ExpirationSeconds = &tenYears },
			is:        apierrors.IsInternalError, says: "listing CertificateSigningRequests"},
		{name: "create under a generated name", verb: "create", resource: "certificatesigningrequests", generated: true, fail: forbidden,
			atOwnName: func(obj *certificatesv1.CertificateSigningRequest) { obj.Spec.ExpirationSeconds = &tenYears },
			is:        apierrors.IsForbidden, says: "creating CertificateSigningRequest"},
		{name: "review of the user for a reusable object", verb: "create", resource: "selfsubjectreviews", fail: internal,
			atOwnName: func(*certificatesv1.CertificateSigningRequest) {},
			is:        apierrors.IsInternalError, says: "creating SelfSubjectReview"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := csr.Request{CSR: checkedCSR(t, "cl-errors"), Lifetime: time.Hour}
			var objects []runtime.Object
			if tc.atOwnName != nil {
				obj := kubepactObject(r)
				obj.GenerateName, obj.Name = "", kube.CSRGenerateName+obj.Labels[kube.CSRHashLabel]
				tc.atOwnName(obj)
				objects = append(objects, obj)
			}
			client := k8sfake.NewClientset(objects...)
			client.PrependReactor(tc.verb, tc.resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
				if c, ok := a.(k8stesting.CreateAction); ok && tc.generated {
					if obj := c.GetObject().(*certificatesv1.CertificateSigningRequest); obj.Name != "" {
						return false, nil, nil
					}
				}
				return true, nil, tc.fail
			})
			approved := false
			signer := kube.NewCSRSignerWithOptions(client, approverFunc(func(context.Context, string, *csr.Checked) error {
				approved = true
				return nil
			}), &kube.CSRSignerOptions{NoWait: true})

			_, err := signer.Sign(ctx, r)
			require.Error(t, err)
			require.True(t, tc.is(err), "%v", err)
			require.Contains(t, err.Error(), tc.says)
			require.False(t, approved, "an object was approved")
		})
	}
}

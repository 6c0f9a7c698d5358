package kube_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	certificatesclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
)

// planter is a user of the provider cluster allowed to create
// CertificateSigningRequests (through the built-in ClusterRole
// system:node-bootstrapper), and nothing kubepact needs.
const planter = "csr-planter"

// planterClient returns a client of the provider cluster that acts as
// planter, impersonated by the admin.
func planterClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	_, err := providerEnv.client.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-" + planter},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: planter}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// The API server's authorizer learns of a new binding from its own
	// watch, a moment after the create returned.
	require.Eventually(t, func() bool {
		review, err := providerEnv.client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: planter,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: "create", Group: certificatesv1.GroupName, Version: "v1", Resource: "certificatesigningrequests",
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return review.Status.Allowed
	}, 10*time.Second, 10*time.Millisecond, "%s allowed to create CertificateSigningRequests", planter)
	cfg := providerEnv.cluster.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: planter}
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// kubepactObject returns the CertificateSigningRequest a CSRSigner creates
// for r, with the labels it finds it by.
func kubepactObject(r csr.Request) *certificatesv1.CertificateSigningRequest {
	request := r.CSR.PEM()
	sum := sha256.Sum256(request)
	secs := int32(r.Lifetime / time.Second)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "planted-",
			Labels:       map[string]string{kube.CSRLabel: "true", kube.CSRHashLabel: hex.EncodeToString(sum[:16])},
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: &secs,
		},
	}
}

// csrAPI returns the CertificateSigningRequests of the provider cluster.
func csrAPI() certificatesclient.CertificateSigningRequestInterface {
	return providerEnv.client.CertificatesV1().CertificateSigningRequests()
}

// requireUntouched checks that the CertificateSigningRequest name is
// neither approved nor issued.
func requireUntouched(t *testing.T, name string) {
	t.Helper()
	obj, err := csrAPI().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range obj.Status.Conditions {
		require.NotEqual(t, certificatesv1.CertificateApproved, c.Type, "CertificateSigningRequest %s was approved", name)
	}
	require.Empty(t, obj.Status.Certificate, "CertificateSigningRequest %s was issued", name)
}

// TestCSRSignerIgnoresPlantedRequests checks that a CertificateSigningRequest
// carrying kubepact's labels and the consumer's request, but planted by
// someone else or asking for more than kubepact does, is neither approved
// nor re-used: Sign creates its own and returns a certificate that passes
// csr.CheckIssued.
func TestCSRSignerIgnoresPlantedRequests(t *testing.T) {
	tenYears := int32(10 * 365 * 24 * 3600)
	tests := []struct {
		name    string
		byOther bool
		plant   func(obj *certificatesv1.CertificateSigningRequest)
	}{
		{"ten-year lifetime", false, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.ExpirationSeconds = &tenYears
		}},
		{"signer's default lifetime", false, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.ExpirationSeconds = nil
		}},
		{"server auth", false, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.UsageServerAuth)
		}},
		{"another signer", false, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.SignerName = "example.com/any-signer"
			obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.UsageServerAuth, certificatesv1.UsageCertSign)
		}},
		{"made by another user", true, func(*certificatesv1.CertificateSigningRequest) {}},
		{"made by another user, at the request's own name", true, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.GenerateName, obj.Name = "", kube.CSRGenerateName+obj.Labels[kube.CSRHashLabel]
		}},
		{"ten-year lifetime, at the request's own name", false, func(obj *certificatesv1.CertificateSigningRequest) {
			obj.GenerateName, obj.Name = "", kube.CSRGenerateName+obj.Labels[kube.CSRHashLabel]
			obj.Spec.ExpirationSeconds = &tenYears
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := csr.Request{CSR: checkedCSR(t, "cl-planted"), Lifetime: time.Hour}
			obj := kubepactObject(r)
			tt.plant(obj)
			creator := providerEnv.client
			if tt.byOther {
				creator = planterClient(t)
			}
			planted, err := creator.CertificatesV1().CertificateSigningRequests().Create(ctx, obj, metav1.CreateOptions{})
			require.NoError(t, err)
			if tt.byOther {
				require.Equal(t, planter, planted.Spec.Username)
			}

			signer := kube.NewCSRSigner(providerEnv.client, kube.NewApprover(providerEnv.client))
			for i := range 2 {
				start := time.Now()
				cert, err := signer.Sign(ctx, r)
				require.NoError(t, err, "Sign %d", i+1)
				_, err = csr.CheckIssued(cert, r, start)
				require.NoError(t, err, "Sign %d", i+1)
				requireUntouched(t, planted.Name)
			}

			list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRHashLabel + "=" + obj.Labels[kube.CSRHashLabel]})
			require.NoError(t, err)
			require.Len(t, list.Items, 2, "the planted object and kubepact's own, re-used by the second Sign")
			for _, o := range list.Items {
				if o.Name == planted.Name {
					continue
				}
				require.True(t, strings.HasPrefix(o.Name, kube.CSRGenerateName), o.Name)
				require.Equal(t, testcluster.AdminUser, o.Spec.Username)
				require.NotEmpty(t, o.Status.Certificate)
			}
		})
	}
}

// TestCSRSignerReusesItsUsersRequest checks that a new CSRSigner, which has
// not created anything yet, re-uses the object another CSRSigner of the same
// user made for the same request, as after a restart.
func TestCSRSignerReusesItsUsersRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := csr.Request{CSR: checkedCSR(t, "cl-restart"), Lifetime: time.Hour}
	first, err := kube.NewCSRSigner(providerEnv.client, kube.NewApprover(providerEnv.client)).Sign(ctx, r)
	require.NoError(t, err)

	var approvals atomic.Int64
	approver := approverFunc(func(ctx context.Context, name string, c *csr.Checked) error {
		approvals.Add(1)
		return kube.NewApprover(providerEnv.client).Approve(ctx, name, c)
	})
	second, err := kube.NewCSRSigner(providerEnv.client, approver).Sign(ctx, r)
	require.NoError(t, err)
	require.Equal(t, first, second, "the certificate of the existing object")
	require.Zero(t, approvals.Load())
	list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRHashLabel + "=" + kubepactObject(r).Labels[kube.CSRHashLabel]})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
}

// TestApproverRefusesForeignRequests checks that Approver, asked by name,
// approves nothing but the checked request through
// kubernetes.io/kube-apiserver-client with kubepact's usages.
func TestApproverRefusesForeignRequests(t *testing.T) {
	other := checkedCSR(t, "cl-other").PEM()
	tests := []struct {
		name  string
		plant func(obj *certificatesv1.CertificateSigningRequest)
	}{
		{"another request", func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.Request = other
		}},
		{"server auth", func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.UsageServerAuth)
		}},
		{"no client auth", func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		}},
		{"another signer", func(obj *certificatesv1.CertificateSigningRequest) {
			obj.Spec.SignerName = "example.com/any-signer"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := csr.Request{CSR: checkedCSR(t, "cl-foreign"), Lifetime: time.Hour}
			obj := kubepactObject(r)
			tt.plant(obj)
			planted, err := csrAPI().Create(t.Context(), obj, metav1.CreateOptions{})
			require.NoError(t, err)

			err = kube.NewApprover(providerEnv.client).Approve(t.Context(), planted.Name, r.CSR)
			require.ErrorIs(t, err, kube.ErrForeignCSR)
			var denied *csr.DeniedError
			require.ErrorAs(t, err, &denied)
			require.Equal(t, planted.Name, denied.Name)
			requireUntouched(t, planted.Name)
		})
	}
}

// TestApproverHoldsToTheObject checks that Approver approves only the
// object it was asked for, by UID, and not another object of the same name.
func TestApproverHoldsToTheObject(t *testing.T) {
	// create makes a kubepact-like object for r named name.
	create := func(t *testing.T, r csr.Request, name string) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		obj := kubepactObject(r)
		obj.GenerateName, obj.Name = "", name
		created, err := csrAPI().Create(context.Background(), obj, metav1.CreateOptions{})
		require.NoError(t, err)
		return created
	}
	replace := func(t *testing.T, r csr.Request, name string) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		require.NoError(t, csrAPI().Delete(context.Background(), name, metav1.DeleteOptions{}))
		return create(t, r, name)
	}
	requireRefused := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, kube.ErrForeignCSR)
		var denied *csr.DeniedError
		require.ErrorAs(t, err, &denied)
	}

	t.Run("right UID", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: checkedCSR(t, "cl-uid"), Lifetime: time.Hour}
		obj := create(t, r, "uid-right-"+string(uuid.NewUUID())[:8])
		require.NoError(t, kube.NewApprover(providerEnv.client).ApproveUID(t.Context(), obj.Name, obj.UID, r.CSR))
		got, err := csrAPI().Get(t.Context(), obj.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Contains(t, conditionTypes(got), certificatesv1.CertificateApproved)
	})
	t.Run("wrong UID", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: checkedCSR(t, "cl-uid"), Lifetime: time.Hour}
		obj := create(t, r, "uid-wrong-"+string(uuid.NewUUID())[:8])
		requireRefused(t, kube.NewApprover(providerEnv.client).ApproveUID(t.Context(), obj.Name, uuid.NewUUID(), r.CSR))
		requireUntouched(t, obj.Name)
	})
	t.Run("no UID", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: checkedCSR(t, "cl-uid"), Lifetime: time.Hour}
		obj := create(t, r, "uid-none-"+string(uuid.NewUUID())[:8])
		requireRefused(t, kube.NewApprover(providerEnv.client).ApproveUID(t.Context(), obj.Name, "", r.CSR))
		requireUntouched(t, obj.Name)
	})
	t.Run("stale UID", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: checkedCSR(t, "cl-uid"), Lifetime: time.Hour}
		name := "uid-stale-" + string(uuid.NewUUID())[:8]
		old := create(t, r, name)
		// The same name and spec, as someone allowed to delete and create
		// CertificateSigningRequests could make it.
		cur := replace(t, r, name)
		require.NotEqual(t, old.UID, cur.UID)
		requireRefused(t, kube.NewApprover(providerEnv.client).ApproveUID(t.Context(), name, old.UID, r.CSR))
		requireUntouched(t, name)
	})
	t.Run("replaced between read and approval", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: checkedCSR(t, "cl-uid"), Lifetime: time.Hour}
		name := "uid-race-" + string(uuid.NewUUID())[:8]
		create(t, r, name)
		// A client whose first read of the object is followed at once by
		// its replacement, before the approval is written.
		var replaced atomic.Bool
		cfg := providerEnv.cluster.AdminConfig()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(req)
				if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/certificatesigningrequests/"+name) &&
					replaced.CompareAndSwap(false, true) {
					replace(t, r, name)
				}
				return resp, err
			})
		})
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)

		requireRefused(t, kube.NewApprover(client).Approve(t.Context(), name, r.CSR))
		require.True(t, replaced.Load())
		requireUntouched(t, name)
	})
}

func conditionTypes(obj *certificatesv1.CertificateSigningRequest) []certificatesv1.RequestConditionType {
	var types []certificatesv1.RequestConditionType
	for _, c := range obj.Status.Conditions {
		types = append(types, c.Type)
	}
	return types
}

// TestCSRSignerChecksTheCertificate checks that a certificate in an
// object's status, read by name or listed, that is not the one asked for, as a rogue signer or
// whoever stands between kubepact and the API server could put there, is
// not returned.
func TestCSRSignerChecksTheCertificate(t *testing.T) {
	other := checkedCSR(t, "cl-other").PublicKey()
	tests := []struct {
		name  string
		forge func(tmpl *x509.Certificate, pub *crypto.PublicKey)
	}{
		{"server auth", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		}},
		{"CA", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.IsCA, c.KeyUsage = true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		}},
		{"ten years", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
		}},
		{"another key", func(_ *x509.Certificate, pub *crypto.PublicKey) {
			*pub = other
		}},
		{"another subject", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.Subject.Organization = []string{"system:masters"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := csr.Request{CSR: checkedCSR(t, "cl-forged"), Lifetime: time.Hour}
			// The object is issued first, so the second Sign finds it.
			_, err := kube.NewCSRSigner(providerEnv.client, kube.NewApprover(providerEnv.client)).Sign(ctx, r)
			require.NoError(t, err)
			forged := forgeCertificate(t, r, tt.forge)

			cfg := providerEnv.cluster.AdminConfig()
			cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(req)
					if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/certificatesigningrequests") ||
						req.URL.Query().Get("watch") != "" {
						return resp, err
					}
					return substituteCertificates(t, resp, forged), nil
				})
			})
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)

			cert, err := kube.NewCSRSigner(client, kube.NewApprover(client)).Sign(ctx, r)
			require.ErrorIs(t, err, csr.ErrBadCertificate)
			require.Nil(t, cert)
		})
	}
}

// forgeCertificate returns a client certificate for r, as a well-behaved
// signer would issue it now, after forge has changed it, signed by a CA of
// its own.
func forgeCertificate(t *testing.T, r csr.Request, forge func(*x509.Certificate, *crypto.PublicKey)) []byte {
	t.Helper()
	caPEM, caKey, err := csr.GenerateCA(nil, "forger", time.Now(), 24*time.Hour*3650)
	require.NoError(t, err)
	ca, err := csr.ParseCertificate(caPEM)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               r.CSR.Subject(),
		NotBefore:             time.Now().Add(-5 * time.Minute),
		NotAfter:              time.Now().Add(r.Lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	pub := r.CSR.PublicKey()
	forge(tmpl, &pub)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// substituteCertificates returns resp, a list of CertificateSigningRequests
// in JSON, with every issued certificate replaced by cert.
func substituteCertificates(t *testing.T, resp *http.Response, cert []byte) *http.Response {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var list certificatesv1.CertificateSigningRequestList
	var one certificatesv1.CertificateSigningRequest
	switch {
	case resp.StatusCode != http.StatusOK:
	case json.Unmarshal(body, &list) == nil && list.Kind == "CertificateSigningRequestList":
		for i := range list.Items {
			if len(list.Items[i].Status.Certificate) > 0 {
				list.Items[i].Status.Certificate = cert
			}
		}
		body, err = json.Marshal(&list)
		require.NoError(t, err)
	case json.Unmarshal(body, &one) == nil && len(one.Status.Certificate) > 0:
		one.Status.Certificate = cert
		body, err = json.Marshal(&one)
		require.NoError(t, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp
}

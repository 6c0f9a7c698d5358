package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/csr/csrtest"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/identity/identitytest"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/keys/keystest"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/kubeconfig/kubeconfigtest"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/nonce/noncetest"
	"github.com/kubepact/kubepact/rbac/rbactest"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/tenant/tenanttest"
)

// The conformance suites of every port, run against the client-go adapters
// on the real provider cluster. The same suites run against the fakes in
// package fake.

// ensureNamespace creates namespace name on the provider cluster (see
// ensureNamespaceTB).
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ensureNamespaceTB(t, name)
}

// absent turns a not-found error into (nil, nil), as the suites' getters expect.
func absent[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

func TestNonceStoreConformance(t *testing.T) {
	noncetest.Run(t, noncetest.Harness{
		New:      func(*testing.T) nonce.Store { return kube.NewNonceStore(providerEnv.client) },
		Prepare:  func(t *testing.T, id string) { ensureNamespace(t, clusterid.TenantNamespace(id)) },
		Parallel: true,
	})
}

func TestKeyStoreConformance(t *testing.T) {
	n := 0
	keystest.Run(t, keystest.Harness{
		New: func(t *testing.T) keys.Store {
			n++
			return kube.NewKeyStore(providerEnv.client, "keys-"+shortName(t.Name(), n))
		},
	})
}

func TestKeyringConformance(t *testing.T) {
	n := 0
	keystest.RunKeyring(t, keystest.KeyringHarness{
		New: func(t *testing.T) keys.Keyring {
			n++
			return kube.NewKeyring(providerEnv.client, "keyring-"+shortName(t.Name(), n))
		},
	})
}

func TestNamespacesConformance(t *testing.T) {
	for name, ns := range map[string]*kube.Namespaces{
		"CreateFirst": kube.NewNamespaces(providerEnv.client),
		"ReadFirst":   kube.NewNamespaces(providerEnv.client).WithReadFirst(),
	} {
		t.Run(name, func(t *testing.T) {
			tenanttest.RunNamespaces(t, tenanttest.NamespacesHarness{
				New: func(*testing.T) (tenant.Namespaces, func(context.Context, string) (*corev1.Namespace, error)) {
					return ns, func(ctx context.Context, name string) (*corev1.Namespace, error) {
						return absent(providerEnv.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}))
					}
				},
				Parallel: true,
			})
		})
	}
}

func TestTenantStoreConformance(t *testing.T) {
	tenanttest.RunStore(t, tenanttest.StoreHarness{
		New: func(*testing.T) tenant.Store { return kube.NewTenantStore(providerEnv.typed) },
		Update: func(ctx context.Context, tn *authv1beta1.Tenant) error {
			return updateAsOther(ctx, authv1beta1.TenantResource, tn)
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

func TestIdentityStoreConformance(t *testing.T) {
	identitytest.Run(t, identitytest.Harness{
		New: func(*testing.T) identity.Store { return kube.NewIdentityStore(providerEnv.typed) },
		Update: func(ctx context.Context, id *authv1beta1.Identity) error {
			return updateAsOther(ctx, authv1beta1.IdentityResource, id)
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

func TestSecretWriterConformance(t *testing.T) {
	kubeconfigtest.Run(t, kubeconfigtest.Harness{
		New: func(*testing.T) (kubeconfig.SecretWriter, func(context.Context, string, string) (*corev1.Secret, error)) {
			return kube.NewSecretWriter(providerEnv.client), func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
				return absent(providerEnv.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{}))
			}
		},
		Namespace: ensureNamespace,
		Owner: func(t *testing.T, namespace string) metav1.OwnerReference {
			// A real owner, so the garbage collector leaves the Secrets alone.
			cm, err := providerEnv.client.CoreV1().ConfigMaps(namespace).Create(context.Background(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "owner-"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
		},
		Parallel: true,
	})
}

func TestCertificateCacheConformance(t *testing.T) {
	csrtest.RunCache(t, csrtest.CacheHarness{
		New:      func(*testing.T) csr.Cache { return kube.NewCertificateCache(providerEnv.client) },
		Prepare:  func(t *testing.T, id string) { ensureNamespace(t, clusterid.TenantNamespace(id)) },
		Parallel: true,
	})
}

func TestCSRSignerConformance(t *testing.T) {
	csrtest.RunSigner(t, csrtest.SignerHarness{
		New: func(_ *testing.T, a csr.Approver) (csr.Signer, []byte) {
			return kube.NewCSRSigner(providerEnv.client, a), providerEnv.cluster.CA()
		},
		Approver: func(*testing.T) csr.Approver { return kube.NewApprover(providerEnv.client) },
		Denier: func(*testing.T) csr.Approver {
			return &fake.Approver{Decide: func(name string, _ *csr.Checked) error {
				return &csr.DeniedError{Name: name, Reason: "Denied", Message: "denied by the conformance test"}
			}}
		},
		Parallel: true,
	})
}

func TestApproverConformance(t *testing.T) {
	csrtest.RunApprover(t, csrtest.ApproverHarness{
		New: func(*testing.T) csr.Approver { return kube.NewApprover(providerEnv.client) },
		Submit: func(t *testing.T, c *csr.Checked) string {
			obj, err := providerEnv.client.CertificatesV1().CertificateSigningRequests().Create(context.Background(),
				&certificatesv1.CertificateSigningRequest{
					ObjectMeta: metav1.ObjectMeta{GenerateName: "conformance-"},
					Spec: certificatesv1.CertificateSigningRequestSpec{
						Request:    c.PEM(),
						SignerName: certificatesv1.KubeAPIServerClientSignerName,
						Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
					},
				}, metav1.CreateOptions{})
			require.NoError(t, err)
			return obj.Name
		},
		Parallel: true,
	})
}

func TestRBACConformance(t *testing.T) {
	rbactest.Run(t, rbactest.Harness{
		New: func(*testing.T) (rbactest.Port, rbactest.Inspector) {
			rb := providerEnv.client.RbacV1()
			return kube.NewRBAC(providerEnv.client), rbactest.Inspector{
				ClusterRole: func(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
					return absent(rb.ClusterRoles().Get(ctx, name, metav1.GetOptions{}))
				},
				RoleBinding: func(ctx context.Context, namespace, name string) (*rbacv1.RoleBinding, error) {
					return absent(rb.RoleBindings(namespace).Get(ctx, name, metav1.GetOptions{}))
				},
				UpdateClusterRole: func(ctx context.Context, r *rbacv1.ClusterRole) error {
					return writeAsOther(ctx, rb.ClusterRoles(), r)
				},
				UpdateRoleBinding: func(ctx context.Context, b *rbacv1.RoleBinding) error {
					return writeAsOther(ctx, rb.RoleBindings(b.Namespace), b)
				},
			}
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

func TestReviewerConformance(t *testing.T) {
	rbactest.RunReviewer(t, rbactest.ReviewerHarness{
		New: func(*testing.T) rbactest.ReviewedBinder { return kube.NewRBAC(providerEnv.client) },
		ClusterRoleBinding: func(t *testing.T, b *rbacv1.ClusterRoleBinding) {
			api := providerEnv.client.RbacV1().ClusterRoleBindings()
			_, err := api.Create(context.Background(), b, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = api.Delete(context.Background(), b.Name, metav1.DeleteOptions{}) })
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

// otherManager is the field manager of writes made as another component.
const otherManager = "conformance-other"

// writer creates and updates one kind of object.
type writer[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// writeAsOther writes obj as another component does: a client-side create,
// or an update of the resourceVersion obj carries, under otherManager.
func writeAsOther[T metav1.Object](ctx context.Context, w writer[T], obj T) error {
	if obj.GetResourceVersion() == "" {
		_, err := w.Create(ctx, obj, metav1.CreateOptions{FieldManager: otherManager})
		return err
	}
	_, err := w.Update(ctx, obj, metav1.UpdateOptions{FieldManager: otherManager})
	return err
}

// updateAsOther updates the authentication.liqo.io object obj, of resource
// resource on the provider, as another component does: a client-side
// update of the resourceVersion obj carries, under otherManager.
func updateAsOther(ctx context.Context, resource string, obj runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	_, err = providerEnv.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(resource)).
		Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{FieldManager: otherManager})
	return err
}

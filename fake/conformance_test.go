package fake_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/csr/csrtest"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/identity/identitytest"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/keys/keystest"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/kubeconfig/kubeconfigtest"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/nonce/noncetest"
	"github.com/kubepact/kubepact/rbac/rbactest"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/tenant/tenanttest"
)

// Every suite gets a new fake per test, so the tests share nothing and run in
// parallel; the fakes hold everything in memory, so no namespace needs
// creating first.

func TestNonceStoreConformance(t *testing.T) {
	t.Parallel()
	noncetest.Run(t, noncetest.Harness{
		New:      func(*testing.T) nonce.Store { return &fake.NonceStore{} },
		Parallel: true,
	})
}

func TestKeyStoreConformance(t *testing.T) {
	t.Parallel()
	keystest.Run(t, keystest.Harness{
		New:      func(*testing.T) keys.Store { return &fake.KeyStore{} },
		Parallel: true,
	})
}

func TestKeyringConformance(t *testing.T) {
	t.Parallel()
	keystest.RunKeyring(t, keystest.KeyringHarness{
		New:      func(*testing.T) keys.Keyring { return &fake.Keyring{} },
		Parallel: true,
	})
}

func TestNamespacesConformance(t *testing.T) {
	t.Parallel()
	tenanttest.RunNamespaces(t, tenanttest.NamespacesHarness{
		New: func(*testing.T) (tenant.Namespaces, func(context.Context, string) (*corev1.Namespace, error)) {
			n := &fake.Namespaces{}
			return n, func(_ context.Context, name string) (*corev1.Namespace, error) {
				ns, _ := n.Get(name)
				return ns, nil
			}
		},
		Parallel: true,
	})
}

func TestTenantStoreConformance(t *testing.T) {
	t.Parallel()
	// One store for every test, so that Update writes where the test reads.
	store := &fake.TenantStore{}
	tenanttest.RunStore(t, tenanttest.StoreHarness{
		New: func(*testing.T) tenant.Store { return store },
		Update: func(ctx context.Context, tn *authv1beta1.Tenant) error {
			_, err := store.Update(ctx, tn)
			return err
		},
		Parallel: true,
	})
}

func TestIdentityStoreConformance(t *testing.T) {
	t.Parallel()
	store := &fake.IdentityStore{}
	identitytest.Run(t, identitytest.Harness{
		New: func(*testing.T) identity.Store { return store },
		Update: func(ctx context.Context, id *authv1beta1.Identity) error {
			_, err := store.Update(ctx, id)
			return err
		},
		Parallel: true,
	})
}

func TestSecretWriterConformance(t *testing.T) {
	t.Parallel()
	kubeconfigtest.Run(t, kubeconfigtest.Harness{
		New: func(*testing.T) (kubeconfig.SecretWriter, func(context.Context, string, string) (*corev1.Secret, error)) {
			w := &fake.SecretWriter{}
			return w, func(_ context.Context, namespace, name string) (*corev1.Secret, error) {
				s, _ := w.Get(namespace, name)
				return s, nil
			}
		},
		Parallel: true,
	})
}

func TestCertificateCacheConformance(t *testing.T) {
	t.Parallel()
	csrtest.RunCache(t, csrtest.CacheHarness{
		New:      func(*testing.T) csr.Cache { return &fake.CertificateCache{} },
		Parallel: true,
	})
}

func TestSignerConformance(t *testing.T) {
	t.Parallel()
	csrtest.RunSigner(t, csrtest.SignerHarness{
		New: func(t *testing.T, a csr.Approver) (csr.Signer, []byte) {
			caPEM, caKey, err := csr.GenerateCA(nil, "fake-ca", time.Now(), 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Approver: a})
			if err != nil {
				t.Fatal(err)
			}
			return &fake.Signer{CA: ca}, caPEM
		},
		Approver: func(*testing.T) csr.Approver { return &fake.Approver{} },
		Denier: func(*testing.T) csr.Approver {
			return &fake.Approver{Decide: func(name string, _ *csr.Checked) error {
				return &csr.DeniedError{Name: name, Reason: "Denied", Message: "denied by the conformance test"}
			}}
		},
		Parallel: true,
	})
}

func TestApproverConformance(t *testing.T) {
	t.Parallel()
	csrtest.RunApprover(t, csrtest.ApproverHarness{
		New:      func(*testing.T) csr.Approver { return &fake.Approver{} },
		Parallel: true,
	})
}

func TestRBACConformance(t *testing.T) {
	t.Parallel()
	rbactest.Run(t, rbactest.Harness{
		New: func(*testing.T) (rbactest.Port, rbactest.Inspector) {
			a := &fake.RBAC{}
			return a, rbactest.Inspector{
				ClusterRole: func(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
					for _, r := range a.ClusterRoles.Objects("") {
						if r.Name == name {
							return r, nil
						}
					}
					return nil, nil
				},
				RoleBinding: func(_ context.Context, namespace, name string) (*rbacv1.RoleBinding, error) {
					b, _ := a.RoleBinding(namespace, name)
					return b, nil
				},
				UpdateClusterRole: a.UpdateClusterRole,
				UpdateRoleBinding: a.UpdateRoleBinding,
			}
		},
		Parallel: true,
	})
}

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// TestPlantedKeyIsNeverUsed plays someone who put a key of her own in the
// key namespace, under the name of a peering's own key, before the
// peering: kubepact-controller, run with config/ applied and as its
// ServiceAccount, never builds a Tenant for her key. Asked for a key of
// the identity's own, it refuses with a KeyUnattested Event and leaves her
// Secret as it is; not asked, her key switches nothing on and the Tenant's
// CSR is for the cluster key. Once her Secret is gone, the controller makes
// and attests a key of its own.
//
// The key is planted with admin credentials: the shipped key admission
// policy keeps everyone else from creating it (TestKeySecretWriters), and
// the attestation stands even where that policy is missing.
func TestPlantedKeyIsNeverUsed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const consumerID = "cl-plant-consumer"
	start(t, consumerEnv, "--cluster-id="+consumerID, "--roles=consumer", "--leader-election-namespace=kubepact-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	secrets := consumerEnv.admin.CoreV1().Secrets(keys.DefaultNamespace)
	clusterKey, err := kube.NewKeyStore(consumerEnv.admin, keys.DefaultNamespace).Get(ctx)
	if apierrors.IsNotFound(err) || err != nil {
		// The controller makes it when it starts leading.
		eventually(t, "the cluster key", func() bool {
			clusterKey, err = kube.NewKeyStore(consumerEnv.admin, keys.DefaultNamespace).Get(ctx)
			return err == nil
		})
	}

	plant := func(providerID string) *corev1.Secret {
		t.Helper()
		k, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		s, err := keys.KeyringSecret(keys.DefaultNamespace, identity.ControlPlaneName(providerID), keys.Stored{Key: k})
		require.NoError(t, err)
		s, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = secrets.Delete(context.Background(), s.Name, metav1.DeleteOptions{}) })
		return s
	}
	requireKept := func(planted *corev1.Secret) {
		t.Helper()
		now, err := secrets.Get(ctx, planted.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, planted.ResourceVersion, now.ResourceVersion, "the planted Secret is left as it is")
	}
	// request writes the signed-nonce request for providerID, as kubepact
	// authenticate does, asking for a key of the identity's own with ownKey.
	request := func(providerID string, ownKey bool) *corev1.Secret {
		t.Helper()
		ns := tenant.Namespace(providerID)
		_, err := consumerEnv.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		n, err := nonce.Generate(nil)
		require.NoError(t, err)
		req := nonce.SignedSecret(providerID, n, nil)
		delete(req.Data, nonce.SignedSecretKey)
		if ownKey {
			req.Data[contract.TenantOwnKeyKey] = []byte(contract.TenantOwnKey)
		}
		s, err := consumerEnv.admin.CoreV1().Secrets(req.Namespace).Create(ctx, req, metav1.CreateOptions{})
		require.NoError(t, err)
		return s
	}
	builtTenant := func(s *corev1.Secret) *authv1beta1.Tenant {
		t.Helper()
		var tn authv1beta1.Tenant
		eventually(t, "the Tenant built by the consumer's controller", func() bool {
			got, err := consumerEnv.admin.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			require.NoError(t, err)
			if len(got.Data[contract.TenantKey]) == 0 {
				return false
			}
			require.NoError(t, yaml.Unmarshal(got.Data[contract.TenantKey], &tn))
			return true
		})
		return &tn
	}

	t.Run("own key asked", func(t *testing.T) {
		const providerID = "cl-plant-provider"
		planted := plant(providerID)
		req := request(providerID, true)
		eventually(t, "a KeyUnattested Event", func() bool {
			list, err := consumerEnv.admin.CoreV1().Events(req.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.name": req.Name, "reason": contract.ReasonKeyUnattested}.String()})
			require.NoError(t, err)
			return len(list.Items) > 0
		})
		got, err := consumerEnv.admin.CoreV1().Secrets(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, got.Data[contract.TenantKey], "no Tenant built for her key")
		requireKept(planted)

		// Her Secret removed, the next request gets a key the controller
		// made and attested.
		require.NoError(t, secrets.Delete(ctx, planted.Name, metav1.DeleteOptions{}))
		require.NoError(t, consumerEnv.admin.CoreV1().Secrets(req.Namespace).Delete(ctx, req.Name, metav1.DeleteOptions{}))
		tn := builtTenant(request(providerID, true))
		own, err := secrets.Get(ctx, planted.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, own.Data[keys.AttestationSecretKey], "the controller attests the key it made")
		stored, err := keys.FromKeyringSecret(own)
		require.NoError(t, err)
		_, err = csr.Check(tn.Spec.CSR, csr.ControlPlanePolicy(consumerID, stored.Key.Public()))
		require.NoError(t, err, "the Tenant's CSR is for the key the controller made")
	})

	t.Run("not asked", func(t *testing.T) {
		const providerID = "cl-plant-provider-liqo"
		planted := plant(providerID)
		tn := builtTenant(request(providerID, false))
		_, err := csr.Check(tn.Spec.CSR, csr.ControlPlanePolicy(consumerID, clusterKey.Public()))
		require.NoError(t, err, "a planted key switches no own-key mode on: the CSR is for the cluster key")
		requireKept(planted)
		require.Equal(t, clusterid.TenantNamespace(consumerID), tn.Namespace, "the Tenant is for the provider's tenant namespace of this consumer")
	})
}

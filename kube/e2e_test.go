package kube_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// newProvider returns a Provider of cluster ID id over the provider cluster.
func newProvider(t testing.TB, id string) *kubepact.Provider {
	t.Helper()
	c := providerEnv.client
	nonces := kube.NewNonceStore(c)
	p, err := provider.New(id, provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}, provider.Ports{
		Core: provider.Core{
			Namespaces:   kube.NewNamespaces(c),
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(providerEnv.typed),
			Signer:       kube.NewCSRSigner(c, kube.NewApprover(c)),
			Certificates: kube.NewCertificateCache(c),
			RBAC:         kube.NewRBAC(c),
		},
		Lifecycle: kube.NewLifecyclePorts(c, providerEnv.typed),
	}, nil)
	require.NoError(t, err)
	return p
}

// newConsumer returns a Consumer of cluster ID id over the consumer
// cluster, keeping its key in keyNamespace.
func newConsumer(t testing.TB, id, keyNamespace string) *kubepact.Consumer {
	t.Helper()
	c := consumerEnv.client
	cons, err := consumer.New(id, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(c),
			Keys:       kube.NewKeyStore(c, keyNamespace),
			Identities: kube.NewIdentityStore(consumerEnv.typed),
			Secrets:    kube.NewSecretWriter(c),
		},
		IdentityKeys: kube.NewKeyring(c, keyNamespace),
	}, &consumer.Options{KeyNamespace: keyNamespace})
	require.NoError(t, err)
	return cons
}

var resourceSlices = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)

func resourceSlice(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(authv1beta1.ResourceSliceKind)
	u.SetName(name)
	return u
}

// TestAuthenticateEndToEnd runs the handshake between two real clusters,
// then checks on the provider's API server that the issued kubeconfig grants
// exactly what a ControlPlane identity needs, and that unauthenticate takes
// it away.
func TestAuthenticateEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-provider-e2e", "cl-consumer-e2e"
	p := newProvider(t, providerID)
	c := newConsumer(t, consumerID, "liqo-e2e")

	done, err := kubepact.Authenticate(ctx, c, p, nil)
	require.NoError(t, err)
	tenantNS := "liqo-tenant-" + consumerID

	// The consumer cluster holds the Identity and the kubeconfig Secret.
	sec, err := consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+providerID).Get(ctx, kubeconfig.SecretName(identity.ControlPlaneName(providerID)), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, done.Identity.UID, sec.OwnerReferences[0].UID)
	cfg, err := kubeconfig.Parse(sec.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Equal(t, consumerID, cfg.User())
	require.Equal(t, tenantNS, cfg.Namespace())
	require.Equal(t, providerEnv.cluster.Host(), cfg.Server())
	stored, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, "liqo-tenant-"+providerID)
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Equal(t, sec.Name, stored[0].Status.KubeconfigSecretRef.Name)

	// The provider recorded the Tenant with its status.
	tn, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, tenantNS, consumerID)
	require.NoError(t, err)
	require.Equal(t, tenantNS, tn.Status.TenantNamespace)
	require.NotEmpty(t, tn.Status.AuthParams.SignedCRT)

	// With only that kubeconfig, on the provider:
	restCfg, err := cfg.RESTConfig()
	require.NoError(t, err)
	asConsumer, err := dynamic.NewForConfig(restCfg)
	require.NoError(t, err)
	asConsumerCore, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	slices := asConsumer.Resource(resourceSlices)

	// ResourceSlices in its tenant namespace can be written and read...
	created, err := slices.Namespace(tenantNS).Create(ctx, resourceSlice("slice-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = slices.Namespace(tenantNS).Get(ctx, "slice-a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = slices.Namespace(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(created.Object, "default", "spec", "class"))
	_, err = slices.Namespace(tenantNS).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)

	// ...but not Secrets there, nothing in another namespace, and no
	// cluster-scoped write.
	_, err = asConsumerCore.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing Secrets in the tenant namespace: %v", err)
	_, err = asConsumerCore.CoreV1().Secrets(tenantNS).Get(ctx, "liqo-remote-certificate", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "reading the certificate cache: %v", err)
	_, err = slices.Namespace("default").Create(ctx, resourceSlice("slice-b"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a ResourceSlice in another namespace: %v", err)
	_, err = slices.Namespace("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ResourceSlices in another namespace: %v", err)
	_, err = asConsumerCore.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a namespace: %v", err)
	_, err = asConsumerCore.RbacV1().ClusterRoles().Create(ctx, rbac.ControlPlaneClusterRole(), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a ClusterRole: %v", err)

	// A second handshake re-uses everything: no second CSR object.
	_, err = kubepact.Authenticate(ctx, c, p, nil)
	require.NoError(t, err)
	csrs, err := providerEnv.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRLabel + "=true"})
	require.NoError(t, err)
	require.Equal(t, 1, countRequests(csrs.Items, consumerID))

	require.NoError(t, slices.Namespace(tenantNS).Delete(ctx, "slice-a", metav1.DeleteOptions{}))
	require.NoError(t, kubepact.Unauthenticate(ctx, c, p))
	_, err = consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+providerID).Get(ctx, sec.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
	stored, err = kube.NewIdentityStore(consumerEnv.typed).List(ctx, "liqo-tenant-"+providerID)
	require.NoError(t, err)
	require.Empty(t, stored)
	_, err = kube.NewTenantStore(providerEnv.typed).Get(ctx, tenantNS, consumerID)
	require.ErrorIs(t, err, tenant.ErrNotFound)
	_, err = providerEnv.client.RbacV1().RoleBindings(tenantNS).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	// The old kubeconfig is now forbidden.
	_, err = slices.Namespace(tenantNS).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ResourceSlices after unauthenticate: %v", err)
}

// countRequests counts the CSR objects whose request is for common name cn.
func countRequests(items []certificatesv1.CertificateSigningRequest, cn string) int {
	n := 0
	for _, it := range items {
		block, _ := pem.Decode(it.Spec.Request)
		if block == nil {
			continue
		}
		if req, err := x509.ParseCertificateRequest(block.Bytes); err == nil && req.Subject.CommonName == cn {
			n++
		}
	}
	return n
}

func TestUnauthenticateRefusesWithResourceSliceIdentities(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-provider-rs", "cl-consumer-rs"
	p := newProvider(t, providerID)
	c := newConsumer(t, consumerID, "liqo-rs")
	done, err := kubepact.Authenticate(ctx, c, p, nil)
	require.NoError(t, err)

	slice := done.Identity.DeepCopy()
	slice.Name, slice.UID, slice.ResourceVersion = identity.ResourceSliceName("slice-a"), "", ""
	slice.Spec.Type = authv1beta1.ResourceSliceIdentityType
	slice.Status = authv1beta1.IdentityStatus{}
	_, err = kube.NewIdentityStore(consumerEnv.typed).Apply(ctx, slice)
	require.NoError(t, err)

	err = kubepact.Unauthenticate(ctx, c, p)
	require.ErrorIs(t, err, consumer.ErrInUse)
	_, err = kube.NewTenantStore(providerEnv.typed).Get(ctx, "liqo-tenant-"+consumerID, consumerID)
	require.NoError(t, err, "a refused unauthenticate leaves the Tenant")

	require.NoError(t, kube.NewIdentityStore(consumerEnv.typed).Delete(ctx, slice.Namespace, slice.Name))
	require.NoError(t, kubepact.Unauthenticate(ctx, c, p))
}

func TestKeyStoreKeepsTheClusterKey(t *testing.T) {
	ctx := context.Background()
	ks := kube.NewKeyStore(consumerEnv.client, "liqo-keys-test")
	k, err := keys.Ensure(ctx, ks, nil, keys.Ed25519)
	require.NoError(t, err)
	again, err := keys.Ensure(ctx, ks, nil, keys.Ed25519)
	require.NoError(t, err)
	require.True(t, keys.Equal(k.Public(), again.Public()))
	sec, err := consumerEnv.client.CoreV1().Secrets("liqo-keys-test").Get(ctx, keys.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, string(sec.Data[keys.PrivateKeySecretKey]), "-----BEGIN PRIVATE KEY-----")
	require.Contains(t, string(sec.Data[keys.PublicKeySecretKey]), "-----BEGIN PUBLIC KEY-----")
}

// TestStrictAuthenticateEndToEnd runs a strict consumer against a strict
// provider on the two real clusters: the kubeconfig's key is the identity's
// own, and the cluster key is in no kubeconfig Secret.
func TestStrictAuthenticateEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-provider-strict", "cl-consumer-strict"
	c := providerEnv.client
	nonces := kube.NewNonceStore(c)
	p, err := provider.New(providerID, provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}, provider.Ports{
		Core: provider.Core{
			Namespaces:   kube.NewNamespaces(c),
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(providerEnv.typed),
			Signer:       kube.NewCSRSigner(c, kube.NewApprover(c)),
			Certificates: kube.NewCertificateCache(c),
			RBAC:         kube.NewRBAC(c),
		},
		Lifecycle: kube.NewLifecyclePorts(c, providerEnv.typed),
	}, &provider.Options{Policy: tenant.Strict})
	require.NoError(t, err)
	cc := consumerEnv.client
	cons, err := consumer.New(consumerID, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(cc),
			Keys:       kube.NewKeyStore(cc, "liqo-strict"),
			Identities: kube.NewIdentityStore(consumerEnv.typed),
			Secrets:    kube.NewSecretWriter(cc),
		},
		IdentityKeys: kube.NewKeyring(cc, "liqo-strict"),
	}, &consumer.Options{Strict: true, KeyNamespace: "liqo-strict"})
	require.NoError(t, err)

	done, err := kubepact.Authenticate(ctx, cons, p, nil)
	require.NoError(t, err)
	clusterKey, err := kube.NewKeyStore(cc, "liqo-strict").Get(ctx)
	require.NoError(t, err)
	idKey, err := kube.NewKeyring(cc, "liqo-strict").Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	cert, err := done.Kubeconfig.ClientCertificate()
	require.NoError(t, err)
	require.True(t, keys.Equal(idKey.Key.Public(), cert.PublicKey))
	require.False(t, keys.Equal(clusterKey.Public(), cert.PublicKey))

	// The kubeconfig works on the provider.
	restCfg, err := done.Kubeconfig.RESTConfig()
	require.NoError(t, err)
	asConsumer, err := dynamic.NewForConfig(restCfg)
	require.NoError(t, err)
	_, err = asConsumer.Resource(resourceSlices).Namespace("liqo-tenant-"+consumerID).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	require.NoError(t, kubepact.Unauthenticate(ctx, cons, p))
	_, err = kube.NewKeyring(cc, "liqo-strict").Get(ctx, identity.ControlPlaneName(providerID))
	require.ErrorIs(t, err, keys.ErrNotFound)
}

package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// Tenants the provider refuses get a Warning Event with a typed reason, and
// nothing else: no status, no finalizer, no binding, no CSR. A nonce
// Secret elsewhere than its tenant namespace gets no nonce.
func TestTenantRejections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	startProvider(t, providerID, tenant.Compatible, nil)
	n := requestNonce(ctx, t, consumerID)
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	ns := clusterid.TenantNamespace(consumerID)

	t.Run("bad signature", func(t *testing.T) {
		tn, err := tenant.Build(consumerID, key, n, nil)
		require.NoError(t, err)
		tn.Spec.Signature[0] ^= 1
		require.NoError(t, providerEnv.client.Create(ctx, tn))
		note := waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeWarning, contract.ReasonInvalidSignature)
		require.NotContains(t, note, n.Text())

		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), tn))
		require.Nil(t, tn.Status.AuthParams, "no status")
		require.Empty(t, tn.Finalizers, "no finalizer")
		_, err = providerEnv.core.RbacV1().RoleBindings(ns).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "no binding: %v", err)
		require.Zero(t, countCSRs(ctx, t, consumerID), "nothing signed")
		require.False(t, hasEvent(ctx, t, providerEnv, ns, tn.Name, contract.ReasonTenantAccepted))

		// Deleting a refused Tenant needs no cleanup.
		require.NoError(t, providerEnv.client.Delete(ctx, tn))
		eventually(t, "the Tenant gone", func() bool {
			return apierrors.IsNotFound(providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), &authv1beta1.Tenant{}))
		})
	})

	t.Run("named after another cluster", func(t *testing.T) {
		tn, err := tenant.Build(consumerID, key, n, nil)
		require.NoError(t, err)
		tn.Name = "someone-else"
		require.NoError(t, providerEnv.client.Create(ctx, tn))
		waitEvent(ctx, t, providerEnv, ns, tn.Name, corev1.EventTypeWarning, contract.ReasonInvalidTenant)
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKeyFromObject(tn), tn))
		require.Nil(t, tn.Status.AuthParams)
		err = providerEnv.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: consumerID}, &authv1beta1.Tenant{})
		require.True(t, apierrors.IsNotFound(err), "no Tenant made under the consumer's name: %v", err)
	})

	t.Run("nonce Secret outside its tenant namespace", func(t *testing.T) {
		other := consumerID + "-x"
		ensureNamespace(ctx, t, providerEnv, other)
		otherNS := clusterid.TenantNamespace(other)
		_, err := providerEnv.core.CoreV1().Secrets(otherNS).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: consumerID}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitEvent(ctx, t, providerEnv, otherNS, nonce.SecretName, corev1.EventTypeWarning, contract.ReasonInvalidNonceSecret)
		require.Empty(t, secret(ctx, t, providerEnv, otherNS, nonce.SecretName).Data, "no nonce")
	})
}

// The consumer signs only a well-formed nonce in a liqo-signed-nonce
// Secret of a tenant namespace, and never overwrites a signature: the
// cluster key is no signing oracle.
func TestSignedNonceRejections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startConsumer(t, consumerID, keyNS)
	valid, err := nonce.Generate(nil)
	require.NoError(t, err)

	tests := []struct {
		name   string
		label  string // the provider ID of the label, if not the namespace's
		data   map[string][]byte
		reason string
	}{
		{name: "short", data: map[string][]byte{nonce.SecretKey: []byte("sign me")}, reason: contract.ReasonMalformedNonce},
		{name: "oversized", data: map[string][]byte{nonce.SecretKey: []byte(strings.Repeat("QUFB", 16<<10))}, reason: contract.ReasonMalformedNonce},
		{name: "not base64", data: map[string][]byte{nonce.SecretKey: []byte(strings.Repeat("!", nonce.TextSize))}, reason: contract.ReasonMalformedNonce},
		{name: "another tenant namespace", label: "cl-elsewhere", data: map[string][]byte{nonce.SecretKey: []byte(valid.Text())}, reason: contract.ReasonInvalidSignedNonceSecret},
		{name: "signed for another nonce", data: map[string][]byte{nonce.SecretKey: []byte(valid.Text()), nonce.SignedSecretKey: []byte("someone else's")},
			reason: contract.ReasonSignedNonceMismatch},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := providerID + "-" + string(rune('a'+i))
			ensureNamespace(ctx, t, consumerEnv, pid)
			label := pid
			if tt.label != "" {
				label = tt.label
			}
			ns := clusterid.TenantNamespace(pid)
			_, err := consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: label}},
				Data:       tt.data,
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			note := waitEvent(ctx, t, consumerEnv, ns, nonce.SignedSecretName, corev1.EventTypeWarning, tt.reason)
			require.NotContains(t, note, string(tt.data[nonce.SecretKey][:min(len(tt.data[nonce.SecretKey]), 16)]), "the Event quotes no data")
			s := secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName)
			require.Equal(t, tt.data[nonce.SignedSecretKey], s.Data[nonce.SignedSecretKey], "nothing signed")
			require.False(t, hasEvent(ctx, t, consumerEnv, ns, nonce.SignedSecretName, contract.ReasonNonceSigned))
		})
	}
}

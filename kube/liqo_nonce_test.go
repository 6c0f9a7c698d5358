package kube_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

var errDifferentNonce = errors.New("nonce secret already exists with a different nonce")

// liqoSignNonce does on the consumer cluster what a Liqo consumer does with
// the provider's nonce (SPEC §7): it records it in liqo-signed-nonce, among
// secrets, refusing when that Secret holds a different nonce, and signs it.
func liqoSignNonce(ctx context.Context, secrets corev1client.SecretInterface, providerID string, key *keys.PrivateKey, n nonce.Nonce) ([]byte, error) {
	held, err := secrets.Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
	exists := err == nil
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	case string(held.Data[nonce.SecretKey]) != n.Text():
		return nil, errDifferentNonce
	}
	sig, err := nonce.Sign(nil, key, n)
	if err != nil {
		return nil, err
	}
	if exists {
		held.Data[nonce.SignedSecretKey] = sig
		_, err = secrets.Update(ctx, held, metav1.UpdateOptions{})
	} else {
		sec := nonce.SignedSecret(providerID, n, sig)
		sec.Namespace = "" // secrets' own
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	}
	return sig, err
}

// A consumer that behaves as Liqo's does re-authenticates twice in a row
// against a kubepact provider on a real API server: the provider keeps the
// nonce the consumer's key redeemed, so the consumer's liqo-signed-nonce
// never holds a different one, and no Secret is edited by hand.
func TestLiqoConsumerReauthenticates(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := "cl-provider-liqo-reauth", "cl-consumer-liqo-reauth"
	p := newProvider(t, providerID)
	_, err := consumerEnv.client.CoreV1().Namespaces().Create(ctx, tenant.Namespace(providerID), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	key := testkeys.Generate(t, keys.Ed25519)

	var first nonce.Nonce
	for i := range 3 {
		n, err := p.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		if i == 0 {
			first = n
		}
		require.True(t, first.Equal(n), "authentication %d: the provider keeps the nonce", i+1)
		_, err = liqoSignNonce(ctx, consumerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(providerID)), providerID, key, n)
		require.NoError(t, err, "authentication %d", i+1)
		tn, err := tenant.Build(consumerID, key, n, nil) // no transcript, as Liqo sends
		require.NoError(t, err)
		id, err := p.Accept(ctx, tn)
		require.NoError(t, err, "authentication %d", i+1)
		cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
		require.NoError(t, err)
		require.True(t, keys.Equal(key.Public(), cert.PublicKey), fmt.Sprintf("authentication %d", i+1))
	}

	// The nonce stays closed to any other key.
	intruder, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), first, nil)
	require.NoError(t, err)
	_, err = p.Accept(ctx, intruder)
	require.ErrorIs(t, err, nonce.ErrRedeemed)

	sec, err := consumerEnv.client.CoreV1().Secrets(clusterid.TenantNamespace(providerID)).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, first.Text(), string(sec.Data[nonce.SecretKey]))
}

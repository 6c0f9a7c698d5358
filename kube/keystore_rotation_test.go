package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// The cluster key's rotation on a real API server: a next key is made
// once, beside the key; Promote writes it into authentication-keys in one
// patch that keeps every other field (Liqo's labels and annotations),
// keeps the old key's public half, and deletes the next key's Secret; a
// promotion stopped after its patch finishes; without a next key, Promote
// is ErrNotFound and changes nothing.
func TestKeyStoreRotation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "kubepact-keystore-rotation"
	store := kube.NewKeyStore(consumerEnv.client, ns)
	secrets := consumerEnv.client.CoreV1().Secrets(ns)

	old, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, store.Create(ctx, old))
	// As Liqo's controller manager labels the Secret it made.
	sec, err := secrets.Get(ctx, keys.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Labels = map[string]string{"liqo.io/managed": "true"}
	sec.Annotations = map[string]string{"example.com/owner": "liqo"}
	_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = store.Promote(ctx)
	require.ErrorIs(t, err, keys.ErrNotFound, "nothing to promote")
	k, previous, err := store.GetWithPrevious(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(old.Public(), k.Public()))
	require.Nil(t, previous)
	none, err := store.Next(ctx)
	require.NoError(t, err)
	require.Nil(t, none)

	next, err := keys.EnsureNext(ctx, store, nil, keys.Ed25519)
	require.NoError(t, err)
	again, err := keys.EnsureNext(ctx, store, nil, keys.Ed25519)
	require.NoError(t, err)
	require.True(t, keys.Equal(next.Public(), again.Public()), "made once")
	require.ErrorIs(t, store.CreateNext(ctx, old), keys.ErrExists)
	k, err = store.Get(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(old.Public(), k.Public()), "the key signs until the switch")

	promoted, err := store.Promote(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(next.Public(), promoted.Public()))
	k, previous, err = store.GetWithPrevious(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), k.Public()))
	assert.True(t, keys.Equal(old.Public(), previous))
	sec, err = secrets.Get(ctx, keys.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", sec.Labels["liqo.io/managed"], "Liqo's label stays")
	assert.Equal(t, "liqo", sec.Annotations["example.com/owner"], "and its annotation")
	_, err = secrets.Get(ctx, keys.NextSecretName, metav1.GetOptions{})
	assert.Truef(t, apierrors.IsNotFound(err), "the next key's Secret is gone: %v", err)

	// A promotion stopped after its patch: the key is the next one, whose
	// Secret is still there. Promote only deletes it.
	third, err := keys.EnsureNext(ctx, store, nil, keys.Ed25519)
	require.NoError(t, err)
	halfway, err := keys.Secret(ns, third)
	require.NoError(t, err)
	prevPEM, err := keys.MarshalPublicKey(next.Public())
	require.NoError(t, err)
	sec.Data = halfway.Data
	sec.Data[keys.PreviousPublicKeySecretKey] = prevPEM
	_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	promoted, err = store.Promote(ctx)
	require.NoError(t, err)
	require.True(t, keys.Equal(third.Public(), promoted.Public()))
	k, previous, err = store.GetWithPrevious(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(third.Public(), k.Public()))
	assert.True(t, keys.Equal(next.Public(), previous), "the key it replaced, not itself")
	_, err = secrets.Get(ctx, keys.NextSecretName, metav1.GetOptions{})
	assert.Truef(t, apierrors.IsNotFound(err), "the next key's Secret is gone: %v", err)
}

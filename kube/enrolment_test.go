package kube_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// EnrolmentKeys on a real API server: the key is made once and read back
// the same; a Secret that holds no valid key is an error and is never
// replaced (consumers commit the key's public half); the serving
// certificate is issued by the key, kept while fresh, and issued again
// with a third of its lifetime left.
func TestEnrolmentKeys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "kubepact-enrolment-keys-test"
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e := kube.NewEnrolmentKeys(providerEnv.client, ns)

	key, err := e.Ensure(ctx, nil)
	require.NoError(t, err)
	again, err := e.Ensure(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(key.Public(), again.Public()), "made once")

	secrets := providerEnv.client.CoreV1().Secrets(ns)
	now := time.Now()
	require.NoError(t, e.EnsureServing(ctx, nil, key, "cl-provider", []string{"kubepact-enrolment"}, now, 90*24*time.Hour))
	first, err := secrets.Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeTLS, first.Type)
	block, _ := pem.Decode(first.Data[corev1.TLSCertKey])
	require.NotNil(t, block)
	require.NoError(t, enrol.VerifyServingCertificate(block.Bytes, []crypto.PublicKey{key.Public()}, now))

	require.NoError(t, e.EnsureServing(ctx, nil, key, "cl-provider", []string{"kubepact-enrolment"}, now.Add(time.Hour), 90*24*time.Hour))
	kept, err := secrets.Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, first.ResourceVersion, kept.ResourceVersion, "a fresh certificate is kept")

	late := now.Add(61 * 24 * time.Hour)
	require.NoError(t, e.EnsureServing(ctx, nil, key, "cl-provider", []string{"kubepact-enrolment"}, late, 90*24*time.Hour))
	renewed, err := secrets.Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, first.Data[corev1.TLSCertKey], renewed.Data[corev1.TLSCertKey], "issued again with a third of its lifetime left")
	block, _ = pem.Decode(renewed.Data[corev1.TLSCertKey])
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.True(t, cert.NotAfter.After(late.Add(80*24*time.Hour)))

	// A key Secret that holds no valid key is refused, and stays.
	bad := "kubepact-enrolment-keys-bad"
	_, err = providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bad}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = providerEnv.client.CoreV1().Secrets(bad).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kube.EnrolmentKeyName},
		Data:       map[string][]byte{kube.EnrolmentKeyKey: []byte("not a key")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.NewEnrolmentKeys(providerEnv.client, bad).Ensure(ctx, nil)
	require.ErrorIs(t, err, keys.ErrMalformed)
	s, err := providerEnv.client.CoreV1().Secrets(bad).Get(ctx, kube.EnrolmentKeyName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "not a key", string(s.Data[kube.EnrolmentKeyKey]), "never replaced")
}

// A rotation of the enrolment key: the next key is made once and kept
// apart; its public half is published beside the key's and dropped again;
// Promote makes it the key and deletes its Secret; a promotion stopped
// with the key's Secret gone ends with the next key as the key, never a
// fresh one; Promote without a next key changes nothing.
func TestEnrolmentKeyRotation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "kubepact-enrolment-rotation-test"
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e := kube.NewEnrolmentKeys(providerEnv.client, ns)
	secrets := providerEnv.client.CoreV1().Secrets(ns)

	key, err := e.Ensure(ctx, nil)
	require.NoError(t, err)
	none, err := e.Next(ctx)
	require.NoError(t, err)
	assert.Nil(t, none, "no rotation yet")
	next, err := e.EnsureNext(ctx, nil)
	require.NoError(t, err)
	assert.False(t, keys.Equal(key.Public(), next.Public()))
	again, err := e.EnsureNext(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), again.Public()), "made once")
	held, err := e.Ensure(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(key.Public(), held.Public()), "the key stays the key until promoted")

	record := kube.NewEnrolmentKeyRecord(providerEnv.client, ns)
	require.NoError(t, record.PublishWithNext(ctx, key.Public(), next.Public()))
	published, err := record.GetNext(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), published))
	require.NoError(t, record.PublishWithNext(ctx, next.Public(), nil))
	published, err = record.GetNext(ctx)
	require.NoError(t, err)
	assert.Nil(t, published, "the next key dropped from the record")
	current, err := record.Get(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), current))

	// A promotion stopped after deleting the key's Secret.
	require.NoError(t, secrets.Delete(ctx, kube.EnrolmentKeyName, metav1.DeleteOptions{}))
	held, err = e.Ensure(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), held.Public()), "the next key, not a fresh one")
	promoted, err := e.Promote(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), promoted.Public()))
	_, err = secrets.Get(ctx, kube.EnrolmentNextKeyName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the next key's Secret deleted: %v", err)

	// A whole rotation, then a promotion with nothing to promote.
	third, err := e.EnsureNext(ctx, nil)
	require.NoError(t, err)
	promoted, err = e.Promote(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(third.Public(), promoted.Public()))
	same, err := e.Promote(ctx, nil)
	require.NoError(t, err)
	assert.True(t, keys.Equal(third.Public(), same.Public()), "nothing to promote: the key as it is")
}

package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// PublicKeyRecord on a real API server: missing, it is keys.ErrNotFound;
// published, it reads back the key; published again, it follows the new key
// and keeps a label another manager set; without a valid key, it is
// keys.ErrMalformed. It holds no private key.
func TestPublicKeyRecord(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "liqo-record-test"
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r := kube.NewPublicKeyRecord(providerEnv.client, ns)

	_, err = r.Get(ctx)
	require.ErrorIs(t, err, keys.ErrNotFound)

	first, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, r.Publish(ctx, first.Public()))
	got, err := r.Get(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(first.Public(), got))

	cms := providerEnv.client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, kube.PublicKeyRecordName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Data[kube.PublicKeyRecordKey], "PRIVATE KEY")
	cm.Labels = map[string]string{"example.com/team": "a"}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone"})
	require.NoError(t, err)

	second, err := keys.Generate(nil, keys.ECDSAP256)
	require.NoError(t, err)
	require.NoError(t, r.Publish(ctx, second.Public()), "the record follows the cluster key")
	got, err = r.Get(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(second.Public(), got))
	cm, err = cms.Get(ctx, kube.PublicKeyRecordName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", cm.Labels["example.com/team"], "another manager's label stays")

	for _, data := range []map[string]string{{}, {kube.PublicKeyRecordKey: "not a key"}} {
		cm.Data = data
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = r.Get(ctx)
		require.ErrorIs(t, err, keys.ErrMalformed)
	}
}

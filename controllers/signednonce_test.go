package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// The consumer signs only in a tenant namespace labelled for the peer the
// Secret names: whoever may create a namespace liqo-tenant-<ID> and a Secret
// in it gets no signature from the cluster key. The handshake, in a tenant
// namespace made as kubepact and liqoctl make it, still signs; so does a
// refused Secret once an administrator labels its namespace and touches it.
func TestSignedNonceOnlyInLabelledTenantNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	providerID, consumerID := ids(t)
	keyNS := "liqo-" + consumerID
	startConsumer(t, consumerID, keyNS)
	n, err := nonce.Generate(nil)
	require.NoError(t, err)

	tests := []struct {
		name   string
		labels map[string]string // of the namespace liqo-tenant-<pid>; "%s" stands for pid
	}{
		{name: "no labels"},
		{name: "no tenant-namespace label", labels: map[string]string{clusterid.Label: "%s"}},
		{name: "no cluster-ID label", labels: map[string]string{tenant.NamespaceLabel: "true"}},
		{name: "tenant-namespace label not true", labels: map[string]string{tenant.NamespaceLabel: "false", clusterid.Label: "%s"}},
		{name: "labelled for another cluster", labels: map[string]string{tenant.NamespaceLabel: "true", clusterid.Label: "cl-elsewhere"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := providerID + "-" + string(rune('a'+i))
			ns := clusterid.TenantNamespace(pid)
			labels := map[string]string{}
			for k, v := range tt.labels {
				labels[k] = strings.ReplaceAll(v, "%s", pid)
			}
			_, err := consumerEnv.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: pid}},
				Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text())},
			}, metav1.CreateOptions{})
			require.NoError(t, err)

			note := waitEvent(ctx, t, consumerEnv, ns, nonce.SignedSecretName, corev1.EventTypeWarning, contract.ReasonNotTenantNamespace)
			require.NotContains(t, note, n.Text()[:16], "the Event quotes no data")
			require.Empty(t, secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName).Data[nonce.SignedSecretKey], "nothing signed")
			require.False(t, hasEvent(ctx, t, consumerEnv, ns, nonce.SignedSecretName, contract.ReasonNonceSigned))
		})
	}

	t.Run("labelled afterwards", func(t *testing.T) {
		pid := providerID + "-a" // "no labels" above
		ns := clusterid.TenantNamespace(pid)
		cur, err := consumerEnv.core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		cur.Labels = tenant.Namespace(pid).Labels
		_, err = consumerEnv.core.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
		require.NoError(t, err)
		s := secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName)
		s.Annotations = map[string]string{"example.com/touched": "now"}
		_, err = consumerEnv.core.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
		eventually(t, "the signed nonce", func() bool {
			return len(secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName).Data[nonce.SignedSecretKey]) > 0
		})
	})

	t.Run("handshake", func(t *testing.T) {
		pid := providerID + "-z"
		sig := signNonce(ctx, t, pid, n) // in a namespace made by tenant.Namespace
		key, err := kube.NewKeyStore(consumerEnv.core, keyNS).Get(ctx)
		require.NoError(t, err)
		require.NoError(t, nonce.Verify(key.Public(), n, sig), "signed with the cluster key")
		waitEvent(ctx, t, consumerEnv, clusterid.TenantNamespace(pid), nonce.SignedSecretName, corev1.EventTypeNormal, contract.ReasonNonceSigned)
	})
}

package main

import (
	"context"
	"crypto"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// TestGeneratePeering: the pair of manifests of a peering from Git, from
// the two clusters' public records, is what the API server takes, and
// what each side's controller verifies: the consumer's request signed by
// its committed key, the provider's CA pinned, its enrolment key the one
// it publishes. get public-key prints each key as the objects take it.
func TestGeneratePeering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const enrolNS, consumerNS, providerNS = "kubepact-gitops-cli", "liqo-gitops-cli-c", "liqo-gitops-cli-p"
	for _, ns := range []string{enrolNS, providerNS} {
		_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	enrolment, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, kube.NewEnrolmentKeyRecord(providerEnv.client, enrolNS).Publish(ctx, enrolment.Public()))

	out := cli(t, "", "generate", "peering", "--kubeconfig", consumerEnv.kubeconfig, "-n", consumerNS, "--cluster-id", "cl-gitops-c",
		"--remote-kubeconfig", providerEnv.kubeconfig, "--remote-namespace", providerNS, "--remote-cluster-id", "cl-gitops-p",
		"--enrolment-url", "https://enrol.provider.example", "--enrolment-namespace", enrolNS).ok(t).stdout
	docs := strings.Split(out, "\n---\n")
	require.Len(t, docs, 2, out)
	require.True(t, strings.HasPrefix(docs[0], "# commit on the consumer cl-gitops-c\n"), docs[0])
	require.True(t, strings.HasPrefix(docs[1], "# commit on the provider cl-gitops-p\n"), docs[1])

	var tp peeringv1alpha1.TrustedProvider
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &tp))
	var ac peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &ac))

	pin, err := enrol.CAPin(providerEnv.cluster.CA())
	require.NoError(t, err)
	assert.Equal(t, "cl-gitops-p", tp.Spec.ClusterID)
	assert.Equal(t, pin, tp.Spec.CASHA256)
	published := cli(t, "", "get", "public-key", "--kubeconfig", providerEnv.kubeconfig, "-n", providerNS, "--cluster-id", "cl-gitops-p",
		"--key", "enrolment", "--enrolment-namespace", enrolNS).ok(t).stdout
	require.Len(t, tp.Spec.EnrolmentKeys, 1)
	assert.Equal(t, strings.TrimSpace(published), strings.TrimSpace(tp.Spec.EnrolmentKeys[0]))

	c, err := enrol.FromAuthorizedConsumer(&ac)
	require.NoError(t, err)
	v, err := c.Verify("cl-gitops-p")
	require.NoError(t, err, "the committed request verifies on the provider")
	cluster, err := kube.NewKeyStore(consumerEnv.client, consumerNS).Get(ctx)
	require.NoError(t, err)
	assert.True(t, keys.Equal(cluster.Public(), v.PublicKey), "signed by the consumer's cluster key")

	// Both are what the API server takes, as a GitOps tool applies them.
	require.NoError(t, consumerEnv.typed.Create(ctx, &tp))
	require.NoError(t, providerEnv.typed.Create(ctx, &ac))
	t.Cleanup(func() {
		_ = consumerEnv.typed.Delete(context.Background(), &tp)
		_ = providerEnv.typed.Delete(context.Background(), &ac)
	})

	// Made again, the request is the same: what was committed stays valid.
	again := cli(t, "", "generate", "authorized-consumer", "--kubeconfig", consumerEnv.kubeconfig, "-n", consumerNS, "--cluster-id", "cl-gitops-c",
		"--remote-cluster-id", "cl-gitops-p").ok(t).stdout
	assert.Equal(t, docs[1], again)
}

// TestGeneratePeeringRefuses: the enrolment URL is checked before
// anything is read, as the consumer's controller checks it.
func TestGeneratePeeringRefuses(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "http://enrol.provider.example", "https://169.254.169.254", "https://user:pw@enrol.example"} {
		r := cli(t, "", "generate", "trusted-provider", "--kubeconfig", "/nonexistent", "--enrolment-url", url)
		assert.Equal(t, exitUsage, r.code, "--enrolment-url %q: %s", url, r.stderr)
		assert.NotContains(t, r.stderr, "pw@", "the URL's password is never quoted")
	}
	r := cli(t, "", "get", "public-key", "--kubeconfig", "/nonexistent", "--key", "tls")
	assert.Equal(t, exitUsage, r.code)
}

// TestGenerateThroughEnrolmentKeyRotation: while a rotation of the
// enrolment key overlaps, generate trusted-provider commits both published
// keys, the key first, and get public-key --key enrolment-next prints the
// next one; without a rotation, enrolment-next fails with errNoNextKey.
func TestGenerateThroughEnrolmentKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const enrolNS, providerNS = "kubepact-gitops-rotate", "liqo-gitops-rotate-p"
	for _, ns := range []string{enrolNS, providerNS} {
		_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	next, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	record := kube.NewEnrolmentKeyRecord(providerEnv.client, enrolNS)
	require.NoError(t, record.Publish(ctx, key.Public()))
	getNext := []string{"get", "public-key", "--kubeconfig", providerEnv.kubeconfig, "-n", providerNS, "--cluster-id", "cl-rotate-p",
		"--key", "enrolment-next", "--enrolment-namespace", enrolNS}
	r, err := cliErr(t, nil, getNext...)
	require.ErrorIs(t, err, errNoNextKey, r.stderr)
	assert.Equal(t, exitError, r.code)

	require.NoError(t, record.PublishWithNext(ctx, key.Public(), next.Public()))
	printed := cli(t, "", getNext...).ok(t).stdout
	pemOf := func(k *keys.PrivateKey) string {
		b, err := keys.MarshalPublicKey(k.Public())
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, pemOf(next), printed)

	out := cli(t, "", "generate", "trusted-provider", "--kubeconfig", providerEnv.kubeconfig, "-n", providerNS, "--cluster-id", "cl-rotate-p",
		"--enrolment-url", "https://enrol.provider.example", "--enrolment-namespace", enrolNS).ok(t).stdout
	var tp peeringv1alpha1.TrustedProvider
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &tp))
	assert.Equal(t, []string{pemOf(key), pemOf(next)}, tp.Spec.EnrolmentKeys, "both keys while they overlap, the key first")
}

// TestGenerateThroughClusterKeyRotation: while a rotation of the cluster
// key overlaps, generate authorized-consumer commits both keys, the key
// first, and a request signed by the next key that hands the key over to
// it; get public-key --key cluster-next prints the next key. Without a
// rotation, cluster-next fails with errNoNextClusterKey.
func TestGenerateThroughClusterKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const consumerNS, providerID = "liqo-gitops-clrotate-c", "cl-clrotate-p"
	getNext := []string{"get", "public-key", "--kubeconfig", consumerEnv.kubeconfig, "-n", consumerNS, "--cluster-id", "cl-clrotate-c", "--key", "cluster-next"}
	generate := []string{"generate", "authorized-consumer", "--kubeconfig", consumerEnv.kubeconfig, "-n", consumerNS, "--cluster-id", "cl-clrotate-c",
		"--remote-cluster-id", providerID}
	first := cli(t, "", generate...).ok(t).stdout // makes the cluster key
	var ac peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, yaml.UnmarshalStrict([]byte(first), &ac))
	require.Len(t, ac.Spec.PublicKeys, 1)
	require.Nil(t, ac.Spec.Request.HandOver)

	store := kube.NewKeyStore(consumerEnv.client, consumerNS)
	record := kube.NewPublicKeyRecord(consumerEnv.client, consumerNS)
	cluster, err := store.Get(ctx)
	require.NoError(t, err)
	require.NoError(t, record.Publish(ctx, cluster.Public()))
	r, err := cliErr(t, nil, getNext...)
	require.ErrorIs(t, err, errNoNextClusterKey, r.stderr)
	assert.Equal(t, exitError, r.code)

	// The consumer's controller prepares the rotation.
	next, err := keys.EnsureNext(ctx, store, nil, keys.Ed25519)
	require.NoError(t, err)
	require.NoError(t, record.PublishWithNext(ctx, cluster.Public(), next.Public()))
	pemOf := func(k crypto.PublicKey) string {
		b, err := keys.MarshalPublicKey(k)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, pemOf(next.Public()), cli(t, "", getNext...).ok(t).stdout)

	out := cli(t, "", generate...).ok(t).stdout
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &ac))
	assert.Equal(t, []string{pemOf(cluster.Public()), pemOf(next.Public())}, ac.Spec.PublicKeys, "both keys while they overlap, the key first")
	c, err := enrol.FromAuthorizedConsumer(&ac)
	require.NoError(t, err)
	v, err := c.Verify(providerID)
	require.NoError(t, err)
	assert.True(t, keys.Equal(next.Public(), v.PublicKey), "the next key signs")
	require.NotEmpty(t, v.HandedOver, "with the hand-over from the key")
	assert.True(t, keys.Equal(cluster.Public(), v.HandedOver[0]))
	assert.Equal(t, out, cli(t, "", generate...).ok(t).stdout, "made again, the same")
}

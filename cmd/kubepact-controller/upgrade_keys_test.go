package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/liqosteps"
	"github.com/kubepact/kubepact/internal/prevbuild"
	"github.com/kubepact/kubepact/keys"
)

// lastUnattestedCommit is the last build that kept the keys of its keyring
// without an attestation.
const lastUnattestedCommit = "fe9885d"

// TestUpgradeAdoptsOwnKeys upgrades a peering whose ControlPlane identity
// and ResourceSlice identity have keys of their own, made by a build that
// did not attest keys, to this one, as an operator does: that build's
// config/ and controllers, a handshake asking for an own key (as kubepact
// authenticate does between kubepact clusters) and a slice; then those
// controllers stopped, this config/ applied and this build started. The
// new build attests both keys, which back live Identities, moves the slice
// key to the name that carries its provider, and leaves a key that backs
// nothing unattested; both kubeconfigs keep working with the certificates
// they held, and no CertificateSigningRequest is made.
func TestUpgradeAdoptsOwnKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin, tree, err := prevbuild.Build(ctx, lastUnattestedCommit, nil)
	require.NoError(t, err, "the upgrade test needs the repository with commit %s: a full clone, not a shallow one", lastUnattestedCommit)
	p, c := peer{providerEnv, "cl-keys-upgrade-p"}, peer{consumerEnv, "cl-keys-upgrade-c"}
	peers := []peer{p, c}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, x := range peers {
			if err := applyKustomization(ctx, x.side, filepath.Join("..", "..", "config")); err != nil {
				t.Errorf("applying this config/ again to %s: %v", x.cluster.Name(), err)
			}
		}
	})

	oldConfig := filepath.Join(tree, "config")
	oldArgs := deploymentArgs(ctx, t, oldConfig)
	var old []*process
	for _, x := range peers {
		require.NoError(t, applyKustomization(ctx, x.side, oldConfig), "the previous config/ on %s", x.cluster.Name())
		forgetClusterID(t, x.side, []string{"--cluster-id=" + x.id})
		old = append(old, startBinary(ctx, t, bin, x, append(oldArgs[:len(oldArgs):len(oldArgs)], clusterArgs(t, x)...)))
	}
	require.NoError(t, liqosteps.HandshakeOwnKey(ctx, p.stepsCluster(), c.stepsCluster()))
	const slice = "slice-keys-upgrade"
	makeSlice(ctx, t, p, c, slice)

	secrets := c.admin.CoreV1().Secrets(keys.DefaultNamespace)
	cpKey := keys.KeyringSecretPrefix + identity.ControlPlaneName(p.id)
	legacySliceKey := keys.KeyringSecretPrefix + identity.ResourceSliceName(slice)
	for _, name := range []string{cpKey, legacySliceKey} {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "the previous build keeps %s", name)
		require.Empty(t, s.Data[keys.AttestationSecretKey], "the previous build attests nothing")
	}
	// A key that backs no Identity, as someone may have planted it.
	stray, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	straySecret, err := keys.KeyringSecret(keys.DefaultNamespace, identity.ControlPlaneName("cl-keys-upgrade-stray"), keys.Stored{Key: stray})
	require.NoError(t, err)
	_, err = secrets.Create(ctx, straySecret, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), straySecret.Name, metav1.DeleteOptions{}) })

	cpCert := controlPlaneCertificate(ctx, t, p, c)
	csrsBefore := countCSRs(ctx, t, p)

	for i, x := range peers {
		require.NoError(t, old[i].stop(), "the previous build on %s exits 0 on SIGTERM", x.id)
		require.NoError(t, applyKustomization(ctx, x.side, filepath.Join("..", "..", "config")), "this config/ on %s", x.cluster.Name())
	}
	for _, x := range peers {
		startCurrent(ctx, t, x)
	}

	sliceKey := keys.KeyringSecretPrefix + identity.ResourceSliceKeyName(p.id, slice)
	// The old name goes last, once every key it backed has moved.
	eventually(t, "the keys backing live Identities attested, the slice key moved", func() bool {
		for _, name := range []string{cpKey, sliceKey} {
			s, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(s.Data[keys.AttestationSecretKey]) == 0 {
				return false
			}
		}
		_, err := secrets.Get(ctx, legacySliceKey, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	s, err := secrets.Get(ctx, straySecret.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, s.Data[keys.AttestationSecretKey], "a key that backs no Identity is not attested")

	requireControlPlaneWorks(ctx, t, p, c)
	assert.Equal(t, cpCert, controlPlaneCertificate(ctx, t, p, c), "the ControlPlane certificate is the one held before the upgrade")
	requireSliceIdentityWorks(ctx, t, p, c, slice)
	assert.Equal(t, csrsBefore, countCSRs(ctx, t, p), "no CertificateSigningRequest made by the upgrade")
}

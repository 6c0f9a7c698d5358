package main

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/step"
)

// TestApplyIdentityClientCAUsage refuses a --client-ca file that is not a
// bundle of PEM certificates, before anything else is done.
func TestApplyIdentityClientCAUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caPEM, caKey, err := csr.GenerateCA(nil, "ca", time.Now(), time.Hour)
	require.NoError(t, err)
	keyPEM, err := keys.MarshalPrivateKey(caKey)
	require.NoError(t, err)
	block, _ := pem.Decode(caPEM)
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "", "holds no PEM certificate"},
		{"not PEM", "hello\n", "holds something else than PEM certificates"},
		{"a key", string(keyPEM), "holds a private key"},
		{"a certificate and a key", string(caPEM) + string(keyPEM), "holds a private key"},
		{"a CSR", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: block.Bytes})), `holds a PEM "CERTIFICATE REQUEST" block`},
		{"a certificate and garbage", string(caPEM) + "garbage\n", "holds something else than PEM certificates"},
		{"a damaged certificate", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes[:40]})), "certificate 1 of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".pem", tc.content)
			r := cli(t, "", "apply", "identity", "--remote-cluster-id", "cl-provider", "--client-ca", file, "--kubeconfig", "/nonexistent", "identity.yaml")
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, "--client-ca: ")
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	r := cli(t, "", "apply", "identity", "--remote-cluster-id", "cl-provider", "--client-ca", dir+"/missing.pem", "identity.yaml")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--client-ca: open "+dir+"/missing.pem")

	pool, err := readClientCAs(writeFile(t, dir, "bundle.pem", string(caPEM)+"\n"+string(caPEM)))
	require.NoError(t, err)
	require.NotNil(t, pool)
}

func TestAdviceOnline(t *testing.T) {
	t.Parallel()
	failed := func(err error) error { return &step.Error{Step: step.IdentityApplied, Err: err} }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{failed(fmt.Errorf("%w: 401", identity.ErrRejected)), "refuses the Identity's certificate"},
		{failed(identity.ErrWrongUser), "takes the Identity's certificate for another user"},
		{failed(identity.ErrUntrusted), "does not chain to the --client-ca bundle"},
		{failed(identity.ErrCACertificate), "ask the provider for a new Identity"},
		{failed(identity.ErrKeyUsage), "ask the provider for a new Identity"},
		{errors.New("other"), ""},
	} {
		assert.Contains(t, advice(tc.err, "cl-consumer"), tc.want, tc.err)
	}
}

// TestApplyIdentityClientCA applies Identities offline with --client-ca:
// accepted when the certificate chains to the bundle, refused, writing
// nothing, when it does not; an Identity whose certificate the provider's
// second client CA signed (k3s) is accepted with that CA, and without
// --client-ca.
func TestApplyIdentityClientCA(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, keyNamespace := unique("cl-consumer-cca"), unique("cl-provider-cca"), unique("liqo-cca")
	dir := t.TempDir()
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", keyNamespace}
	cmd := func(words string, args ...string) []string { return append(strings.Fields(words), args...) }

	text := strings.TrimSpace(cli(t, "", cmd("create nonce --remote-cluster-id "+consumerID, onProvider...)...).ok(t).stdout)
	tenantFile := writeFile(t, dir, "tenant.yaml", cli(t, "", cmd("generate tenant --remote-cluster-id "+providerID+" --nonce "+text, onConsumer...)...).ok(t).stdout)
	cli(t, "", cmd("apply tenant "+tenantFile, onProvider...)...).ok(t)
	identityFile := writeFile(t, dir, "identity.yaml", cli(t, "", cmd("generate identity --remote-cluster-id "+consumerID, onProvider...)...).ok(t).stdout)

	// The certificate, issued through the CSR API, chains to the cluster
	// CA, one of the provider's client CAs; the second client CA is another.
	clusterCA := writeFile(t, dir, "cluster-ca.pem", string(providerEnv.cluster.CA()))
	secondPEM, secondKey := providerEnv.cluster.SecondClientCA()
	secondCA := writeFile(t, dir, "second-ca.pem", string(secondPEM))
	bundle := writeFile(t, dir, "bundle.pem", string(secondPEM)+string(providerEnv.cluster.CA()))

	// A second Identity, its certificate re-issued by the second client CA.
	id, err := identity.Decode([]byte(readFile(t, identityFile)))
	require.NoError(t, err)
	key, err := kube.NewKeyStore(consumerEnv.client, keyNamespace).Get(ctx)
	require.NoError(t, err)
	second, err := csr.ParseCertificate(secondPEM)
	require.NoError(t, err)
	id.Spec.AuthParams.SignedCRT = signClient(t, second, secondKey, key, consumerID)
	k3s, err := yaml.Marshal(identityManifest(id))
	require.NoError(t, err)
	k3sFile := writeFile(t, dir, "identity-k3s.yaml", string(k3s))

	apply := func(file string, args ...string) result {
		return cli(t, "", append(cmd("apply identity --remote-cluster-id "+providerID+" "+file, onConsumer...), args...)...)
	}
	refused := func(file, clientCA string) {
		t.Helper()
		before := heldState(t, ctx, providerID)
		r := apply(file, "--client-ca", clientCA)
		assert.Equal(t, exitError, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "does not chain to the --client-ca bundle")
		assert.Equal(t, before, heldState(t, ctx, providerID), "nothing written")
	}

	apply(identityFile, "--client-ca", clusterCA).ok(t)
	refused(identityFile, secondCA)
	apply(identityFile, "--client-ca", bundle).ok(t)
	refused(k3sFile, clusterCA)
	apply(k3sFile, "--client-ca", secondCA).ok(t)
	apply(k3sFile).ok(t)

	cfg, _ := issuedConfig(t, ctx, providerID)
	requireLeastPrivilege(t, ctx, cfg, "liqo-tenant-"+consumerID)
}

// signClient issues the ControlPlane certificate of consumerID for key,
// signed by ca.
func signClient(t *testing.T, ca *x509.Certificate, caKey any, key *keys.PrivateKey, consumerID string) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      csr.ControlPlaneSubject(consumerID),
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

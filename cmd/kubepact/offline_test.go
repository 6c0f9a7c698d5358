package main

import (
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakeclient "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

const transcriptField = "metadata.annotations[" + tenant.TranscriptSignatureAnnotation + "]"

func newNonce(t testing.TB) nonce.Nonce {
	t.Helper()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	return n
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag string
		want keys.Algorithm
	}{
		{"", keys.Ed25519},
		{"ed25519", keys.Ed25519},
		{"ecdsa-p256", keys.ECDSAP256},
		{"rsa-2048", keys.RSA2048},
	} {
		t.Run(tc.want.String()+"/"+tc.flag, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "key.pem")
			args := []string{"generate", "key", "--out", path}
			if tc.flag != "" {
				args = append(args, "--algorithm", tc.flag)
			}
			r := cli(t, "", args...).ok(t)

			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Contains(t, string(data), "-----BEGIN PRIVATE KEY-----")
			k, err := keys.ParsePrivateKey(data)
			require.NoError(t, err)
			assert.Equal(t, tc.want, k.Algorithm())
			assert.Equal(t, fmt.Sprintf("Wrote %v key %s to %s\n", tc.want, keys.Fingerprint(k.Public()), path), r.stdout)
		})
	}
}

func TestGenerateKeyRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "key.pem", "precious")
	r := cli(t, "", "generate", "key", "--out", path)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "kubepact: "+path+" already exists")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(data))
}

// offlineTenant generates a key file and, from it, a Tenant of consumer
// cl-consumer for provider cl-provider answering n. It returns the key
// file's path and the Tenant's YAML.
func offlineTenantFile(t *testing.T, n nonce.Nonce, extra ...string) (keyFile, tenantYAML string) {
	t.Helper()
	keyFile = filepath.Join(t.TempDir(), "key.pem")
	cli(t, "", "generate", "key", "--out", keyFile).ok(t)
	args := append([]string{"generate", "tenant", "--key-file", keyFile, "--cluster-id", "cl-consumer",
		"--remote-cluster-id", "cl-provider", "--nonce", n.Text()}, extra...)
	return keyFile, cli(t, "", args...).ok(t).stdout
}

func TestOfflineTenantVerifies(t *testing.T) {
	t.Parallel()
	n := newNonce(t)
	keyFile, out := offlineTenantFile(t, n)

	// What was printed is a Tenant as kubectl apply takes it.
	for _, absent := range []string{"status", "creationTimestamp", "uid", "resourceVersion", "managedFields"} {
		assert.NotContains(t, out, absent+":")
	}
	var tn authv1beta1.Tenant
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &tn))
	assert.Equal(t, authv1beta1.SchemeGroupVersion.String(), tn.APIVersion)
	assert.Equal(t, authv1beta1.TenantKind, tn.Kind)
	assert.Equal(t, "cl-consumer", tn.Name)
	assert.Equal(t, "liqo-tenant-cl-consumer", tn.Namespace)
	assert.Equal(t, "cl-provider", tn.Annotations[tenant.TranscriptProviderAnnotation])

	data, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	key, err := keys.ParsePrivateKey(data)
	require.NoError(t, err)
	want := "Tenant cl-consumer verified: cluster ID cl-consumer, key " + keys.Fingerprint(key.Public()) +
		", CSR CN=cl-consumer O=liqo.io, transcript for provider cl-provider\n"

	path := writeFile(t, t.TempDir(), "tenant.yaml", out)
	assert.Equal(t, want, cli(t, "", "verify", "tenant", "--nonce", n.Text(), path).ok(t).stdout)
	assert.Equal(t, want, cli(t, out, "verify", "tenant", "-", "--nonce", n.Text(), "--cluster-id", "cl-provider").ok(t).stdout)
	assert.Equal(t, want, cli(t, out, "verify", "tenant", "--policy", "strict", "--nonce", n.Text(), "-").ok(t).stdout)

	asJSON := cli(t, "", "generate", "tenant", "--key-file", keyFile, "--cluster-id", "cl-consumer",
		"--remote-cluster-id", "cl-provider", "--nonce", n.Text(), "-o", "json").ok(t).stdout
	assert.True(t, strings.HasPrefix(asJSON, "{\n"))
	assert.Equal(t, want, cli(t, asJSON, "verify", "tenant", "--nonce", n.Text(), "-").ok(t).stdout)
}

func TestVerifyTenantRejects(t *testing.T) {
	t.Parallel()
	n := newNonce(t)
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	build := func(t *testing.T, transcript bool) *authv1beta1.Tenant {
		opts := &tenant.BuildOptions{}
		if transcript {
			opts.ProviderID, opts.Expiry = "cl-provider", time.Now().Add(time.Minute)
		}
		tn, err := tenant.Build("cl-consumer", key, n, opts)
		require.NoError(t, err)
		return tn
	}
	csrFor := func(t *testing.T, k *keys.PrivateKey, subject pkix.Name) []byte {
		req, err := csr.Create(nil, k, subject)
		require.NoError(t, err)
		return req
	}

	for _, tc := range []struct {
		name       string
		transcript bool // whether the Tenant carries a transcript, as a kubepact consumer's does
		tamper     func(t *testing.T, tn *authv1beta1.Tenant)
		args       []string // more arguments of verify tenant
		nonce      string
		field      string // named in the output
		cause      string // also in the output
	}{
		{name: "bad signature", transcript: true,
			tamper: func(_ *testing.T, tn *authv1beta1.Tenant) { tn.Spec.Signature[0] ^= 1 },
			field:  "spec.signature", cause: "signature does not verify"},
		{name: "other nonce", transcript: true, nonce: newNonce(t).Text(),
			field: "spec.signature", cause: "signature does not verify"},
		{name: "signed by another key",
			tamper: func(t *testing.T, tn *authv1beta1.Tenant) {
				pub, err := keys.MarshalPublicKey(other.Public())
				require.NoError(t, err)
				tn.Spec.PublicKey = pub
			},
			field: "spec.signature", cause: "signature does not verify"},
		{name: "tampered CSR: another key",
			tamper: func(t *testing.T, tn *authv1beta1.Tenant) {
				tn.Spec.CSR = csrFor(t, other, csr.ControlPlaneSubject("cl-consumer"))
			},
			field: "spec.csr", cause: "for another key"},
		{name: "tampered CSR: extra group",
			tamper: func(t *testing.T, tn *authv1beta1.Tenant) {
				tn.Spec.CSR = csrFor(t, key, pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io", "system:masters"}})
			},
			field: "spec.csr", cause: "wrong organizations"},
		{name: "tampered CSR: garbage",
			tamper: func(_ *testing.T, tn *authv1beta1.Tenant) { tn.Spec.CSR = []byte("not a CSR") },
			field:  "spec.csr", cause: "malformed certificate signing request"},
		{name: "tampered CSR under a transcript", transcript: true,
			tamper: func(t *testing.T, tn *authv1beta1.Tenant) {
				tn.Spec.CSR = csrFor(t, key, pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io", "system:masters"}})
			},
			field: transcriptField, cause: "transcript does not match"},
		{name: "invalid cluster ID",
			tamper: func(_ *testing.T, tn *authv1beta1.Tenant) { tn.Spec.ClusterID = "Not_A_Label" },
			field:  "spec.clusterID", cause: "invalid cluster ID"},
		{name: "malformed public key",
			tamper: func(_ *testing.T, tn *authv1beta1.Tenant) { tn.Spec.PublicKey = []byte("nope") },
			field:  "spec.publicKey", cause: "malformed key"},
		{name: "invalid proxy URL",
			tamper: func(_ *testing.T, tn *authv1beta1.Tenant) { p := "ftp://proxy"; tn.Spec.ProxyURL = &p },
			field:  "spec.proxyURL", cause: "invalid proxy URL"},
		{name: "made for another provider", transcript: true, args: []string{"--cluster-id", "cl-elsewhere"},
			field: transcriptField, cause: `made for provider "cl-provider", verified by "cl-elsewhere"`},
		{name: "expired transcript", transcript: true,
			tamper: func(t *testing.T, tn *authv1beta1.Tenant) {
				expired, err := tenant.Build("cl-consumer", key, n, &tenant.BuildOptions{ProviderID: "cl-provider", Expiry: time.Now().Add(-time.Minute)})
				require.NoError(t, err)
				*tn = *expired
			},
			field: transcriptField, cause: "transcript expired"},
		{name: "no transcript under the strict policy", args: []string{"--policy", "strict"},
			field: transcriptField, cause: "carries no transcript"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tn := build(t, tc.transcript)
			if tc.tamper != nil {
				tc.tamper(t, tn)
			}
			data, err := yaml.Marshal(tenantManifest(tn))
			require.NoError(t, err)
			text := tc.nonce
			if text == "" {
				text = n.Text()
			}
			path := writeFile(t, t.TempDir(), "tenant.yaml", string(data))
			r := cli(t, "", append([]string{"verify", "tenant", "--nonce", text, path}, tc.args...)...)
			assert.Equal(t, exitError, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Empty(t, r.stdout)
			assert.True(t, strings.HasPrefix(r.stderr, `kubepact: tenant "cl-consumer" rejected: `+tc.field+": "), r.stderr)
			assert.Contains(t, r.stderr, tc.cause)
		})
	}
}

func TestVerifyTenantRejectsOtherDocuments(t *testing.T) {
	t.Parallel()
	n := newNonce(t)
	_, good := offlineTenantFile(t, n)
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", strings.Replace(good, "spec:\n", "spec:\n  bogus: 1\n", 1), `unknown field "spec.bogus"`},
		{"duplicate field", good + "kind: Tenant\n", `key "kind" already set`},
		{"another kind", strings.Replace(good, "kind: Tenant", "kind: Identity", 1), `kind "Identity", want authentication.liqo.io/v1beta1 Tenant`},
		{"another version", strings.Replace(good, "v1beta1", "v1alpha1", 1), `apiVersion "authentication.liqo.io/v1alpha1"`},
		{"empty", "", `empty document`},
		{"not YAML", "{{{", "decoding standard input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, tc.doc, "verify", "tenant", "--nonce", n.Text(), "-")
			assert.Equal(t, exitError, r.code)
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	r := cli(t, "", "verify", "tenant", "--nonce", n.Text(), filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "no such file")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	n := newNonce(t).Text()
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	cli(t, "", "generate", "key", "--out", keyFile).ok(t)
	short := strings.NewReplacer(n, "NONCE", keyFile, "KEY") // for the names of the subtests
	offline := []string{"generate", "tenant", "--key-file", keyFile, "--cluster-id", "cl-consumer", "--remote-cluster-id", "cl-provider", "--nonce", n}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"generate"}, "generate what? One of: tenant, identity, authorized-consumer, trusted-provider, peering, key"},
		{[]string{"generate", "widget"}, `generate: unknown resource "widget"`},
		{[]string{"verify", "tenant", "t.yaml"}, "--nonce is required"},
		{[]string{"verify", "tenant", "--nonce", n}, "missing the Tenant file"},
		{[]string{"verify", "tenant", "--nonce", n, "a.yaml", "b.yaml"}, `unexpected argument "b.yaml"`},
		{[]string{"verify", "tenant", "--nonce", "c2hvcnQ=", "t.yaml"}, "--nonce: malformed nonce: 8 characters, want 88"},
		{[]string{"verify", "tenant", "--bogus", "t.yaml"}, "unknown flag: --bogus"},
		{[]string{"verify", "tenant", "--nonce", n, "--policy", "lax", "t.yaml"}, `"lax" is not a policy`},
		{[]string{"verify", "tenant", "--nonce", n, "--cluster-id", "UPPER", "t.yaml"}, "--cluster-id: invalid cluster ID"},
		{append(offline, "-o", "xml"), `"xml" is not an output format`},
		{append(offline, "--transcript-lifetime", "2h"), "--transcript-lifetime: 2h0m0s is not between 0 and 1h0m0s"},
		{append(offline, "--kubeconfig", "some.kubeconfig"), "--key-file signs offline: it takes no --kubeconfig"},
		{append(offline, "extra"), `unexpected argument "extra"`},
		{[]string{"generate", "tenant", "--key-file", keyFile, "--remote-cluster-id", "cl-provider", "--nonce", n}, "--cluster-id is required with --key-file"},
		{[]string{"generate", "tenant", "--key-file", keyFile, "--cluster-id", "Bad_ID", "--remote-cluster-id", "cl-provider", "--nonce", n}, "--cluster-id: invalid cluster ID"},
		{[]string{"generate", "tenant", "--nonce", n}, "--remote-cluster-id is required"},
		{[]string{"generate", "key"}, "--out is required"},
		{[]string{"generate", "key", "--out", "k.pem", "--algorithm", "dsa"}, `"dsa" is not a key algorithm`},
		{[]string{"generate", "identity"}, "--remote-cluster-id is required"},
		{[]string{"authenticate"}, "--remote-kubeconfig or --remote-context is required"},
		{[]string{"unauthenticate", "--cluster-id", "x_y", "--remote-kubeconfig", "p"}, "--cluster-id: invalid cluster ID"},
		{[]string{"create", "nonce"}, "--remote-cluster-id is required"},
		{[]string{"get", "nonce", "--remote-cluster-id", "-bad-"}, "--remote-cluster-id: invalid cluster ID"},
		{[]string{"apply", "identity"}, "missing the Identity file"},
		{[]string{"apply", "identity", "identity.yaml"}, "--remote-cluster-id is required"},
		{[]string{"apply", "identity", "--remote-cluster-id", "Bad_ID", "identity.yaml"}, "--remote-cluster-id: invalid cluster ID"},
		{[]string{"apply", "tenant"}, "missing the Tenant file"},
	} {
		t.Run(short.Replace(strings.Join(tc.args, " ")), func(t *testing.T) {
			t.Parallel()
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitUsage, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.want)
			assert.True(t, strings.HasPrefix(r.stderr, "kubepact") || len(tc.args) == 0, r.stderr)
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"},
		{"authenticate", "-h"}, {"generate", "tenant", "--help"}, {"help", "apply", "identity"}, {"verify", "tenant", "-h"}, {"generate", "key", "-h"},
	} {
		r := cli(t, "", args...)
		assert.Equal(t, exitOK, r.code, args)
		assert.Contains(t, r.stdout, "Usage:\n  kubepact ", args)
		assert.Empty(t, r.stderr, args)
	}
	r := cli(t, "", "generate", "tenant", "-h")
	assert.Contains(t, r.stdout, `  -n, --namespace string`)
	assert.Contains(t, r.stdout, `(default "liqo")`)
	assert.Contains(t, r.stdout, `  -o, --output string`)
}

func TestFlagsAndArgumentsInAnyOrder(t *testing.T) {
	t.Parallel()
	n := newNonce(t)
	_, out := offlineTenantFile(t, n)
	path := writeFile(t, t.TempDir(), "tenant.yaml", out)
	cli(t, "", "verify", "tenant", path, "--nonce", n.Text()).ok(t)
	cli(t, "", "verify", "tenant", "--nonce", n.Text(), "--", path).ok(t)
}

func TestRequireCRDs(t *testing.T) {
	t.Parallel()
	gv := authv1beta1.SchemeGroupVersion.String()
	for _, tc := range []struct {
		name   string
		served []*metav1.APIResourceList
		want   string // "" for no error
	}{
		{"none", nil, "the provider cluster does not serve [tenants.authentication.liqo.io]"},
		{"others", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "identities"}}}},
			"the provider cluster does not serve [tenants.authentication.liqo.io]: install Liqo there, or pass --install-crds"},
		{"served", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "identities"}, {Name: "tenants"}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := fakeclient.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			d.Resources = tc.served
			err := requireCRDs(d, providerRole, authv1beta1.TenantResource)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errMissingCRDs)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestAdvice(t *testing.T) {
	t.Parallel()
	failed := func(s step.Name, err error) error { return &step.Error{Step: s, Err: err} }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{failed(step.ForgetIdentity, fmt.Errorf("%w: ResourceSlice identity x", consumer.ErrInUse)), "delete those ResourceSlices"},
		{failed(step.TenantApplied, &tenant.FieldError{Field: "spec.signature", Err: nonce.ErrNotFound}),
			"ask the provider for a new nonce: kubepact create nonce --remote-cluster-id cl-consumer"},
		{failed(step.TenantApplied, nonce.ErrExpired), "kubepact create nonce --remote-cluster-id cl-consumer"},
		{failed(step.IdentityApplied, identity.ErrKeyMismatch), "this Identity was issued for another key"},
		{failed(step.IdentityApplied, identity.ErrExpired), "ask the provider for a new Identity"},
		{failed(step.TenantApplied, fmt.Errorf("%w: %w", tenant.ErrTranscriptMismatch, keys.ErrBadSignature)), "transcript was signed for another provider"},
		{failed(step.NonceSigned, keys.ErrNotFound), "this cluster has no cluster key yet"},
		{failed(step.IdentityApplied, fmt.Errorf("%w: API server", consumer.ErrEndpointChanged)), "run again with --replace-endpoint"},
		{failed(step.IdentityApplied, identity.ErrWrongProvider), "issued by another provider than --remote-cluster-id names"},
		{failed(step.IdentityApplied, identity.ValidateServer("http://p.example")), "not an https URL"},
		{errors.New("something else"), ""},
	} {
		assert.Contains(t, advice(tc.err, "cl-consumer"), tc.want, tc.err)
		if tc.want == "" {
			assert.Empty(t, advice(tc.err, "cl-consumer"))
		}
	}
}

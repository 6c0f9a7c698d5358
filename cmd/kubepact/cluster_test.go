package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
)

// handshakeSteps are the steps authenticate reports, in order.
var handshakeSteps = []step.Name{
	step.ProviderNamespace, step.NonceGenerated,
	step.ConsumerNamespace, step.NonceRetrieved, step.NonceSigned, step.TenantGenerated,
	step.TenantApplied, step.CertificateIssued, step.RBACBound, step.TenantStatus,
	step.IdentityGenerated,
	step.IdentityApplied, step.KubeconfigWritten, step.IdentityStatus,
}

// unique returns name with a random suffix, so that every run of a test,
// also with -count, starts from clean clusters.
func unique(name string) string {
	return fmt.Sprintf("%s-%04x", name, rand.N(1<<16))
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// authenticateArgs are the arguments of authenticate and unauthenticate
// between the test clusters.
func authenticateArgs(verb, consumerID, providerID, namespace string) []string {
	return []string{verb, "--local", "--kubeconfig", consumerEnv.kubeconfig, "--remote-kubeconfig", providerEnv.kubeconfig,
		"--cluster-id", consumerID, "--remote-cluster-id", providerID, "-n", namespace}
}

// issuedConfig returns the client configuration held in the kubeconfig
// Secret that the consumer cluster keeps for providerID.
func issuedConfig(t *testing.T, ctx context.Context, providerID string) (*rest.Config, *corev1.Secret) {
	t.Helper()
	name := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
	sec, err := consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+providerID).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := kubeconfig.Parse(sec.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	restCfg, err := cfg.RESTConfig()
	require.NoError(t, err)
	return restCfg, sec
}

var resourceSlices = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource)

func resourceSlice(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(authv1beta1.SchemeGroupVersion.String())
	u.SetKind(authv1beta1.ResourceSliceKind)
	u.SetName(name)
	return u
}

// requireLeastPrivilege checks on the provider that cfg may handle
// ResourceSlices in tenantNS and nothing else tried here.
func requireLeastPrivilege(t *testing.T, ctx context.Context, cfg *rest.Config, tenantNS string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	core, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	slices := dyn.Resource(resourceSlices)

	_, err = slices.Namespace(tenantNS).Create(ctx, resourceSlice("slice-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := slices.Namespace(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	_, err = core.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing Secrets in the tenant namespace: %v", err)
	_, err = slices.Namespace("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ResourceSlices in default: %v", err)
	_, err = slices.Namespace("default").Create(ctx, resourceSlice("slice-b"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a ResourceSlice in default: %v", err)
	_, err = core.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ConfigMaps in default: %v", err)
	_, err = core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a Namespace: %v", err)

	require.NoError(t, slices.Namespace(tenantNS).Delete(ctx, "slice-a", metav1.DeleteOptions{}))
}

// requireUnauthenticated checks that the consumer's Identity and Secret for
// providerID are gone and that cfg is refused on the provider.
func requireUnauthenticated(t *testing.T, ctx context.Context, providerID, secretName string, cfg *rest.Config, tenantNS string) {
	t.Helper()
	_, err := consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+providerID).Get(ctx, secretName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "kubeconfig Secret: %v", err)
	ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, "liqo-tenant-"+providerID)
	require.NoError(t, err)
	require.Empty(t, ids)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = dyn.Resource(resourceSlices).Namespace(tenantNS).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing ResourceSlices after unauthenticate: %v", err)
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-online"), unique("cl-provider-online"), unique("liqo-online")
	tenantNS := "liqo-tenant-" + consumerID

	r := cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	for _, s := range handshakeSteps {
		assert.Contains(t, r.stderr, " INFO  "+string(s)+"\n")
	}
	assert.Equal(t, "Kubeconfig Secret liqo-tenant-"+providerID+"/kubeconfig-controlplane-"+providerID+"\n"+
		"  server:    "+providerEnv.cluster.Host()+"\n"+
		"  user:      "+consumerID+"\n"+
		"  namespace: "+tenantNS+"\n", r.stdout)

	cfg, sec := issuedConfig(t, ctx, providerID)
	requireLeastPrivilege(t, ctx, cfg, tenantNS)

	// Authenticating again changes nothing.
	again := cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	assert.Equal(t, r.stdout, again.stdout)

	r = cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...).ok(t)
	assert.Contains(t, r.stderr, " INFO  "+string(step.ForgetIdentity)+"\n")
	assert.Contains(t, r.stderr, " INFO  "+string(step.ForgetTenant)+"\n")
	assert.Equal(t, "Consumer "+consumerID+" is no longer authenticated on provider "+providerID+"\n", r.stdout)
	requireUnauthenticated(t, ctx, providerID, sec.Name, cfg, tenantNS)
}

// TestAuthenticateReadsClusterIDs reads both cluster IDs where Liqo keeps
// them, and installs the CRDs (again) on request.
func TestAuthenticateReadsClusterIDs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	namespace, consumerID, providerID := unique("liqo-ids"), unique("cl-consumer-cm"), unique("cl-provider-cm")
	for _, c := range []struct {
		env *testEnv
		id  string
	}{{consumerEnv, consumerID}, {providerEnv, providerID}} {
		_, err := c.env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.env.client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: clusterid.RecordName, Labels: map[string]string{clusterid.RecordLabel: clusterid.RecordLabelValue}},
			Data:       map[string]string{clusterid.RecordKey: c.id},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	args := []string{"--kubeconfig", consumerEnv.kubeconfig, "--remote-kubeconfig", providerEnv.kubeconfig, "-n", namespace, "--remote-namespace", namespace}

	r := cli(t, "", append([]string{"authenticate", "--local", "--install-crds"}, args...)...).ok(t)
	assert.Contains(t, r.stdout, "  user:      "+consumerID+"\n")
	assert.Contains(t, r.stdout, "Kubeconfig Secret liqo-tenant-"+providerID+"/")
	r = cli(t, "", append([]string{"unauthenticate", "--local"}, args...)...).ok(t)
	assert.Contains(t, r.stdout, "Consumer "+consumerID+" is no longer authenticated on provider "+providerID)

	// Without the ConfigMap, --cluster-id is needed.
	r = cli(t, "", "authenticate", "--local", "--kubeconfig", consumerEnv.kubeconfig, "--remote-kubeconfig", providerEnv.kubeconfig, "-n", "liqo-no-ids")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "cannot tell the ID of the consumer cluster: it has no ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in liqo-no-ids; pass --cluster-id")
	r = cli(t, "", "authenticate", "--local", "--kubeconfig", consumerEnv.kubeconfig, "--remote-kubeconfig", providerEnv.kubeconfig,
		"-n", "liqo-no-ids", "--cluster-id", "cl-consumer-noid")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "cannot tell the ID of the provider cluster: it has no ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in liqo; pass --remote-cluster-id")
}

// TestOfflineFlow moves the Tenant and the Identity between the clusters as
// files, each command run with one cluster's kubeconfig only.
func TestOfflineFlow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, keyNamespace := unique("cl-consumer-files"), unique("cl-provider-files"), unique("liqo-files")
	dir := t.TempDir()
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", keyNamespace}
	cmd := func(words string, args ...string) []string { return append(strings.Fields(words), args...) }

	// run runs one command of the flow and records how long it took.
	var total time.Duration
	var took []string
	run := func(args ...string) result {
		t.Helper()
		start := time.Now()
		r := cli(t, "", args...).ok(t)
		d := time.Since(start)
		total += d
		took = append(took, fmt.Sprintf("%s %s %v", args[0], args[1], d.Round(time.Millisecond)))
		return r
	}

	// Provider: issue the nonce.
	r := run(cmd("create nonce --remote-cluster-id "+consumerID, onProvider...)...)
	assert.Contains(t, r.stderr, " INFO  "+string(step.NonceGenerated)+"\n")
	text := strings.TrimSuffix(r.stdout, "\n")
	_, err := nonce.Parse(text)
	require.NoError(t, err, "create nonce prints only the nonce: %q", r.stdout)
	assert.Equal(t, r.stdout, run(cmd("get nonce --remote-cluster-id "+consumerID, onProvider...)...).stdout)

	// Consumer: sign it.
	r = run(cmd("generate tenant --remote-cluster-id "+providerID+" --nonce "+text, onConsumer...)...)
	assert.Contains(t, r.stderr, " INFO  "+string(step.TenantGenerated)+"\n")
	tenantFile := writeFile(t, dir, "tenant.yaml", r.stdout)

	// Provider: check, store and accept it.
	r = run("verify", "tenant", "--nonce", text, "--cluster-id", providerID, tenantFile)
	assert.True(t, strings.HasPrefix(r.stdout, "Tenant "+consumerID+" verified: cluster ID "+consumerID+", key SHA256:"), r.stdout)
	r = run(cmd("apply tenant "+tenantFile, onProvider...)...)
	assert.Equal(t, "Tenant liqo-tenant-"+consumerID+"/"+consumerID+" applied on the provider cluster; next: kubepact generate identity --remote-cluster-id "+consumerID+"\n", r.stdout)
	r = run(cmd("generate identity --remote-cluster-id "+consumerID, onProvider...)...)
	for _, s := range []step.Name{step.TenantApplied, step.CertificateIssued, step.RBACBound, step.TenantStatus, step.IdentityGenerated} {
		assert.Contains(t, r.stderr, " INFO  "+string(s)+"\n")
	}
	identityFile := writeFile(t, dir, "identity.yaml", r.stdout)

	// Consumer: apply the Identity.
	r = run(cmd("apply identity --remote-cluster-id "+providerID+" "+identityFile, onConsumer...)...)
	assert.Equal(t, "Kubeconfig Secret liqo-tenant-"+providerID+"/kubeconfig-controlplane-"+providerID+"\n"+
		"  server:    "+providerEnv.cluster.Host()+"\n"+
		"  user:      "+consumerID+"\n"+
		"  namespace: liqo-tenant-"+consumerID+"\n", r.stdout)
	t.Logf("offline flow took %v: %s", total.Round(time.Millisecond), strings.Join(took, ", "))

	cfg, _ := issuedConfig(t, ctx, providerID)
	requireLeastPrivilege(t, ctx, cfg, "liqo-tenant-"+consumerID)

	// The accepted Tenant is served again, without a new nonce.
	again := cli(t, "", cmd("generate identity --remote-cluster-id "+consumerID, onProvider...)...).ok(t)
	assert.Equal(t, readFile(t, identityFile), again.stdout)

	t.Run("printed objects are what kubectl apply sends", func(t *testing.T) {
		for _, f := range []string{tenantFile, identityFile} {
			out := readFile(t, f)
			for _, absent := range []string{"status:", "creationTimestamp:", "uid:", "resourceVersion:", "managedFields:", "finalizers:"} {
				assert.NotContains(t, out, absent, f)
			}
		}
		createAsKubectl(t, ctx, providerEnv, tenantFile, authv1beta1.TenantResource)
		createAsKubectl(t, ctx, consumerEnv, identityFile, authv1beta1.IdentityResource)
	})

	t.Run("an Identity for another key is refused", func(t *testing.T) {
		// Another Liqo namespace holds another cluster key.
		other := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", keyNamespace + "-other"}
		cli(t, "", cmd("generate tenant --remote-cluster-id "+providerID+" --nonce "+text, other...)...).ok(t)
		r := cli(t, "", cmd("apply identity --remote-cluster-id "+providerID+" "+identityFile, other...)...)
		assert.Equal(t, exitError, r.code)
		assert.Contains(t, r.stderr, "kubepact: applying the Identity on the consumer: ")
		assert.Contains(t, r.stderr, "this Identity was issued for another key")
	})

	t.Run("apply identity refuses an Identity from another provider", func(t *testing.T) {
		before := heldState(t, ctx, providerID)
		r := cli(t, "", cmd("apply identity "+identityFile, onConsumer...)...)
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "kubepact: apply identity: --remote-cluster-id is required")

		wrong := unique("cl-provider-wrong")
		r = cli(t, "", cmd("apply identity --remote-cluster-id "+wrong+" "+identityFile, onConsumer...)...)
		assert.Equal(t, exitError, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "kubepact: applying the Identity on the consumer: ")
		assert.Contains(t, r.stderr, "this Identity was issued by another provider than --remote-cluster-id names")
		ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, "liqo-tenant-"+wrong)
		require.NoError(t, err)
		assert.Empty(t, ids)
		secrets, err := consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+wrong).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, secrets.Items)
		assert.Equal(t, before, heldState(t, ctx, providerID), "the held Identity and kubeconfig Secret are unchanged")
	})

	t.Run("a changed endpoint needs --replace-endpoint", func(t *testing.T) {
		original := readFile(t, identityFile)
		require.Contains(t, original, "apiServer: "+providerEnv.cluster.Host()+"\n")
		moved := writeFile(t, dir, "moved.yaml", strings.Replace(original, "apiServer: "+providerEnv.cluster.Host(), "apiServer: https://moved.example:6443", 1))
		plain := writeFile(t, dir, "http.yaml", strings.Replace(original, "apiServer: "+providerEnv.cluster.Host(), "apiServer: http://moved.example:6443", 1))
		apply := "apply identity --remote-cluster-id " + providerID + " "
		before := heldState(t, ctx, providerID)

		r := cli(t, "", cmd(apply+moved, onConsumer...)...)
		assert.Equal(t, exitError, r.code)
		assert.Contains(t, r.stderr, "run again with --replace-endpoint")
		assert.Equal(t, before, heldState(t, ctx, providerID))
		for _, extra := range [][]string{nil, {"--replace-endpoint"}} {
			r = cli(t, "", append(cmd(apply+plain, onConsumer...), extra...)...)
			assert.Equal(t, exitError, r.code)
			assert.Contains(t, r.stderr, "not an https URL")
			assert.Equal(t, before, heldState(t, ctx, providerID))
		}

		r = cli(t, "", append(cmd(apply+moved, onConsumer...), "--replace-endpoint")...).ok(t)
		assert.Contains(t, r.stdout, "  server:    https://moved.example:6443\n")
		r = cli(t, "", append(cmd(apply+identityFile, onConsumer...), "--replace-endpoint")...).ok(t)
		assert.Contains(t, r.stdout, "  server:    "+providerEnv.cluster.Host()+"\n")
	})

	t.Run("only the protocol's metadata is stored", func(t *testing.T) {
		// Start from nothing held, so the Identity is created.
		store := kube.NewIdentityStore(consumerEnv.typed)
		ns, name := "liqo-tenant-"+providerID, identity.ControlPlaneName(providerID)
		require.NoError(t, store.Delete(ctx, ns, name))
		err := consumerEnv.client.CoreV1().Secrets(ns).Delete(ctx, kubeconfig.SecretName(name), metav1.DeleteOptions{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)

		var u map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(readFile(t, identityFile)), &u))
		meta := u["metadata"].(map[string]any)
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "6b0c1d1e-0000-4000-8000-000000000000", "controller": true,
		}}
		meta["finalizers"] = []any{"evil.example/hold"}
		meta["labels"] = map[string]any{"liqo.io/remote-cluster-id": "cl-evil", "app": "evil"}
		meta["annotations"] = map[string]any{"evil.example/note": "x"}
		out, err := yaml.Marshal(u)
		require.NoError(t, err)
		poisoned := writeFile(t, dir, "poisoned.yaml", string(out))

		cli(t, "", cmd("apply identity --remote-cluster-id "+providerID+" "+poisoned, onConsumer...)...).ok(t)
		ids, err := store.List(ctx, ns)
		require.NoError(t, err)
		require.Len(t, ids, 1)
		assert.Empty(t, ids[0].OwnerReferences)
		assert.Empty(t, ids[0].Finalizers)
		assert.Empty(t, ids[0].Annotations)
		assert.Equal(t, map[string]string{"liqo.io/remote-cluster-id": providerID}, ids[0].Labels)
		sec, err := consumerEnv.client.CoreV1().Secrets(ns).Get(ctx, kubeconfig.SecretName(name), metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, sec.OwnerReferences, 1)
		assert.Equal(t, ids[0].UID, sec.OwnerReferences[0].UID)
	})
}

// heldObjects are what the consumer cluster holds for a provider, by
// resource version.
type heldObjects struct{ identity, secret string }

func heldState(t *testing.T, ctx context.Context, providerID string) heldObjects {
	t.Helper()
	ns, name := "liqo-tenant-"+providerID, identity.ControlPlaneName(providerID)
	ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, ns)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	sec, err := consumerEnv.client.CoreV1().Secrets(ns).Get(ctx, kubeconfig.SecretName(name), metav1.GetOptions{})
	require.NoError(t, err)
	return heldObjects{identity: ids[0].ResourceVersion, secret: sec.ResourceVersion}
}

// createAsKubectl creates the object printed in path as kubectl apply -f
// would, with strict field validation, in a new namespace.
func createAsKubectl(t *testing.T, ctx context.Context, env *testEnv, path, resource string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, path)), &u.Object))
	ns, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubectl-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	u.SetNamespace(ns.Name)
	_, err = env.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(resource)).Namespace(ns.Name).
		Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.NoError(t, err, "creating %s from %s", resource, filepath.Base(path))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestGenerateIdentityAfterNonceRedeemed sends a Tenant of another key over
// a nonce the first one redeemed.
func TestGenerateIdentityAfterNonceRedeemed(t *testing.T) {
	t.Parallel()
	consumerID, providerID := unique("cl-consumer-redeemed"), unique("cl-provider-redeemed")
	dir := t.TempDir()
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", unique("liqo-redeemed")}

	text := strings.TrimSpace(cli(t, "", append([]string{"create", "nonce", "--remote-cluster-id", consumerID}, onProvider...)...).ok(t).stdout)
	first := cli(t, "", append([]string{"generate", "tenant", "--remote-cluster-id", providerID, "--nonce", text}, onConsumer...)...).ok(t)
	cli(t, "", append([]string{"generate", "identity", "-f", writeFile(t, dir, "first.yaml", first.stdout)}, onProvider...)...).ok(t)

	// A Tenant of another key, offline, over the same nonce.
	keyFile := filepath.Join(dir, "other-key.pem")
	cli(t, "", "generate", "key", "--out", keyFile).ok(t)
	second := cli(t, "", "generate", "tenant", "--key-file", keyFile, "--cluster-id", consumerID,
		"--remote-cluster-id", providerID, "--nonce", text).ok(t)
	r := cli(t, second.stdout, append([]string{"generate", "identity", "--remote-cluster-id", consumerID, "-f", "-"}, onProvider...)...)
	assert.Equal(t, exitError, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "kubepact: applying the Tenant on the provider: ")
	assert.Contains(t, r.stderr, "spec.signature")
	assert.Contains(t, r.stderr, "nonce redeemed by another Tenant")
	assert.Contains(t, r.stderr, "another Tenant already redeemed the consumer's nonce; ask the provider for a new nonce: kubepact create nonce --remote-cluster-id "+consumerID)

	// The first Tenant, sent again, resumes: the nonce stays bound to it.
	cli(t, "", append([]string{"generate", "identity", "-f", writeFile(t, dir, "again.yaml", first.stdout)}, onProvider...)...).ok(t)

	r = cli(t, "", append([]string{"get", "nonce", "--remote-cluster-id", consumerID}, onProvider...)...)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "the nonce for consumer "+consumerID+" was redeemed by a Tenant at ")
	assert.Contains(t, r.stderr, "run 'kubepact create nonce --remote-cluster-id "+consumerID+"', which returns it again")

	// create nonce returns it again: the first Tenant's key was accepted.
	again := strings.TrimSpace(cli(t, "", append([]string{"create", "nonce", "--remote-cluster-id", consumerID}, onProvider...)...).ok(t).stdout)
	assert.Equal(t, text, again)
}

// TestCreateNonceTTL issues a nonce with create nonce --nonce-ttl and
// redeems it, after that TTL, with generate identity configured for a longer
// one, from a Tenant of a key that never redeemed it: the TTL it was issued
// with decides.
func TestCreateNonceTTL(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID := unique("cl-consumer-ttl"), unique("cl-provider-ttl")
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", unique("liqo-ttl")}

	const ttl = 2 * time.Second
	text := strings.TrimSpace(cli(t, "", append([]string{"create", "nonce", "--remote-cluster-id", consumerID, "--nonce-ttl", ttl.String()}, onProvider...)...).ok(t).stdout)
	sec, err := providerEnv.client.CoreV1().Secrets("liqo-tenant-"+consumerID).Get(ctx, nonce.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ttl.String(), sec.Annotations[nonce.TTLAnnotation], "the nonce Secret records the TTL it was issued with")
	issued, err := nonce.FromSecret(sec)
	require.NoError(t, err)

	tn := cli(t, "", append([]string{"generate", "tenant", "--remote-cluster-id", providerID, "--nonce", text}, onConsumer...)...).ok(t)
	time.Sleep(time.Until(issued.IssuedAt.Add(ttl + 100*time.Millisecond)))

	// get nonce judges it by its own TTL, whatever --nonce-ttl says.
	r := cli(t, "", append([]string{"get", "nonce", "--remote-cluster-id", consumerID, "--nonce-ttl", "1h"}, onProvider...)...)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "the nonce for consumer "+consumerID+" expired at "+issued.IssuedAt.Add(ttl).UTC().Format(time.RFC3339))

	r = cli(t, tn.stdout, append([]string{"generate", "identity", "--remote-cluster-id", consumerID, "--nonce-ttl", "1h", "-f", "-"}, onProvider...)...)
	assert.Equal(t, exitError, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, nonce.ErrExpired.Error())
	assert.Contains(t, r.stderr, "the nonce expired before the Tenant came back; ask the provider for a new nonce: kubepact create nonce --remote-cluster-id "+consumerID)
	err = providerEnv.typed.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-" + consumerID, Name: consumerID}, &authv1beta1.Tenant{})
	assert.True(t, apierrors.IsNotFound(err), "no Tenant recorded: %v", err)
}

func TestUnauthenticateRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-inuse"), unique("cl-provider-inuse"), unique("liqo-inuse")
	cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)

	// A ResourceSlice identity beside the ControlPlane one.
	store := kube.NewIdentityStore(consumerEnv.typed)
	ids, err := store.List(ctx, "liqo-tenant-"+providerID)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	slice := ids[0].DeepCopy()
	slice.Name, slice.UID, slice.ResourceVersion = identity.ResourceSliceName("slice-a"), "", ""
	slice.Spec.Type = authv1beta1.ResourceSliceIdentityType
	slice.Status = authv1beta1.IdentityStatus{}
	_, err = store.Apply(ctx, slice)
	require.NoError(t, err)

	r := cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "kubepact: removing the Identity from the consumer: identity still in use")
	assert.Contains(t, r.stderr, "delete those ResourceSlices")

	require.NoError(t, store.Delete(ctx, slice.Namespace, slice.Name))
	cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...).ok(t)
}

// TestOfflineFlowStrict runs the offline flow with a strict consumer and a
// strict provider: the kubeconfig's key is the identity's own, found again
// by apply identity without being told.
func TestOfflineFlowStrict(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, keyNamespace := unique("cl-consumer-strict"), unique("cl-provider-strict"), unique("liqo-strict")
	dir := t.TempDir()
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", keyNamespace}
	run := func(words string, args ...string) result {
		t.Helper()
		return cli(t, "", append(strings.Fields(words), args...)...).ok(t)
	}

	text := strings.TrimSuffix(run("create nonce --remote-cluster-id "+consumerID, onProvider...).stdout, "\n")
	tenantFile := writeFile(t, dir, "tenant.yaml", run("generate tenant --strict --remote-cluster-id "+providerID+" --nonce "+text, onConsumer...).stdout)
	identityFile := writeFile(t, dir, "identity.yaml", run("generate identity --policy strict -f "+tenantFile, onProvider...).stdout)
	run("apply identity --remote-cluster-id "+providerID+" "+identityFile, onConsumer...)

	restCfg, _ := issuedConfig(t, ctx, providerID)
	requireLeastPrivilege(t, ctx, restCfg, "liqo-tenant-"+consumerID)
	clusterKey, err := kube.NewKeyStore(consumerEnv.client, keyNamespace).Get(ctx)
	require.NoError(t, err)
	idKey, err := kube.NewKeyring(consumerEnv.client, keyNamespace).Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	block, _ := pem.Decode(restCfg.CertData)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.True(t, keys.Equal(idKey.Key.Public(), cert.PublicKey), "the identity has its own key")
	require.False(t, keys.Equal(clusterKey.Public(), cert.PublicKey), "the cluster key is not a TLS key")
}

// TestInstallRoles: on a provider without the peer roles, authenticate
// binds nothing and says how to install them; install roles does, and the
// handshake then passes. Not parallel: the roles are the whole cluster's.
func TestInstallRoles(t *testing.T) {
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-roles"), unique("cl-provider-roles"), unique("liqo-roles")
	roles := providerEnv.client.RbacV1().ClusterRoles()
	require.NoError(t, roles.Delete(ctx, rbac.ControlPlaneClusterRoleName, metav1.DeleteOptions{}))
	t.Cleanup(func() { _ = rbac.Install(context.Background(), kube.NewRBAC(providerEnv.client)) })

	r := cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...)
	require.Equal(t, exitError, r.code, r.stderr)
	assert.Contains(t, r.stderr, "kubepact install roles")
	_, err := roles.Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "authenticate installs no role: %v", err)
	bindings, err := providerEnv.client.RbacV1().RoleBindings("liqo-tenant-"+consumerID).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, bindings.Items, "nothing bound")

	r = cli(t, "", "install", "roles", "--kubeconfig", providerEnv.kubeconfig).ok(t)
	for _, name := range rbac.PeerRoleNames() {
		assert.Contains(t, r.stdout, "ClusterRole "+name+" installed\n")
		_, err := roles.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
	}
	cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...).ok(t)
}

// TestTenantWithoutControllerIsDeletable writes Tenants where no controller
// runs, with authenticate --local and with the offline flow, then deletes
// each provider-side tenant namespace as kubectl delete namespace does: the
// Tenants carry no finalizer, which nothing would remove, so the namespaces
// go instead of hanging in Terminating.
func TestTenantWithoutControllerIsDeletable(t *testing.T) {
	t.Parallel()
	t.Run("authenticate --local", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		consumerID, providerID, namespace := unique("cl-consumer-nofin"), unique("cl-provider-nofin"), unique("liqo-nofin")
		start := time.Now()
		cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
		t.Logf("authenticate --local took %v", time.Since(start).Round(time.Millisecond))
		requireDeletable(t, ctx, consumerID)
	})
	t.Run("offline", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		consumerID, providerID := unique("cl-consumer-nofin-files"), unique("cl-provider-nofin-files")
		onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
		onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", unique("liqo-nofin-files")}
		text := strings.TrimSpace(cli(t, "", append([]string{"create", "nonce", "--remote-cluster-id", consumerID}, onProvider...)...).ok(t).stdout)
		r := cli(t, "", append([]string{"generate", "tenant", "--remote-cluster-id", providerID, "--nonce", text}, onConsumer...)...).ok(t)
		tenantFile := writeFile(t, t.TempDir(), "tenant.yaml", r.stdout)
		cli(t, "", append([]string{"apply", "tenant", tenantFile}, onProvider...)...).ok(t)
		cli(t, "", append([]string{"generate", "identity", "--remote-cluster-id", consumerID}, onProvider...)...).ok(t)
		requireDeletable(t, ctx, consumerID)
	})
}

// requireDeletable checks that the Tenant of consumerID on the provider
// carries no finalizer, then deletes its tenant namespace and waits, at
// most a minute, for it to be gone.
func requireDeletable(t *testing.T, ctx context.Context, consumerID string) {
	t.Helper()
	ns := clusterid.TenantNamespace(consumerID)
	tn, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, ns, consumerID)
	require.NoError(t, err)
	require.Empty(t, tn.Finalizers, "no controller would remove a finalizer")
	start := time.Now()
	require.NoError(t, providerEnv.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := providerEnv.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond, "namespace %s deleted", ns)
	t.Logf("kubectl delete namespace %s: gone in %v", ns, time.Since(start).Round(time.Millisecond))
}

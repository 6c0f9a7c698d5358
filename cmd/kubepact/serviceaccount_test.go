package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/saidentity"
)

// TestServiceAccountIdentityCLI runs the ServiceAccount identity commands
// between the test clusters: create on the provider, apply and refresh on
// the consumer, revoke on the provider, and a refresh that then fails and
// keeps the stored kubeconfig.
func TestServiceAccountIdentityCLI(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID := unique("sacli-consumer"), unique("sacli-provider")
	dir := t.TempDir()
	out := filepath.Join(dir, "secret.yaml")
	onProvider := []string{"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID}
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID}

	cli(t, "", append([]string{"create", "serviceaccount-identity", "--remote-cluster-id", consumerID, "--expiration", "15m", "--out", out}, onProvider...)...).ok(t)
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", info.Mode().Perm())
	}
	// Never overwritten.
	if r := cli(t, "", append([]string{"create", "serviceaccount-identity", "--remote-cluster-id", consumerID, "--out", out}, onProvider...)...); r.code != exitError {
		t.Fatalf("create over an existing file: exit %d", r.code)
	}

	r := cli(t, "", append([]string{"apply", "serviceaccount-identity", out}, onConsumer...)...).ok(t)
	if !strings.Contains(r.stdout, saidentity.SecretName(providerID)) {
		t.Fatalf("apply printed %q", r.stdout)
	}
	ns := clusterid.TenantNamespace(providerID)
	stored := func() []byte {
		s, err := consumerEnv.client.CoreV1().Secrets(ns).Get(ctx, saidentity.SecretName(providerID), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data[kubeconfig.SecretKey]
	}
	first := stored()
	cfg, err := kubeconfig.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server() != providerEnv.cluster.Host() || cfg.Namespace() != clusterid.TenantNamespace(consumerID) {
		t.Fatalf("stored %v", cfg)
	}

	cli(t, "", append([]string{"refresh", "serviceaccount-identity", "--remote-cluster-id", providerID}, onConsumer...)...).ok(t)
	second := stored()
	if bytes.Equal(first, second) {
		t.Fatal("refresh did not replace the token")
	}

	r = cli(t, "", append([]string{"revoke", "serviceaccount-identity", "--remote-cluster-id", consumerID}, onProvider...)...).ok(t)
	if _, err := providerEnv.client.CoreV1().ServiceAccounts(clusterid.TenantNamespace(consumerID)).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ServiceAccount after revoke: %v", err)
	}
	r = cli(t, "", append([]string{"refresh", "serviceaccount-identity", "--remote-cluster-id", providerID}, onConsumer...)...)
	if r.code != exitError || !strings.Contains(r.stderr, "refuses") {
		t.Fatalf("refresh after revoke: exit %d, stderr %q", r.code, r.stderr)
	}
	if !bytes.Equal(stored(), second) {
		t.Fatal("a failed refresh replaced the stored kubeconfig")
	}
	tok, err := kubeconfig.Parse(second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stderr, tok.BearerToken()) || strings.Contains(r.stdout, tok.BearerToken()) {
		t.Fatal("the CLI printed the token")
	}
}

// TestServiceAccountIdentityCLIRejects checks the usage errors of the
// commands, which reach no cluster.
func TestServiceAccountIdentityCLIRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := writeFile(t, dir, "junk.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"create", "serviceaccount-identity"}, exitUsage},
		{[]string{"create", "serviceaccount-identity", "--remote-cluster-id", "Bad_ID"}, exitUsage},
		{[]string{"create", "serviceaccount-identity", "--remote-cluster-id", "c1", "--expiration", "5m"}, exitUsage},
		{[]string{"create", "serviceaccount-identity", "--remote-cluster-id", "c1", "--expiration", "48h"}, exitUsage},
		{[]string{"create", "serviceaccount-identity", "--remote-cluster-id", "c1", "--as", "pem"}, exitUsage},
		{[]string{"revoke", "serviceaccount-identity"}, exitUsage},
		{[]string{"refresh", "serviceaccount-identity"}, exitUsage},
		{[]string{"refresh", "serviceaccount-identity", "--remote-cluster-id", "UPPER"}, exitUsage},
		{[]string{"apply", "serviceaccount-identity"}, exitUsage},
		{[]string{"apply", "serviceaccount-identity", junk, "--kubeconfig", consumerEnv.kubeconfig}, exitError},
	} {
		if r := cli(t, "", tc.args...); r.code != tc.code {
			t.Errorf("kubepact %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), r.code, tc.code, r.stderr)
		}
	}
}

// TestCreateServiceAccountIdentityAsKubeconfig prints a plain kubeconfig
// on standard output, which then works on the provider as the identity.
func TestCreateServiceAccountIdentityAsKubeconfig(t *testing.T) {
	t.Parallel()
	consumerID := unique("sacli-kc")
	r := cli(t, "", "create", "serviceaccount-identity", "--remote-cluster-id", consumerID, "--as", "kubeconfig",
		"--kubeconfig", providerEnv.kubeconfig, "--cluster-id", unique("sacli-p")).ok(t)
	cfg, err := kubeconfig.Parse([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := saidentity.ParseToken(cfg.BearerToken(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Lifetime() != saidentity.DefaultExpiration {
		t.Fatalf("lifetime %s, want the default", tok.Lifetime())
	}
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		t.Fatal(err)
	}
	user, _, err := reviewer.Review(testContext(t), cfg)
	if err != nil || user != saidentity.UserName(consumerID) {
		t.Fatalf("Review: %q, %v", user, err)
	}
}

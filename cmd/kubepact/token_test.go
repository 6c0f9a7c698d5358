package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/authtoken"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var tokenText = regexp.MustCompile(`^[0-9a-f]{128}\n$`)

// TestTokenFlow: the provider prints its token and serves; the consumer
// authenticates with the token and gets a least-privilege kubeconfig; a
// rotated token refuses the old one, which no output ever shows.
func TestTokenFlow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-token"), unique("cl-provider-token"), unique("liqo-token")
	providerArgs := []string{"--kubeconfig", providerEnv.kubeconfig, "-n", namespace}

	tok := cli(t, "", append([]string{"get", "token"}, providerArgs...)...).ok(t).stdout
	require.Regexp(t, tokenText, tok)
	assert.Equal(t, tok, cli(t, "", append([]string{"get", "token"}, providerArgs...)...).ok(t).stdout, "get token changed the token")

	addr, caFile, serveErr := startServe(t, ctx, append([]string{"--cluster-id", providerID}, providerArgs...)...)
	t.Cleanup(func() { assert.NotContains(t, serveErr.String(), strings.TrimSpace(tok)) })

	consumerArgs := func(token string) []string {
		return []string{"authenticate", "--auth-token", token, "--auth-url", "https://" + addr, "--auth-ca", caFile,
			"--kubeconfig", consumerEnv.kubeconfig, "-n", namespace, "--cluster-id", consumerID, "--remote-cluster-id", providerID}
	}
	r := cli(t, "", consumerArgs(strings.TrimSpace(tok))...).ok(t)
	assert.Contains(t, r.stdout, "Kubeconfig Secret liqo-tenant-"+providerID+"/kubeconfig-controlplane-"+providerID+"\n")
	assert.Contains(t, r.stdout, "  user:      "+consumerID+"\n")
	cfg, _ := issuedConfig(t, ctx, providerID)
	requireLeastPrivilege(t, ctx, cfg, "liqo-tenant-"+consumerID)
	remote, err := consumerEnv.client.CoreV1().Secrets(namespace).Get(ctx, authtoken.RemoteSecretName(providerID), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(authtoken.StatusEstablished), remote.Annotations[authtoken.StatusAnnotation])

	rotated := cli(t, "", append([]string{"get", "token", "--rotate"}, providerArgs...)...).ok(t).stdout
	require.Regexp(t, tokenText, rotated)
	require.NotEqual(t, tok, rotated)
	// A consumer that has no identity yet (here the provider cluster itself,
	// under another ID) is refused with the old token.
	old := cli(t, "", append(consumerArgs(strings.TrimSpace(tok)), "--kubeconfig", providerEnv.kubeconfig, "--cluster-id", unique("cl-consumer-late"))...)
	assert.Equal(t, exitError, old.code, "old token: %s", old.stderr)
	assert.Contains(t, old.stderr, "wrong token")
	assert.NotContains(t, old.stderr+old.stdout, strings.TrimSpace(tok))
	assert.NotContains(t, old.stderr, "deprecated")

	// --token, the old name of --auth-token, still sends the shared token
	// for one release, with a warning: the server refuses the old one.
	args := append(consumerArgs(strings.TrimSpace(tok)), "--kubeconfig", providerEnv.kubeconfig, "--cluster-id", unique("cl-consumer-late"))
	args[1] = "--token"
	old = cli(t, "", args...)
	assert.Equal(t, exitError, old.code, "old token under --token: %s", old.stderr)
	assert.Contains(t, old.stderr, "Flag --token has been deprecated, use --auth-token")
	assert.Contains(t, old.stderr, "wrong token")
	assert.NotContains(t, old.stderr+old.stdout, strings.TrimSpace(tok))
}

// TestTokenFlowUsage: the token flow's flags are checked before anything
// is reached, and a malformed token is never quoted.
func TestTokenFlowUsage(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("z", 128)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NoURL", []string{"--auth-token", secret, "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "--auth-url is required"},
		{"NoCA", []string{"--auth-token", secret, "--auth-url", "https://x", "--remote-cluster-id", "p"}, "--auth-ca is required"},
		{"NoToken", []string{"--auth-url", "https://x", "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "--auth-token is required"},
		{"TokenAndNoToken", []string{"--auth-token", secret, "--no-token", "--auth-url", "https://x", "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "exclude each other"},
		{"NoProvider", []string{"--auth-token", secret, "--auth-url", "https://x", "--auth-ca", "ca.pem"}, "--remote-cluster-id is required"},
		{"MalformedToken", []string{"--auth-token", secret, "--auth-url", "https://x", "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "--auth-token: malformed"},
		// The old name sets the same token, and warns.
		{"MalformedTokenOldName", []string{"--token", secret, "--auth-url", "https://x", "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "--auth-token: malformed"},
		{"OldNameAndNoToken", []string{"--token", secret, "--no-token", "--auth-url", "https://x", "--auth-ca", "ca.pem", "--remote-cluster-id", "p"}, "exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"authenticate"}, tc.args...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, secret)
			var usage *usageError
			_, err := cliErr(t, nil, append([]string{"authenticate"}, tc.args...)...)
			require.ErrorAs(t, err, &usage)
			if slices.Contains(tc.args, "--token") {
				assert.Contains(t, r.stderr, "Flag --token has been deprecated, use --auth-token")
			} else {
				assert.NotContains(t, r.stderr, "deprecated")
			}
		})
	}
	// The help names --auth-token and hides the old name.
	help := cli(t, "", "authenticate", "--help").ok(t).stdout
	assert.Contains(t, help, "--auth-token string")
	assert.NotContains(t, help, "--token string")
}

// TestTokenFlowAllowEmpty: a server run with --allow-empty-token says so
// loudly and serves a consumer that sends no token.
func TestTokenFlowAllowEmpty(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-open"), unique("cl-provider-open"), unique("liqo-open")
	addr, caFile, serveErr := startServe(t, ctx, "--kubeconfig", providerEnv.kubeconfig, "-n", namespace, "--cluster-id", providerID, "--allow-empty-token")
	assert.Contains(t, serveErr.String(), "WARNING: --allow-empty-token")
	assert.Contains(t, serveErr.String(), "WARNING: authentication is disabled")
	r := cli(t, "", "authenticate", "--no-token", "--auth-url", "https://"+addr, "--auth-ca", caFile,
		"--kubeconfig", consumerEnv.kubeconfig, "-n", namespace, "--cluster-id", consumerID, "--remote-cluster-id", providerID).ok(t)
	assert.Contains(t, r.stdout, "  user:      "+consumerID+"\n")
	_, err := providerEnv.client.CoreV1().Secrets(namespace).Get(ctx, authtoken.SecretName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "serve --allow-empty-token made a token: %v", err)
}

// startServe runs kubepact serve with args on a free loopback port until
// the test ends, and returns its address, a file holding its CA and its
// standard error.
func startServe(t *testing.T, ctx context.Context, args ...string) (string, string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	serveCtx, stop := context.WithCancel(ctx)
	var serveOut, serveErr syncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(serveCtx, append([]string{"serve", "--listen", addr, "--hosts", "127.0.0.1"}, args...),
			strings.NewReader(""), &serveOut, &serveErr)
	}()
	t.Cleanup(func() {
		stop()
		assert.Equal(t, exitOK, <-served, "serve: %s", serveErr.String())
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, time.Minute, 50*time.Millisecond, "serve did not listen: %s", serveErr.String())
	namespace := ""
	for i, a := range args {
		if a == "-n" {
			namespace = args[i+1]
		}
	}
	serving, err := providerEnv.client.CoreV1().Secrets(namespace).Get(ctx, defaultServingSecret, metav1.GetOptions{})
	require.NoError(t, err)
	return addr, writeFile(t, t.TempDir(), "auth-ca.pem", string(serving.Data["ca.crt"])), &serveErr
}

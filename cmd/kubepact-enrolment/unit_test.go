package main

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	o, err := parse(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "", o.kubeconfig)
	assert.Equal(t, ":8443", o.bindAddress)
	assert.Equal(t, "/etc/kubepact-enrolment/tls/tls.crt", o.certFile)
	assert.Equal(t, "/etc/kubepact-enrolment/tls/tls.key", o.keyFile)
	assert.Equal(t, 1.0, o.rate)
	assert.Equal(t, 5, o.burst)
	assert.False(t, o.printVersion)

	o, err = parse([]string{"--kubeconfig=k", "--bind-address=127.0.0.1:9443", "--tls-cert-file=c", "--tls-key-file=k2",
		"--rate=2.5", "--burst=7", "--zap-log-level=debug"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, options{kubeconfig: "k", bindAddress: "127.0.0.1:9443", certFile: "c", keyFile: "k2", rate: 2.5, burst: 7},
		options{kubeconfig: o.kubeconfig, bindAddress: o.bindAddress, certFile: o.certFile, keyFile: o.keyFile, rate: o.rate, burst: o.burst})
	assert.NotNil(t, o.zap.Level, "the zap flags are bound")
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--rate=0"}, {"--rate=-1"}, {"--rate=NaN"}, {"--burst=0"}, {"--tls-cert-file="}, {"--tls-key-file="},
		{"--no-such-flag"}, {"extra"},
	} {
		_, err := parse(args, &bytes.Buffer{})
		assert.ErrorIs(t, err, errUsage, args)
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"--help"}, nil, &stdout, &stderr)
	require.ErrorIs(t, err, pflag.ErrHelp)
	for _, f := range []string{"--kubeconfig", "--bind-address", "--tls-cert-file", "--tls-key-file", "--rate", "--burst", "--version", "--zap-log-level"} {
		assert.Contains(t, stderr.String(), f)
	}

	stdout.Reset()
	require.NoError(t, run(t.Context(), []string{"--version"}, nil, &stdout, &bytes.Buffer{}))
	assert.Equal(t, "kubepact-enrolment "+Version()+"\n", stdout.String())
}

// TestServedGrant: a grant is served only while the provider's controller
// says it is in force for the object as it is now.
func TestServedGrant(t *testing.T) {
	t.Parallel()
	grant := &peeringv1alpha1.Grant{ProviderID: "provider-1", ConsumerID: "consumer-1"}
	ready := func(status metav1.ConditionStatus, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: peeringv1alpha1.ConditionReady, Status: status, ObservedGeneration: gen}}
	}
	base := func() *peeringv1alpha1.AuthorizedConsumer {
		return &peeringv1alpha1.AuthorizedConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: "consumer-1", Generation: 3},
			Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: "consumer-1"},
			Status: peeringv1alpha1.AuthorizedConsumerStatus{
				ObservedGeneration: 3, Conditions: ready(metav1.ConditionTrue, 3), Grant: grant,
			},
		}
	}
	assert.Same(t, grant, servedGrant(base(), "consumer-1"))
	noGen := base()
	noGen.Status.Conditions = ready(metav1.ConditionTrue, 0)
	assert.Same(t, grant, servedGrant(noGen, "consumer-1"), "a condition without observedGeneration goes by the status's")

	for name, mutate := range map[string]func(*peeringv1alpha1.AuthorizedConsumer){
		"no grant":                      func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Status.Grant = nil },
		"Ready False":                   func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Status.Conditions = ready(metav1.ConditionFalse, 3) },
		"Ready Unknown":                 func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Status.Conditions = ready(metav1.ConditionUnknown, 3) },
		"no condition":                  func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Status.Conditions = nil },
		"status of an older generation": func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Generation = 4 },
		"Ready of an older generation":  func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Status.Conditions = ready(metav1.ConditionTrue, 2) },
		"being deleted":                 func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
		"grant for another consumer": func(ac *peeringv1alpha1.AuthorizedConsumer) {
			ac.Status.Grant = &peeringv1alpha1.Grant{ConsumerID: "consumer-2"}
		},
		"spec names another consumer": func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Spec.ClusterID = "consumer-2" },
		"Reconciling only, no Ready": func(ac *peeringv1alpha1.AuthorizedConsumer) {
			ac.Status.Conditions[0].Type = peeringv1alpha1.ConditionReconciling
		},
		"object named another consumer": func(ac *peeringv1alpha1.AuthorizedConsumer) { ac.Name = "consumer-2" },
	} {
		ac := base()
		mutate(ac)
		assert.Nil(t, servedGrant(ac, "consumer-1"), name)
	}
}

// writePair writes a serving key pair issued by enrolment into dir's
// tls.crt and tls.key, and returns their paths.
func writePair(t *testing.T, dir string, enrolment *keys.PrivateKey, mtime time.Time) (string, string) {
	t.Helper()
	serving, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	certPEM, err := enrol.ServingCertificate(nil, enrolment, "provider-1", serving.Public(), nil, time.Now(), time.Hour)
	require.NoError(t, err)
	keyPEM, err := keys.MarshalPrivateKey(serving)
	require.NoError(t, err)
	// A fixed size, so that only the mtime tells one pair from the next
	// (the serial number's length varies): what follows the PEM block is
	// ignored.
	require.Less(t, len(certPEM), 2048)
	certPEM = append(certPEM, bytes.Repeat([]byte("\n"), 2048-len(certPEM))...)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for name, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		require.NoError(t, os.WriteFile(name, data, 0o600))
		require.NoError(t, os.Chtimes(name, mtime, mtime))
	}
	return certFile, keyFile
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func issuedBy(t *testing.T, c *tls.Certificate, k *keys.PrivateKey) bool {
	t.Helper()
	require.NotNil(t, c)
	return enrol.VerifyServingCertificate(c.Certificate[0], []crypto.PublicKey{k.Public()}, time.Now()) == nil
}

func TestKeyPairReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, second, third := generateKey(t), generateKey(t), generateKey(t)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	certFile, keyFile := writePair(t, dir, first, mtime)
	clock := &fakeClock{t: time.Now()}
	k := newKeyPair(certFile, keyFile, clock.now, logr.Discard())

	c, err := k.get()
	require.NoError(t, err)
	assert.True(t, issuedBy(t, c, first))
	assert.True(t, k.loaded())

	// Renewed: new files, a new mtime. Seen after statEvery, not before.
	writePair(t, dir, second, mtime.Add(time.Minute))
	c, _ = k.get()
	assert.True(t, issuedBy(t, c, first), "files are looked at once a second at most")
	clock.step(statEvery)
	c, _ = k.get()
	assert.True(t, issuedBy(t, c, second), "a changed file is re-read")

	// Replaced with the same mtime and size: re-read within reloadEvery.
	writePair(t, dir, third, mtime.Add(time.Minute))
	clock.step(statEvery)
	c, _ = k.get()
	assert.True(t, issuedBy(t, c, second), "an unchanged stamp is not re-read before reloadEvery")
	clock.step(reloadEvery)
	c, _ = k.get()
	assert.True(t, issuedBy(t, c, third), "re-read every reloadEvery")

	// Broken: the last pair stays.
	require.NoError(t, os.WriteFile(certFile, []byte("not a certificate"), 0o600))
	clock.step(reloadEvery)
	c, err = k.get()
	require.NoError(t, err)
	assert.True(t, issuedBy(t, c, third), "a pair that does not load leaves the last one")
}

func TestKeyPairMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := &fakeClock{t: time.Now()}
	k := newKeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), clock.now, logr.Discard())
	_, err := k.get()
	require.ErrorIs(t, err, errNoKeyPair)
	assert.False(t, k.loaded())

	enrolment := generateKey(t)
	writePair(t, dir, enrolment, time.Now())
	_, err = k.get()
	require.ErrorIs(t, err, errNoKeyPair, "not looked at again within statEvery")
	clock.step(statEvery)
	c, err := k.get()
	require.NoError(t, err)
	assert.True(t, issuedBy(t, c, enrolment))
	assert.True(t, k.loaded())
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	var synced, loaded bool
	grants := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "grants", http.StatusTeapot) })
	h := routes(grants, func() bool { return synced }, func() bool { return loaded })
	get := func(path string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code
	}
	assert.Equal(t, http.StatusOK, get("/healthz"))
	assert.Equal(t, http.StatusServiceUnavailable, get("/readyz"))
	synced = true
	assert.Equal(t, http.StatusServiceUnavailable, get("/readyz"), "synced, no key pair")
	loaded = true
	assert.Equal(t, http.StatusOK, get("/readyz"))
	assert.Equal(t, http.StatusTeapot, get("/v1alpha1/grants/x"))
	assert.Equal(t, http.StatusTeapot, get("/healthz/x"))
	assert.Equal(t, http.StatusTeapot, get("/metrics"))
}

func generateKey(t *testing.T) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	return k
}

// TestRunFailsToBind: an address in use is a failure, reported at once.
func TestRunFailsToBind(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	certFile, keyFile := writePair(t, t.TempDir(), generateKey(t), time.Now())
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"--bind-address=" + l.Addr().String(), "--tls-cert-file=" + certFile, "--tls-key-file=" + keyFile},
			&rest.Config{Host: "https://127.0.0.1:1"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.NotErrorIs(t, err, errUsage)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
}

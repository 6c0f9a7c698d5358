package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
)

// TestTwoIndependentClusters starts two clusters at once and checks that each authenticates
// client certificates against its own CA only, enforces RBAC, and issues client certificates
// through the CSR API.
func TestTwoIndependentClusters(t *testing.T) {
	binDir, err := EnsureBinaries(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	clusters := make([]*Cluster, 2)
	errs := make([]error, len(clusters))
	took := make([]time.Duration, len(clusters))
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() {
			begin := time.Now()
			clusters[i], errs[i] = Start(t.Context(), Options{BinDir: binDir, Name: fmt.Sprintf("%s-%d", t.Name(), i)})
			took[i] = time.Since(begin)
		})
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			t.Cleanup(func() {
				begin := time.Now()
				if err := c.Stop(); err != nil {
					t.Error(err)
				}
				t.Logf("cluster %s stopped in %s", c.name, time.Since(begin).Round(time.Millisecond))
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range clusters {
		t.Logf("cluster %s at %s: start to ready %s, memory %s",
			c.name, c.Host(), took[i].Round(time.Millisecond), memoryUsage(c))
	}

	if bytes.Equal(clusters[0].CA(), clusters[1].CA()) {
		t.Fatal("the two clusters have the same CA")
	}

	for i, c := range clusters {
		other := clusters[1-i]
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCluster(t, c, other)
		})
	}
}

// checkCluster checks one cluster of a pair; other is the second one.
func checkCluster(t *testing.T, c, other *Cluster) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// The admin kubeconfig works and the API server is ready.
	adminConfig, err := clientcmd.RESTConfigFromKubeConfig(c.AdminKubeconfig())
	if err != nil {
		t.Fatalf("loading admin kubeconfig: %v", err)
	}
	admin := kubernetes.NewForConfigOrDie(adminConfig)
	readyz, err := admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(readyz) != "ok" {
		t.Fatalf("/readyz = %q, %v; want ok", readyz, err)
	}

	// Alice gets a client certificate through the CSR API.
	aliceKey, aliceCert := issueThroughCSR(ctx, t, admin, "alice")
	leaf := parseCert(t, aliceCert)
	if leaf.Subject.CommonName != "alice" {
		t.Errorf("issued certificate is for %q, want alice", leaf.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA()) {
		t.Fatal("CA() holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:     roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		t.Errorf("issued certificate does not chain to the cluster CA: %v", err)
	}

	// The certificate authenticates alice, whom RBAC allows nothing.
	alice := kubernetes.NewForConfigOrDie(certConfig(c, aliceCert, aliceKey))
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self-subject review as alice: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "alice" {
		t.Errorf("authenticated as %q, want alice", got)
	}
	_, err = alice.CoreV1().Secrets(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice listing secrets in default: got %v, want Forbidden", err)
	}

	// The other cluster does not trust this cluster's CA.
	stranger := kubernetes.NewForConfigOrDie(certConfig(other, aliceCert, aliceKey))
	_, err = stranger.CoreV1().Secrets(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("alice's certificate on the other cluster: got %v, want Unauthorized", err)
	}

	// The second client CA authenticates clients, here and only here, and signs nothing else.
	caPEM, caKey := c.SecondClientCA()
	clientCA := parseCert(t, caPEM)
	if bytes.Equal(caPEM, c.CA()) {
		t.Fatal("the second client CA is the cluster CA")
	}
	if otherPEM, _ := other.SecondClientCA(); bytes.Equal(caPEM, otherPEM) {
		t.Fatal("the two clusters have the same second client CA")
	}
	if err := leaf.CheckSignatureFrom(clientCA); err == nil {
		t.Error("the second client CA signed a certificate issued through the CSR API")
	}
	bobKey, bobCert := signClientCert(t, clientCA, caKey, "bob", "liqo.io")
	bob := kubernetes.NewForConfigOrDie(certConfig(c, bobCert, bobKey))
	review, err = bob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self-subject review as bob, signed by the second client CA: %v", err)
	}
	if got := review.Status.UserInfo; got.Username != "bob" || !slices.Contains(got.Groups, "liqo.io") {
		t.Errorf("authenticated as %q in %q, want bob in liqo.io", got.Username, got.Groups)
	}
	strangerBob := kubernetes.NewForConfigOrDie(certConfig(other, bobCert, bobKey))
	_, err = strangerBob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("bob's certificate on the other cluster: got %v, want Unauthorized", err)
	}
}

// signClientCert issues a client certificate for user in groups with a new Ed25519 key, signed
// by ca. It returns the PEM-encoded key and certificate.
func signClientCert(t *testing.T, ca *x509.Certificate, caKey crypto.Signer, user string, groups ...string) (keyPEM, certPEM []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// issueThroughCSR creates a CSR for user with a new Ed25519 key, approves it as admin, and waits
// with a watch for the controller-manager to issue the certificate. It returns the PEM-encoded
// key and certificate.
func issueThroughCSR(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string) (keyPEM, certPEM []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: user},
	}, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})

	csrs := admin.CertificatesV1().CertificateSigningRequests()
	begin := time.Now()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CSR: %v", err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:    certificatesv1.CertificateApproved,
		Status:  corev1.ConditionTrue,
		Reason:  "TestApproval",
		Message: "approved by the testcluster test",
	})
	approved, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("approving CSR: %v", err)
	}
	approvedAt := time.Now()

	w, err := csrs.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", csr.Name).String(),
		ResourceVersion: approved.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watching CSR: %v", err)
	}
	event, err := watchtools.UntilWithoutRetry(ctx, w, func(event watch.Event) (bool, error) {
		csr, ok := event.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return false, fmt.Errorf("unexpected watch event %s %T", event.Type, event.Object)
		}
		for _, cond := range csr.Status.Conditions {
			if cond.Type == certificatesv1.CertificateFailed && cond.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("CSR failed: %s: %s", cond.Reason, cond.Message)
			}
		}
		return len(csr.Status.Certificate) > 0, nil
	})
	if err != nil {
		t.Fatalf("waiting for the certificate of CSR %s: %v", csr.Name, err)
	}
	t.Logf("CSR %s: issued %s after creation, %s after approval", csr.Name,
		time.Since(begin).Round(time.Millisecond), time.Since(approvedAt).Round(time.Millisecond))
	return keyPEM, event.Object.(*certificatesv1.CertificateSigningRequest).Status.Certificate
}

// TestStartT checks the convenience wrapper, and that stopping leaves no process or file behind.
func TestStartT(t *testing.T) {
	var (
		dir  string
		pids []int
	)
	t.Run("cluster", func(t *testing.T) {
		c := StartT(t)
		dir = c.Dir()
		for _, p := range c.components {
			pids = append(pids, p.cmd.Process.Pid)
		}
		cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
		ns, err := cs.CoreV1().Namespaces().Get(t.Context(), metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting kube-system: %v", err)
		}
		t.Logf("kube-system created %s", ns.CreationTimestamp)
	})
	if len(pids) != 3 {
		t.Fatalf("cluster had %d processes, want 3", len(pids))
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still exists after cleanup (stat: %v)", dir, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after cleanup (kill 0: %v)", pid, err)
		}
	}
}

// certConfig returns a client configuration for c that authenticates with the given certificate.
func certConfig(c *Cluster, certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: c.Host(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.CA(),
			CertData: certPEM,
			KeyData:  keyPEM,
		},
	}
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("no certificate in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// memoryUsage describes the resident memory of the cluster's components, from /proc.
func memoryUsage(c *Cluster) string {
	var (
		parts []string
		total int
	)
	for _, p := range c.components {
		kb, err := residentKB(p.cmd.Process.Pid)
		if err != nil {
			return fmt.Sprintf("unknown (%v)", err)
		}
		total += kb
		parts = append(parts, fmt.Sprintf("%s %d MB", p.name, kb/1024))
	}
	return fmt.Sprintf("%d MB (%s)", total/1024, strings.Join(parts, ", "))
}

// residentKB reads VmRSS of a process from /proc, in KiB.
func residentKB(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS for process %d", pid)
}

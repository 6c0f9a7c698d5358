package liqo

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/utils/getters"
	liqokubeconfig "github.com/liqotech/liqo/pkg/utils/kubeconfig"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// TestGitOpsPeeringReadByLiqo peers two fresh clusters from Git, both
// running kubepact-controller as config/ ships it, as its ServiceAccount:
// the only peering step is applying the two manifests kubepact generate
// prints, each from its own cluster's public records (the TrustedProvider
// from the provider's, the AuthorizedConsumer from the consumer's), as a
// GitOps tool applies them. The provider's enrolment endpoint is served as
// TestPeeringFromGitAsShipped serves it: enrolhttp's handler, in the
// test's process, with the certificate the provider's controller keeps,
// at a loopback URL. Once both objects are Ready, Liqo's own getters find
// the consumer's ControlPlane Identity and its kubeconfig Secret, and that
// kubeconfig is the consumer on the provider (CN = its cluster ID, O =
// liqo.io) with what Liqo's chart grants a consumer.
//
// Then the real liqoctl, from a third cluster that records the consumer's
// ID with a cluster key of its own, runs the declarative handshake
// against the provider, and is refused: the provider's Tenant gets a
// Warning NotCommitted, no certificate is issued for the third cluster's
// key, liqoctl fails, and the third cluster holds no kubeconfig for the
// provider; the committed consumer stays peered. (liqoctl overwrites the
// consumer's Tenant, and reads the status the committed consumer's
// enrolment left on it as filled: it writes an Identity with that
// certificate, which the third cluster's controller refuses, as it is
// not for its key.)
func TestGitOpsPeeringReadByLiqo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sides := startKubepactSides(ctx, t, "gitops-provider", "gitops-consumer", "gitops-impostor")
	p, c, impostor := sides[0], sides[1], sides[2]
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return startKubepact(gctx, p) })
	g.Go(func() error { return startKubepact(gctx, c) })
	require.NoError(t, g.Wait())
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range sides {
				t.Logf("%s cluster:\n%s", s.name, describe(s))
			}
		}
	})
	pc, cc := peeringClient(t, p), peeringClient(t, c)

	endpoint := serveEnrolment(ctx, t, p, pc)

	// What each side's administrators commit, printed from their own
	// cluster only.
	tpYAML, err := kubepactCLI(ctx, t, "generate", "trusted-provider", "--kubeconfig", p.kubeconfig, "--enrolment-url", endpoint)
	require.NoError(t, err, "generate trusted-provider:\n%s", tpYAML)
	acYAML, err := kubepactCLI(ctx, t, "generate", "authorized-consumer", "--kubeconfig", c.kubeconfig, "--remote-cluster-id", p.id)
	require.NoError(t, err, "generate authorized-consumer:\n%s", acYAML)

	ac := applyManifest(ctx, t, p, acYAML, peeringv1alpha1.AuthorizedConsumerKind)
	require.Equal(t, c.id, ac.GetName(), "the AuthorizedConsumer names the consumer")
	tp := applyManifest(ctx, t, c, tpYAML, peeringv1alpha1.TrustedProviderKind)
	require.Equal(t, p.id, tp.GetName(), "the TrustedProvider names the provider")

	require.NoError(t, eventually(ctx, 2*time.Minute, func(ctx context.Context) error {
		var o peeringv1alpha1.AuthorizedConsumer
		if err := pc.Get(ctx, client.ObjectKey{Name: c.id}, &o); err != nil {
			return err
		}
		return ready(o.Generation, o.Status.ObservedGeneration, o.Status.Conditions)
	}), "the AuthorizedConsumer Ready")
	require.NoError(t, eventually(ctx, 2*time.Minute, func(ctx context.Context) error {
		var o peeringv1alpha1.TrustedProvider
		if err := cc.Get(ctx, client.ObjectKey{Name: p.id}, &o); err != nil {
			return err
		}
		return ready(o.Generation, o.Status.ObservedGeneration, o.Status.Conditions)
	}), "the TrustedProvider Ready (it asks every 30 s)")

	t.Run("Liqo's getters read the peering", func(t *testing.T) {
		// The ControlPlane Identity and its kubeconfig Secret, as Liqo's
		// components on the consumer find them.
		id, err := getters.GetControlPlaneIdentityByClusterID(ctx, c.client, liqov1beta1.ClusterID(p.id))
		require.NoError(t, err)
		require.Equal(t, liqoauthv1beta1.ControlPlaneIdentityType, id.Spec.Type)
		require.Equal(t, liqov1beta1.ClusterID(p.id), id.Spec.ClusterID)
		secret, err := getters.GetKubeconfigSecretFromIdentity(ctx, c.client, id)
		require.NoError(t, err)
		byID, err := getters.GetControlPlaneKubeconfigSecretByClusterID(ctx, c.client, liqov1beta1.ClusterID(p.id))
		require.NoError(t, err)
		require.Equal(t, client.ObjectKeyFromObject(secret), client.ObjectKeyFromObject(byID), "both of Liqo's ways find the same Secret")
		cfg, err := liqokubeconfig.BuildConfigFromSecret(secret)
		require.NoError(t, err)

		// Liqo's ControlPlane certificate: CN = the consumer's ID, O = liqo.io.
		user := requireUser(ctx, t, cfg)
		require.Equal(t, c.id, user.Username)
		require.Contains(t, user.Groups, "liqo.io")
		// And what Liqo's chart grants a consumer, as TestInterop checks it.
		requireControlPlane(ctx, t, c, p)
	})

	t.Run("liqoctl for the committed ID from another cluster key is refused", func(t *testing.T) {
		// A third cluster records the consumer's ID, with its own cluster
		// key: the key the AuthorizedConsumer does not commit.
		require.NoError(t, startKubepact(ctx, impostor, "--cluster-id="+c.id))
		require.Equal(t, c.id, impostor.id)
		out, err := liqoctlErr(ctx, "authenticate", "--kubeconfig", impostor.kubeconfig, "--remote-kubeconfig", p.kubeconfig, "--timeout", "30s")
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "liqoctl authenticate with an uncommitted key:\n%s", out)
		t.Logf("liqoctl authenticate, refused:\n%s", out)

		// The provider said why, on the Tenant.
		ns := tenantNamespace(ctx, t, p, c.id)
		require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
			events, err := p.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Tenant,type=Warning,reason=" + contract.ReasonNotCommitted})
			if err != nil {
				return err
			}
			if len(events.Items) == 0 {
				return fmt.Errorf("no Warning %s on a Tenant in %s", contract.ReasonNotCommitted, ns)
			}
			return nil
		}), "a Warning %s on the Tenant", contract.ReasonNotCommitted)

		// Nothing granted: the provider issued no certificate for the
		// impostor's key, and the impostor holds no kubeconfig for the
		// provider, as Liqo's getters look for one.
		own, err := kube.NewPublicKeyRecord(impostor.admin, keys.DefaultNamespace).Get(ctx)
		require.NoError(t, err)
		csrs, err := p.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		issued := 0
		for _, csr := range csrs.Items {
			if len(csr.Status.Certificate) == 0 {
				continue
			}
			issued++
			require.False(t, keys.Equal(own, certificateKey(t, csr.Status.Certificate)), "CSR %s issued a certificate for the impostor's key", csr.Name)
		}
		require.NotZero(t, issued, "the provider issued the committed consumer's certificate through its CSR API")
		var tenants liqoauthv1beta1.TenantList
		require.NoError(t, p.client.List(ctx, &tenants))
		for _, tn := range tenants.Items {
			if tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0 {
				require.False(t, keys.Equal(own, certificateKey(t, tn.Status.AuthParams.SignedCRT)), "Tenant %s hands out a certificate for the impostor's key", tn.Name)
			}
		}
		_, err = getters.GetControlPlaneKubeconfigSecretByClusterID(ctx, impostor.client, liqov1beta1.ClusterID(p.id))
		require.True(t, apierrors.IsNotFound(err), "the impostor's ControlPlane kubeconfig: %v, want not found", err)

		// The committed consumer is still the one peered: its
		// AuthorizedConsumer Ready, its kubeconfig the consumer with what
		// Liqo's chart grants it.
		var o peeringv1alpha1.AuthorizedConsumer
		require.NoError(t, pc.Get(ctx, client.ObjectKey{Name: c.id}, &o))
		require.NoError(t, ready(o.Generation, o.Status.ObservedGeneration, o.Status.Conditions), "the AuthorizedConsumer after the refusal")
		requireControlPlane(ctx, t, c, p)
	})
}

// startKubepactSides starts a fresh cluster per name, as the suite starts
// its own (the peer roles left to config/), and connects a side to each,
// each with a directory of its own. Nothing runs on them yet; everything
// stops when t ends.
func startKubepactSides(ctx context.Context, t *testing.T, names ...string) []*side {
	t.Helper()
	clusters, err := testcluster.StartAllWith(ctx, testcluster.Options{
		SigningDuration: certificateLifetime,
		NoPeerRoles:     true,
	}, names...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	dir := t.TempDir()
	sides := make([]*side, len(names))
	for i, name := range names {
		s := &side{name: name, cluster: clusters[i]}
		sides[i] = s
		t.Cleanup(func() {
			if t.Failed() {
				for _, p := range s.procs {
					t.Logf("--- %s/%s, last lines:\n%s", s.name, p.name, p.tail(60))
				}
			}
			s.stop()
		})
		// startKubepact writes the controller's kubeconfig beside the
		// admin one: a directory per side.
		sdir := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(sdir, 0o700))
		require.NoError(t, s.connect(sdir))
	}
	return sides
}

// peeringClient is a client of s that reads the peering.kubepact.io types.
func peeringClient(t *testing.T, s *side) client.Client {
	t.Helper()
	sch := runtime.NewScheme()
	require.NoError(t, peeringv1alpha1.AddToScheme(sch))
	cl, err := client.New(s.cluster.AdminConfig(), client.Options{Scheme: sch})
	require.NoError(t, err)
	return cl
}

// serveEnrolment serves p's enrolment endpoint as
// TestPeeringFromGitAsShipped does, and returns its URL: enrolhttp's
// handler with the certificate p's controller keeps in
// kubepact-system/kubepact-enrolment-tls, serving the grant of an
// AuthorizedConsumer while it is Ready for its generation.
func serveEnrolment(ctx context.Context, t *testing.T, p *side, pc client.Client) string {
	t.Helper()
	var serving *corev1.Secret
	require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		serving, err = p.admin.CoreV1().Secrets("kubepact-system").Get(ctx, kube.EnrolmentTLSSecretName, metav1.GetOptions{})
		return err
	}), "the enrolment endpoint's certificate")
	pair, err := tls.X509KeyPair(serving.Data[corev1.TLSCertKey], serving.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(enrolhttp.NewHandler(func(id string) *peeringv1alpha1.Grant {
		var ac peeringv1alpha1.AuthorizedConsumer
		if err := pc.Get(ctx, client.ObjectKey{Name: id}, &ac); err != nil ||
			!meta.IsStatusConditionTrue(ac.Status.Conditions, peeringv1alpha1.ConditionReady) || ac.Status.ObservedGeneration != ac.Generation {
			return nil
		}
		return ac.Status.Grant
	}, enrolhttp.Limits{PerClient: 100, Burst: 100}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// applyManifest applies the one object of kubepact generate's output out
// to s, as kubectl apply --server-side does, checks that it is of kind,
// and returns it.
func applyManifest(ctx context.Context, t *testing.T, s *side, out, kind string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(out), &u.Object), "%s", out)
	require.Equal(t, peeringv1alpha1.SchemeGroupVersion.String(), u.GetAPIVersion())
	require.Equal(t, kind, u.GetKind())
	require.Empty(t, u.Object["status"], "the manifest carries no status")
	require.NoError(t, s.client.Patch(ctx, u, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership))
	return u
}

// ready is nil once conditions say Ready for generation, as kstatus reads
// them: Ready True, neither Reconciling nor Stalled True, about the
// object's current generation.
func ready(generation, observed int64, conditions []metav1.Condition) error {
	var errs []error
	if observed != generation {
		errs = append(errs, fmt.Errorf("observedGeneration %d, generation %d", observed, generation))
	}
	if !meta.IsStatusConditionTrue(conditions, peeringv1alpha1.ConditionReady) {
		errs = append(errs, fmt.Errorf("not Ready: %s", conditionsLine(conditions)))
	}
	for _, c := range []string{peeringv1alpha1.ConditionReconciling, peeringv1alpha1.ConditionStalled} {
		if meta.IsStatusConditionTrue(conditions, c) {
			errs = append(errs, fmt.Errorf("%s: %s", c, conditionsLine(conditions)))
		}
	}
	return errors.Join(errs...)
}

func conditionsLine(conditions []metav1.Condition) string {
	var b strings.Builder
	for _, c := range conditions {
		fmt.Fprintf(&b, "%s=%s (%s: %s) ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// certificateKey returns the public key of the PEM certificate b.
func certificateKey(t *testing.T, b []byte) crypto.PublicKey {
	t.Helper()
	block, _ := pem.Decode(b)
	require.NotNil(t, block, "a PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert.PublicKey
}

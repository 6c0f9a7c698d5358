package kubepact_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

const (
	providerID = "cl-provider"
	consumerID = "cl-consumer"
)

type pair struct {
	clock            *clocktesting.FakeClock
	providerCluster  *memory.Cluster
	consumerCluster  *memory.Cluster
	provider         *kubepact.Provider
	consumer         *kubepact.Consumer
	providerStepsLog []step.Name
}

func newPair(t testing.TB) *pair {
	t.Helper()
	return newPairWith(t, offloaded)
}

// newPairWith is newPair with the provider's SliceNamespaces.
func newPairWith(t testing.TB, sliceNamespaces func(consumerID string) []string) *pair {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	require.NoError(t, cc.Reach(pc)) // the consumer confirms Identities online
	p := &pair{clock: clk, providerCluster: pc, consumerCluster: cc}
	p.provider, err = provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk, SliceNamespaces: sliceNamespaces})
	require.NoError(t, err)
	p.consumer, err = consumer.New(consumerID, cc.ConsumerPorts(), &consumer.Options{Clock: clk})
	require.NoError(t, err)
	return p
}

// writes counts every write on both clusters.
func (p *pair) writes() int {
	n := 0
	for _, c := range []*memory.Cluster{p.providerCluster, p.consumerCluster} {
		n += c.Namespaces.Writes() + c.Tenants.Writes() + c.Identities.Writes() + c.Secrets.Writes() +
			c.RBAC.ClusterRoles.Writes() + c.RBAC.RoleBindings.Writes() + c.Signer.Signed()
	}
	return n
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)

	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, &kubepact.AuthenticateOptions{ProxyURL: "http://proxy.example:3128"})
	require.NoError(t, err)

	// The kubeconfig stored in the Secret authenticates as the consumer,
	// with a certificate from the provider's CA.
	secret, ok := p.consumerCluster.Secrets.Get("liqo-tenant-cl-provider", "kubeconfig-controlplane-cl-provider")
	require.True(t, ok)
	cfg, err := kubeconfig.Parse(secret.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	require.Equal(t, "https://provider.example:6443", cfg.Server())
	require.Equal(t, "liqo-tenant-cl-consumer", cfg.Namespace())
	require.Equal(t, "http://proxy.example:3128", cfg.ProxyURL())
	cert, err := cfg.ClientCertificate()
	require.NoError(t, err)
	require.Equal(t, consumerID, cert.Subject.CommonName)
	require.Equal(t, []string{"liqo.io"}, cert.Subject.Organization)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.providerCluster.Signer.CA.Certificate()))
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: p.clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	// The provider is kubepact's: the identity has a key of its own, and
	// the cluster key stays home.
	key, err := p.consumerCluster.Keys.Get(ctx)
	require.NoError(t, err)
	require.False(t, keys.Equal(key.Public(), cert.PublicKey), "the cluster key is not in the kubeconfig")
	own, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	require.True(t, keys.Equal(own.Key.Public(), cert.PublicKey))
	require.Equal(t, p.clock.Now().Add(provider.DefaultCertificateLifetime), cert.NotAfter)

	// Secret: labels, annotation, owner.
	require.Equal(t, map[string]string{"liqo.io/remote-cluster-id": providerID, "liqo.io/identity-type": "ControlPlane"}, secret.Labels)
	require.Equal(t, "liqo-tenant-cl-consumer", secret.Annotations["liqo.io/remote-tenant-namespace"])
	require.Len(t, secret.OwnerReferences, 1)
	require.Equal(t, done.Identity.UID, secret.OwnerReferences[0].UID)

	// Consumer: the Identity points at the Secret.
	id, ok := p.consumerCluster.Identities.Get("liqo-tenant-cl-provider", "controlplane-cl-provider")
	require.True(t, ok)
	require.Equal(t, "kubeconfig-controlplane-cl-provider", id.Status.KubeconfigSecretRef.Name)
	_, ok = p.consumerCluster.Namespaces.Get("liqo-tenant-cl-provider")
	require.True(t, ok)

	// Provider: Tenant status, binding, namespace, nonce bound to the Tenant.
	tn, err := p.providerCluster.Tenants.Get(ctx, "liqo-tenant-cl-consumer", consumerID)
	require.NoError(t, err)
	require.Equal(t, "liqo-tenant-cl-consumer", tn.Status.TenantNamespace)
	require.Empty(t, tn.Finalizers, "Authenticate runs in-process: no controller would remove a finalizer")
	require.Equal(t, id.Spec.AuthParams.SignedCRT, tn.Status.AuthParams.SignedCRT)
	rb, ok := p.providerCluster.RBAC.RoleBinding("liqo-tenant-cl-consumer", "liqo-binding-liqo-remote-controlplane")
	require.True(t, ok)
	require.Equal(t, consumerID, rb.Subjects[0].Name)
	ns, ok := p.providerCluster.Namespaces.Get("liqo-tenant-cl-consumer")
	require.True(t, ok)
	require.Equal(t, "true", ns.Labels[tenant.NamespaceLabel])
	e, err := p.providerCluster.Nonces.Get(ctx, consumerID)
	require.NoError(t, err)
	require.Equal(t, tenant.Digest(tn), e.Redemption.By)
}

func TestHandshakeReportsEveryStep(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		steps []step.Name
	)
	record := func(s step.Done) { mu.Lock(); steps = append(steps, s.Name); mu.Unlock() }
	pc, err := memory.NewCluster(providerID, nil)
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, nil)
	require.NoError(t, err)
	provider, err := provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{OnStep: record})
	require.NoError(t, err)
	consumer, err := consumer.New(consumerID, cc.ConsumerPorts(), &consumer.Options{OnStep: record})
	require.NoError(t, err)

	_, err = kubepact.Authenticate(context.Background(), consumer, provider, nil)
	require.NoError(t, err)
	require.Equal(t, []step.Name{
		step.ProviderNamespace, step.NonceGenerated,
		step.ConsumerNamespace, step.NonceRetrieved, step.NonceSigned, step.TenantGenerated,
		step.TenantApplied, step.CertificateIssued, step.RBACBound, step.TenantStatus, step.IdentityGenerated,
		step.IdentityApplied, step.KubeconfigWritten, step.IdentityStatus,
	}, steps)
}

func TestHandshakeIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)

	first, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	writes := p.writes()
	tenantWrites := p.providerCluster.Tenants.Writes()
	require.Equal(t, 1, p.providerCluster.Signer.Signed())

	second, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	// The provider keeps the nonce redeemed by the consumer's key, so the
	// second run signs the same nonce and sends the same Tenant: nothing is
	// written.
	require.Equal(t, tenantWrites, p.providerCluster.Tenants.Writes())
	require.Equal(t, writes, p.writes(), "a second handshake writes nothing")
	require.Equal(t, first.Identity, second.Identity)
	require.Equal(t, first.Secret.Data, second.Secret.Data)
	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)
	require.Len(t, p.consumerCluster.Identities.Objects(""), 1)
	require.Equal(t, []string{"kubeconfig-controlplane-cl-provider", "liqo-signed-nonce"}, secretNames(p.consumerCluster))
	require.Equal(t, 1, p.providerCluster.Certificates.Len())

	// Each step alone is idempotent too, including accepting the same Tenant twice.
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	again, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	require.True(t, n.Equal(again))
	tn, err := p.consumer.Tenant(ctx, providerID, n, &consumer.TenantOptions{OwnKey: true})
	require.NoError(t, err)
	id1, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	id2, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, id1, id2)
	require.Equal(t, 1, p.providerCluster.Signer.Signed(), "the same CSR is never signed twice")
}

func TestAcceptRejectsNonceReuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)

	// A different Tenant signed over the same, already redeemed nonce.
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	replay, err := tenant.Build(consumerID, other, n, nil)
	require.NoError(t, err)
	_, err = p.provider.Accept(ctx, replay)
	require.ErrorIs(t, err, nonce.ErrNotFound)
	var se *step.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, step.TenantApplied, se.Step)
}

func TestAcceptRejectsExpiredNonce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	tn := ourTenant(t, p)
	p.clock.Step(nonce.DefaultTTL)

	_, err := p.provider.Accept(ctx, tn)
	require.ErrorIs(t, err, nonce.ErrExpired)
	require.Empty(t, p.providerCluster.Tenants.Objects(""))
	require.Zero(t, p.providerCluster.Signer.Signed())

	// The consumer recovers by asking for a fresh nonce.
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}

// A nonce lives as long as the provider that issued it said, not as long as
// the provider that redeems it would issue one for: a nonce issued for a
// minute (kubepact create nonce --nonce-ttl 1m) is not revived by a
// controller configured for an hour.
func TestAcceptJudgesNonceByIssuedTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	issuer, err := provider.New(providerID, p.providerCluster.Endpoint(), p.providerCluster.ProviderPorts(),
		&provider.Options{Clock: p.clock, NonceTTL: time.Minute})
	require.NoError(t, err)
	redeemer, err := provider.New(providerID, p.providerCluster.Endpoint(), p.providerCluster.ProviderPorts(),
		&provider.Options{Clock: p.clock, NonceTTL: time.Hour})
	require.NoError(t, err)

	n, err := issuer.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn := ourTenantFor(t, p, n)
	p.clock.Step(time.Minute)

	_, err = redeemer.Accept(ctx, tn)
	require.ErrorIs(t, err, nonce.ErrExpired)
	require.Empty(t, p.providerCluster.Tenants.Objects(""))
	require.Zero(t, p.providerCluster.Signer.Signed())

	// The long-TTL provider issues a fresh nonce, for its own TTL.
	fresh, err := redeemer.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	require.False(t, fresh.Equal(n))
	p.clock.Step(30 * time.Minute)
	_, err = issuer.Accept(ctx, ourTenantFor(t, p, fresh))
	require.NoError(t, err, "a nonce issued for an hour is valid after the short-TTL provider's minute")
}

func TestAcceptRejectsAndWritesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*authv1beta1.Tenant)
		want   error
		// keepsNonce is true when the Tenant fails before its nonce is redeemed.
		keepsNonce bool
	}{
		{"invalid cluster ID", func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = "CL" }, clusterid.ErrInvalid, true},
		{"malformed public key", func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = []byte("x") }, keys.ErrMalformed, true},
		{"bad signature", func(tn *authv1beta1.Tenant) { tn.Spec.Signature[0] ^= 0xff }, keys.ErrBadSignature, false},
		{"CSR replaced under the transcript", func(tn *authv1beta1.Tenant) {
			tn.Spec.CSR = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
		}, tenant.ErrTranscriptMismatch, false},
		{"CSR not DER, no transcript", func(tn *authv1beta1.Tenant) {
			tn.Annotations = nil
			tn.Spec.CSR = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
		}, csr.ErrMalformed, false},
		{"wrong namespace", func(tn *authv1beta1.Tenant) { tn.Namespace = "default" }, clusterid.ErrInvalid, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newPair(t)
			tn := ourTenant(t, p)
			before := p.writes()
			tt.mutate(tn)

			_, err := p.provider.Accept(ctx, tn)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, before, p.writes(), "a rejected Tenant writes nothing")
			e, err := p.providerCluster.Nonces.Get(ctx, consumerID)
			require.NoError(t, err)
			if tt.keepsNonce {
				require.Nil(t, e.Redemption)
			} else {
				require.NotNil(t, e.Redemption, "the nonce is redeemed before the signature is checked")
				require.Equal(t, tenant.Digest(tn), e.Redemption.By)
				// The nonce is bound to the key the Tenant claimed: a Tenant
				// of another key cannot use it, the untampered one can.
				other, err := tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), e.Nonce, nil)
				require.NoError(t, err)
				_, err = p.provider.Accept(ctx, other)
				require.ErrorIs(t, err, nonce.ErrRedeemed)
				_, err = p.provider.Accept(ctx, ourTenantFor(t, p, e.Nonce))
				require.NoError(t, err)
			}
		})
	}
}

func TestAcceptReportsDeniedCSR(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	p.providerCluster.Approver.Decide = func(name string, _ *csr.Checked) error {
		return &csr.DeniedError{Name: name, Reason: "PolicyRefused", Message: "not today"}
	}
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	var denied *csr.DeniedError
	require.ErrorAs(t, err, &denied)
	require.Equal(t, "PolicyRefused", denied.Reason)
	var se *step.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, step.CertificateIssued, se.Step)
	require.Empty(t, p.providerCluster.Tenants.Objects(""))
	require.Equal(t, []string{"liqo-signed-nonce"}, secretNames(p.consumerCluster), "no kubeconfig Secret")
}

func TestApplyRejectsForeignIdentityAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	// Another consumer, with its own key, receives this consumer's Identity.
	cc, err := memory.NewCluster("cl-intruder", &memory.ClusterOptions{Clock: p.clock})
	require.NoError(t, err)
	intruder, err := consumer.New("cl-intruder", cc.ConsumerPorts(), &consumer.Options{Clock: p.clock})
	require.NoError(t, err)
	_, err = keys.Ensure(ctx, cc.Keys, nil, keys.Ed25519)
	require.NoError(t, err)

	_, err = intruder.Apply(ctx, providerID, done.Identity, nil)
	require.ErrorIs(t, err, identity.ErrKeyMismatch)
	require.Empty(t, cc.Identities.Objects(""))
	require.Empty(t, cc.Secrets.Objects(""))
}

func TestUnauthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
	require.Empty(t, p.consumerCluster.Identities.Objects(""))
	require.Empty(t, p.consumerCluster.Secrets.Objects(""))
	require.Empty(t, p.providerCluster.Tenants.Objects(""))
	require.Equal(t, 1, p.providerCluster.Certificates.Len(), "the cached certificate, still valid, keeps holding the ID")
	_, ok := p.providerCluster.RBAC.RoleBinding("liqo-tenant-cl-consumer", rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	require.False(t, ok)
	_, err = p.provider.Revocation(ctx, consumerID)
	require.ErrorIs(t, err, lifecycle.ErrNotFound, "an unpeering records no revocation")

	// Unauthenticating again succeeds, and a new handshake passes at once,
	// as with Liqo.
	require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
}

func TestUnauthenticateRefusesWhileResourceSlicesExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	slice := done.Identity.DeepCopy()
	slice.Name, slice.UID = identity.ResourceSliceName("slice-a"), ""
	slice.Spec.Type = authv1beta1.ResourceSliceIdentityType
	_, err = p.consumerCluster.Identities.Apply(ctx, slice)
	require.NoError(t, err)
	before := p.writes()

	err = kubepact.Unauthenticate(ctx, p.consumer, p.provider)
	require.ErrorIs(t, err, consumer.ErrInUse)
	require.Equal(t, before, p.writes())
	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)
}

func TestConcurrentHandshakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	provider, err := provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk})
	require.NoError(t, err)

	const n = 16
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("cl-consumer-%d", i)
		cc, err := memory.NewCluster(id, &memory.ClusterOptions{Clock: clk})
		require.NoError(t, err)
		consumer, err := consumer.New(id, cc.ConsumerPorts(), &consumer.Options{Clock: clk})
		require.NoError(t, err)
		for range 2 { // two concurrent handshakes of the same consumer
			wg.Go(func() {
				_, err := kubepact.Authenticate(ctx, consumer, provider, nil)
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		// Two handshakes of one consumer race for one nonce: the loser
		// finds it redeemed, or signed by the other run's nonce.
		require.True(t, isNonceRace(err), "unexpected error: %v", err)
	}
	require.GreaterOrEqual(t, ok, n)
	require.Len(t, pc.Tenants.Objects(""), n)
}

func isNonceRace(err error) bool {
	return errorsIs(err, nonce.ErrNotFound) || errorsIs(err, keys.ErrBadSignature)
}

func TestNewRejectsMissingPorts(t *testing.T) {
	t.Parallel()
	pc, err := memory.NewCluster(providerID, nil)
	require.NoError(t, err)
	ports := pc.ProviderPorts()
	ports.Signer = nil
	_, err = provider.New(providerID, pc.Endpoint(), ports, nil)
	require.ErrorIs(t, err, peer.ErrInvalidConfig)
	noEndpoint, err := provider.New(providerID, provider.Endpoint{}, pc.ProviderPorts(), nil)
	require.NoError(t, err, "a provider that only issues nonces needs no endpoint")
	n, err := noEndpoint.IssueNonce(context.Background(), consumerID)
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, nil)
	require.NoError(t, err)
	cons, err := consumer.New(consumerID, cc.ConsumerPorts(), nil)
	require.NoError(t, err)
	tn, err := cons.Tenant(context.Background(), providerID, n, nil)
	require.NoError(t, err)
	_, err = noEndpoint.Accept(context.Background(), tn)
	require.ErrorIs(t, err, peer.ErrInvalidConfig)
	_, err = pc.Nonces.Get(context.Background(), consumerID)
	require.NoError(t, err, "refusing for lack of an endpoint redeems nothing")
	_, err = provider.New("Bad_ID", pc.Endpoint(), pc.ProviderPorts(), nil)
	require.ErrorIs(t, err, clusterid.ErrInvalid)
	cports := pc.ConsumerPorts()
	cports.Keys = nil
	_, err = consumer.New(consumerID, cports, nil)
	require.ErrorIs(t, err, peer.ErrInvalidConfig)
}

var errorsIs = errors.Is

// secretNames returns the names of the Secrets stored on cluster c, sorted.
func secretNames(c *memory.Cluster) []string {
	var names []string
	for _, s := range c.Secrets.Objects("") {
		names = append(names, s.Name)
	}
	return names
}

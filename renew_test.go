package kubepact_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/tenant"
)

// replicate is what the CRD replicator does with a consumer's Renew: its
// spec lands in the consumer's tenant namespace on the provider.
func replicateRenew(r *authv1beta1.Renew) *authv1beta1.Renew {
	out := r.DeepCopy()
	out.Namespace = clusterid.TenantNamespace(r.Spec.ConsumerClusterID)
	out.OwnerReferences = nil
	out.Labels = map[string]string{renewal.ReplicatedLabel: "true", renewal.OriginIDLabel: r.Spec.ConsumerClusterID, clusterid.Label: r.Spec.ConsumerClusterID}
	return out
}

// kubeconfigSecret returns the kubeconfig the consumer holds for the provider.
func kubeconfigSecret(t *testing.T, p *pair) (data []byte, cfg *kubeconfig.Config) {
	t.Helper()
	s, ok := p.consumerCluster.Secrets.Get(clusterid.TenantNamespace(providerID), kubeconfig.SecretName(identity.ControlPlaneName(providerID)))
	require.True(t, ok)
	cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	return bytes.Clone(s.Data[kubeconfig.SecretKey]), cfg
}

// clientKey returns the private key in cfg.
func clientKey(t *testing.T, cfg *kubeconfig.Config) *keys.PrivateKey {
	t.Helper()
	for _, u := range cfg.API().AuthInfos {
		k, err := keys.ParsePrivateKey(u.ClientKeyData)
		require.NoError(t, err)
		return k
	}
	t.Fatal("no user in the kubeconfig")
	return nil
}

func clientCert(t *testing.T, cfg *kubeconfig.Config) *x509.Certificate {
	t.Helper()
	cert, err := cfg.ClientCertificate()
	require.NoError(t, err)
	return cert
}

// roundTrip runs one renewal round as the controllers do: the consumer's
// Renew, replicated; the provider's answer; the status, replicated back
// and applied by the consumer.
func roundTrip(t *testing.T, p *pair, held *authv1beta1.Renew) (*authv1beta1.Renew, *consumer.Authenticated, error) {
	t.Helper()
	ctx := context.Background()
	req, err := p.consumer.RenewRequest(ctx, providerID, held)
	require.NoError(t, err)
	params, err := p.provider.Renew(ctx, replicateRenew(req.Renew))
	require.NoError(t, err)
	req.Renew.Status.AuthParams = params
	a, err := p.consumer.Renewed(ctx, providerID, req.Renew, nil)
	return req.Renew, a, err
}

func TestProviderRenewsWhenDueAndLiqoConsumerFollows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	first := clientCert(t, done.Kubeconfig)
	require.Equal(t, provider.DefaultCertificateLifetime, first.NotAfter.Sub(p.clock.Now()), "seven days by default")
	tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)

	// Before it is due: accepting again changes nothing, and the Renew
	// brings back the certificate held, which the consumer keeps.
	p.clock.SetTime(renewal.ProviderDeadline(first).Add(-time.Minute))
	signed := p.providerCluster.Signer.Signed()
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, signed, p.providerCluster.Signer.Signed())
	renew, a, err := roundTrip(t, p, nil)
	require.NoError(t, err)
	require.Nil(t, a, "nothing to renew yet")
	require.Empty(t, renew.Spec.CSR, "a consumer that is not Strict sends what Liqo's sends")
	require.Equal(t, authv1beta1.ControlPlaneIdentityType, renew.Spec.IdentityType)
	require.Equal(t, consumerID, renew.Spec.ConsumerClusterID)

	// From its deadline on the provider re-signs; the Renew carries the new
	// certificate to the consumer, which rewrites its kubeconfig.
	p.clock.SetTime(renewal.ProviderDeadline(first))
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, signed+1, p.providerCluster.Signer.Signed())
	_, a, err = roundTrip(t, p, renew)
	require.NoError(t, err)
	require.NotNil(t, a)
	_, cfg := kubeconfigSecret(t, p)
	second := clientCert(t, cfg)
	require.NotEqual(t, first.SerialNumber, second.SerialNumber)
	require.True(t, keys.Equal(first.PublicKey, second.PublicKey), "Liqo's renewal keeps the key")
	require.Equal(t, p.clock.Now().Add(provider.DefaultCertificateLifetime), second.NotAfter)
	id, ok := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID))
	require.True(t, ok)
	idCert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.Equal(t, second.Raw, idCert.Raw)
	require.NotNil(t, id.Status.KubeconfigSecretRef)

	// And the round after that changes nothing.
	_, a, err = roundTrip(t, p, renew)
	require.NoError(t, err)
	require.Nil(t, a)
}

// ticket is a reader of constant bytes: all zeros draws the earliest
// renewal deadline, all 0xff a late one.
type ticket byte

func (b ticket) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestStrictRenewalRotatesTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	name := identity.ControlPlaneName(providerID)
	oldKey, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
	require.NoError(t, err)
	first := clientCert(t, done.Kubeconfig)

	// Before the deadline: a CSR for the key held, answered with the
	// certificate already issued, nothing signed, nothing switched.
	signed := p.providerCluster.Signer.Signed()
	renew, a, err := roundTrip(t, p, nil)
	require.NoError(t, err)
	require.Nil(t, a)
	require.Equal(t, signed, p.providerCluster.Signer.Signed())
	_, err = p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
	require.ErrorIs(t, err, keys.ErrNotFound, "no next key before the deadline")
	pub, err := keys.ParsePublicKey(renew.Spec.PublicKey)
	require.NoError(t, err)
	require.True(t, keys.Equal(oldKey.Key.Public(), pub))

	// Asking again keeps the CSR byte for byte: no write on either side.
	again, err := p.consumer.RenewRequest(ctx, providerID, renew)
	require.NoError(t, err)
	require.Equal(t, renew.Spec, again.Renew.Spec)
	at := again.At
	life := first.NotAfter.Sub(first.NotBefore)
	require.False(t, at.Before(first.NotBefore.Add(life*7/10)), "deadline %s", at)
	require.False(t, at.After(first.NotBefore.Add(life*9/10)), "deadline %s", at)

	// At the deadline: a fresh key, stored before the CSR is returned.
	p.clock.SetTime(at)
	req, err := p.consumer.RenewRequest(ctx, providerID, renew)
	require.NoError(t, err)
	nextKey, err := p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
	require.NoError(t, err, "the next key is stored before its CSR leaves")
	pub, err = keys.ParsePublicKey(req.Renew.Spec.PublicKey)
	require.NoError(t, err)
	require.True(t, keys.Equal(nextKey.Key.Public(), pub))
	require.False(t, keys.Equal(oldKey.Key.Public(), pub))
	checked, err := csr.Check(req.Renew.Spec.CSR, csr.ControlPlanePolicy(consumerID, nextKey.Key.Public()))
	require.NoError(t, err, "the CSR is the ControlPlane CSR for the next key")
	require.Equal(t, csr.ControlPlaneSubject(consumerID).CommonName, checked.Subject().CommonName)
	// Until the switch the old kubeconfig is the one held.
	held, _ := kubeconfigSecret(t, p)
	heldCfg, err := kubeconfig.Parse(held)
	require.NoError(t, err)
	require.True(t, keys.Equal(oldKey.Key.Public(), clientKey(t, heldCfg).Public()))

	params, err := p.provider.Renew(ctx, replicateRenew(req.Renew))
	require.NoError(t, err)
	require.Equal(t, signed+1, p.providerCluster.Signer.Signed())
	req.Renew.Status.AuthParams = params
	a, err = p.consumer.Renewed(ctx, providerID, req.Renew, nil)
	require.NoError(t, err)
	require.NotNil(t, a)

	_, cfg := kubeconfigSecret(t, p)
	second := clientCert(t, cfg)
	require.True(t, keys.Equal(nextKey.Key.Public(), second.PublicKey))
	require.True(t, keys.Equal(nextKey.Key.Public(), clientKey(t, cfg).Public()), "the kubeconfig holds the new key")
	cur, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
	require.NoError(t, err)
	require.True(t, keys.Equal(nextKey.Key.Public(), cur.Key.Public()), "the new key is the identity's key")
	_, err = p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
	require.ErrorIs(t, err, keys.ErrNotFound)
	require.Equal(t, 1, p.consumerCluster.IdentityKeys.Len(), "the old key is gone")

	// The provider answers the same Renew with the same certificate.
	replicated := replicateRenew(req.Renew)
	params2, err := p.provider.Renew(ctx, replicated)
	require.NoError(t, err)
	require.Equal(t, params.SignedCRT, params2.SignedCRT)
	require.Equal(t, signed+1, p.providerCluster.Signer.Signed())
}

// strictAtDeadline authenticates a Strict consumer and runs its renewal up
// to the provider's answer, which it returns with the Renew.
func strictAtDeadline(t *testing.T) (*pair, *authv1beta1.Renew) {
	t.Helper()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	require.NoError(t, err)
	p.clock.SetTime(req.At)
	req, err = p.consumer.RenewRequest(ctx, providerID, req.Renew)
	require.NoError(t, err)
	params, err := p.provider.Renew(ctx, replicateRenew(req.Renew))
	require.NoError(t, err)
	req.Renew.Status.AuthParams = params
	return p, req.Renew
}

// TestRenewedRefusesHostileStatus: a provider, or whoever writes the
// Renew's status, cannot replace the working kubeconfig with credentials
// that are not the consumer's, and the renewal resumes afterwards.
func TestRenewedRefusesHostileStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	otherKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, p *pair, params *authv1beta1.AuthParams)
		want   error
	}{
		{"certificate for another key", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			params.SignedCRT = signFor(t, p, otherKey, csr.ControlPlaneSubject(consumerID), time.Hour)
		}, identity.ErrKeyMismatch},
		{"certificate for another consumer", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			key, err := p.consumerCluster.IdentityKeys.Get(context.Background(), renewal.NextKeyName(identity.ControlPlaneName(providerID)))
			require.NoError(t, err)
			params.SignedCRT = signFor(t, p, key.Key, csr.ControlPlaneSubject("cl-other"), time.Hour)
		}, identity.ErrSubject},
		{"expired certificate", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			key, err := p.consumerCluster.IdentityKeys.Get(context.Background(), renewal.NextKeyName(identity.ControlPlaneName(providerID)))
			require.NoError(t, err)
			params.SignedCRT = signFor(t, p, key.Key, csr.ControlPlaneSubject(consumerID), time.Minute)
			p.clock.Step(2 * time.Minute)
		}, identity.ErrExpired},
		{"the provider's CA certificate", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			params.SignedCRT = p.providerCluster.Signer.CA.Certificate()
		}, identity.ErrKeyMismatch},
		{"CA certificate for the consumer's key", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			key, err := p.consumerCluster.IdentityKeys.Get(context.Background(), renewal.NextKeyName(identity.ControlPlaneName(providerID)))
			require.NoError(t, err)
			params.SignedCRT = caFor(t, p, key.Key)
		}, identity.ErrCACertificate},
		{"certificate of another CA", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			key, err := p.consumerCluster.IdentityKeys.Get(context.Background(), renewal.NextKeyName(identity.ControlPlaneName(providerID)))
			require.NoError(t, err)
			caPEM, caKey, err := csr.GenerateCA(nil, "rogue", p.clock.Now(), time.Hour)
			require.NoError(t, err)
			rogue, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: p.clock})
			require.NoError(t, err)
			params.SignedCRT = signWith(t, rogue, key.Key, csr.ControlPlaneSubject(consumerID), time.Hour)
		}, identity.ErrRejected},
		{"another API server", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			params.APIServer = "https://attacker.example:6443"
		}, consumer.ErrEndpointChanged},
		{"another CA", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			caPEM, _, err := csr.GenerateCA(nil, "rogue", p.clock.Now(), time.Hour)
			require.NoError(t, err)
			params.CA = caPEM
		}, consumer.ErrEndpointChanged},
		{"garbage", func(t *testing.T, p *pair, params *authv1beta1.AuthParams) {
			params.SignedCRT = []byte("not a certificate")
		}, identity.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, renew := strictAtDeadline(t)
			name := identity.ControlPlaneName(providerID)
			before, _ := kubeconfigSecret(t, p)
			oldKey, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
			require.NoError(t, err)
			good := renew.Status.AuthParams.DeepCopy()
			tt.mutate(t, p, renew.Status.AuthParams)
			writes := p.writes()

			_, err = p.consumer.Renewed(ctx, providerID, renew, nil)
			require.ErrorIs(t, err, tt.want)
			after, _ := kubeconfigSecret(t, p)
			require.Equal(t, before, after, "the working kubeconfig stays")
			require.Equal(t, writes, p.writes(), "nothing written")
			cur, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
			require.NoError(t, err)
			require.True(t, keys.Equal(oldKey.Key.Public(), cur.Key.Public()), "the old key stays")
			_, err = p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
			require.NoError(t, err, "the next key stays for the retry")

			// The genuine answer, later, still switches.
			renew.Status.AuthParams = good
			_, err = p.consumer.Renewed(ctx, providerID, renew, nil)
			require.NoError(t, err)
			_, cfg := kubeconfigSecret(t, p)
			require.False(t, keys.Equal(oldKey.Key.Public(), clientKey(t, cfg).Public()))
		})
	}
}

// signWith returns a certificate from ca for key and subject.
func signWith(t *testing.T, ca *csr.LocalCA, key *keys.PrivateKey, subject pkix.Name, lifetime time.Duration) []byte {
	t.Helper()
	req, err := csr.Create(nil, key, subject)
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.Policy{CommonName: subject.CommonName, Organization: subject.Organization[0], PublicKey: key.Public()})
	require.NoError(t, err)
	cert, err := ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: lifetime})
	require.NoError(t, err)
	return cert
}

// signFor returns a certificate from the provider's CA for key and subject.
func signFor(t *testing.T, p *pair, key *keys.PrivateKey, subject pkix.Name, lifetime time.Duration) []byte {
	t.Helper()
	return signWith(t, p.providerCluster.Signer.CA, key, subject, lifetime)
}

// caFor returns a CA certificate for key with the consumer's ControlPlane
// subject, signed by a CA of its own.
func caFor(t *testing.T, p *pair, key *keys.PrivateKey) []byte {
	t.Helper()
	signer, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               csr.ControlPlaneSubject(consumerID),
		NotBefore:             p.clock.Now().Add(-time.Minute),
		NotAfter:              p.clock.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), signer)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestProviderRenewRefuses: whoever writes Renews in a tenant namespace
// (the consumer itself, through its ControlPlane identity) gets no
// certificate for another subject, key holder or consumer, and a refused
// Renew signs nothing.
func TestProviderRenewRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	otherKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	otherPub, err := keys.MarshalPublicKey(otherKey.Public())
	require.NoError(t, err)
	csrFor := func(t *testing.T, key *keys.PrivateKey, subject pkix.Name) []byte {
		t.Helper()
		b, err := csr.Create(nil, key, subject)
		require.NoError(t, err)
		return b
	}
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, p *pair, r *authv1beta1.Renew)
		want   error
	}{
		{"in another consumer's namespace", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Namespace = clusterid.TenantNamespace("cl-other")
		}, renewal.ErrForeign},
		{"naming another consumer", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.ConsumerClusterID = "cl-other"
		}, renewal.ErrForeign},
		{"outside any tenant namespace", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Namespace = "kube-system"
		}, renewal.ErrForeign},
		{"for another identity", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Name = "controlplane-cl-elsewhere"
		}, renewal.ErrForeign},
		{"for a ResourceSlice identity", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.IdentityType = authv1beta1.ResourceSliceIdentityType
		}, renewal.ErrUnsupported},
		{"a CSR without its key", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey = nil
		}, renewal.ErrMalformed},
		{"an unparsable key", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey = []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
		}, renewal.ErrMalformed},
		{"a CSR for another consumer's name", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey, r.Spec.CSR = otherPub, csrFor(t, otherKey, csr.ControlPlaneSubject("cl-other"))
		}, csr.ErrCommonName},
		{"a CSR for system:masters", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey, r.Spec.CSR = otherPub, csrFor(t, otherKey, pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}})
		}, csr.ErrOrganization},
		{"a CSR with an extra group", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey, r.Spec.CSR = otherPub, csrFor(t, otherKey, pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "system:masters"}})
		}, csr.ErrOrganization},
		{"a CSR for another key than the Renew's", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Spec.PublicKey = otherPub
		}, csr.ErrKeyMismatch},
		{"a consumer without a Tenant", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			r.Namespace, r.Spec.ConsumerClusterID = clusterid.TenantNamespace("cl-other"), "cl-other"
			r.Spec.PublicKey, r.Spec.CSR = otherPub, csrFor(t, otherKey, csr.ControlPlaneSubject("cl-other"))
		}, renewal.ErrNotAccepted},
		{"a drained consumer", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
			require.NoError(t, err)
			tn.Spec.TenantCondition = authv1beta1.TenantConditionDrained
			_, err = p.providerCluster.Tenants.Apply(ctx, tn)
			require.NoError(t, err)
		}, renewal.ErrDrained},
		{"a consumer revoked, its Tenant still there", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			require.NoError(t, p.providerCluster.Revocations.Put(ctx, lifecycle.Revocation{
				ConsumerID: consumerID, Until: p.clock.Now().Add(time.Hour), Reason: lifecycle.ReasonRevoked,
			}))
		}, lifecycle.ErrRevoked},
		{"a consumer revoked, asking for nothing new", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			require.NoError(t, p.providerCluster.Revocations.Put(ctx, lifecycle.Revocation{
				ConsumerID: consumerID, Until: p.clock.Now().Add(time.Hour), Reason: lifecycle.ReasonRevoked,
			}))
			r.Spec.PublicKey, r.Spec.CSR = nil, nil
		}, lifecycle.ErrRevoked},
		{"a new key before half the lifetime", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			p.clock.SetTime(time.Date(2026, 11, 22, 10, 1, 0, 0, time.UTC))
		}, renewal.ErrTooEarly},
		{"a consumer whose user holds permissions", func(t *testing.T, p *pair, r *authv1beta1.Renew) {
			require.NoError(t, p.providerCluster.RBAC.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "everything"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
			}))
			require.NoError(t, p.providerCluster.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "someone-made-this-later"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
			}))
		}, rbac.ErrPrivilegedUser},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newModePair(t, tenant.Compatible, true)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			req, err := p.consumer.RenewRequest(ctx, providerID, nil)
			require.NoError(t, err)
			p.clock.SetTime(req.At)
			req, err = p.consumer.RenewRequest(ctx, providerID, req.Renew)
			require.NoError(t, err)
			r := replicateRenew(req.Renew)
			tt.mutate(t, p, r)
			signed := p.providerCluster.Signer.Signed()

			params, err := p.provider.Renew(ctx, r)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, params)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
		})
	}
}

// TestStrictRenewalResumesAfterCrash: a consumer that stops after writing
// the renewed kubeconfig and deleting the old key, before storing the new
// key under the identity's name, keeps working, and the next renewal round
// completes the switch.
func TestStrictRenewalResumesAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, renew := strictAtDeadline(t)
	name := identity.ControlPlaneName(providerID)
	next, err := p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
	require.NoError(t, err)
	held, ok := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), name)
	require.True(t, ok)
	held.Spec.AuthParams = *renew.Status.AuthParams.DeepCopy()
	// Renewed's first steps: the switch, then the old key deleted.
	_, err = p.consumer.Apply(ctx, providerID, held, nil)
	require.NoError(t, err)
	require.NoError(t, p.consumerCluster.IdentityKeys.Delete(ctx, name))

	// The kubeconfig works, and applying the Identity again finds its key.
	_, cfg := kubeconfigSecret(t, p)
	require.True(t, keys.Equal(next.Key.Public(), clientKey(t, cfg).Public()))
	_, err = p.consumer.Apply(ctx, providerID, held, nil)
	require.NoError(t, err)

	_, err = p.consumer.RenewRequest(ctx, providerID, renew)
	require.NoError(t, err)
	cur, err := p.consumerCluster.IdentityKeys.Get(ctx, name)
	require.NoError(t, err)
	require.True(t, keys.Equal(next.Key.Public(), cur.Key.Public()), "the new key is the identity's key")
	_, err = p.consumerCluster.IdentityKeys.Get(ctx, renewal.NextKeyName(name))
	require.ErrorIs(t, err, keys.ErrNotFound)
	require.Equal(t, 1, p.consumerCluster.IdentityKeys.Len())
}

// TestProviderRenewLimitsNewKeys: a consumer asking for key after key gets
// one certificate, then waits half its lifetime for the next.
func TestProviderRenewLimitsNewKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	req, err := p.consumer.RenewRequest(ctx, providerID, nil)
	require.NoError(t, err)
	p.clock.SetTime(req.At)
	r := replicateRenew(req.Renew)
	signed := p.providerCluster.Signer.Signed()
	var until time.Time
	for i := range 5 {
		key, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		r.Spec.PublicKey, err = keys.MarshalPublicKey(key.Public())
		require.NoError(t, err)
		r.Spec.CSR, err = csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
		require.NoError(t, err)
		params, err := p.provider.Renew(ctx, r)
		if i == 0 {
			require.NoError(t, err)
			r.Status.AuthParams = params
			cert, err := csr.ParseCertificate(params.SignedCRT)
			require.NoError(t, err)
			until = renewal.EarliestNewKey(cert)
			continue
		}
		var early *renewal.TooEarlyError
		require.ErrorAs(t, err, &early)
		require.Equal(t, until, early.Until)
	}
	require.Equal(t, signed+1, p.providerCluster.Signer.Signed(), "one certificate for five keys")
	p.clock.SetTime(until)
	_, err = p.provider.Renew(ctx, r)
	require.NoError(t, err, "half-way through, a new key is signed")
	require.Equal(t, signed+2, p.providerCluster.Signer.Signed())
}

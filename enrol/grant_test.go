package enrol_test

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/cryptobyte"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// providerSide is a provider's enrolment key and API server CA.
type providerSide struct {
	enrolment *keys.PrivateKey
	ca        []byte
}

func newProvider(t testing.TB) providerSide {
	t.Helper()
	ca, _, err := csr.GenerateCA(nil, "provider CA", time.Now(), time.Hour)
	require.NoError(t, err)
	return providerSide{enrolment: generate(t), ca: ca}
}

func (p providerSide) pin(t testing.TB) string {
	t.Helper()
	pin, err := enrol.CAPin(p.ca)
	require.NoError(t, err)
	return pin
}

// identity is what the provider's Accept returns for r.
func (p providerSide) identity(r *enrol.Request, proxy *string) *authv1beta1.Identity {
	return &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		ClusterID: providerID,
		Type:      authv1beta1.ControlPlaneIdentityType,
		Namespace: ptr.To(clusterid.TenantNamespace(r.ConsumerID)),
		AuthParams: authv1beta1.AuthParams{
			CA: p.ca, SignedCRT: []byte("-----BEGIN CERTIFICATE-----\nissued\n-----END CERTIFICATE-----\n"),
			APIServer: "https://provider.example:6443", ProxyURL: proxy,
		},
	}}
}

func (p providerSide) grant(t testing.TB, r *enrol.Request, proxy *string) *peeringv1alpha1.Grant {
	t.Helper()
	g, err := enrol.NewGrant(nil, p.enrolment, r, p.identity(r, proxy))
	require.NoError(t, err)
	return g
}

func (p providerSide) trust(t testing.TB, c consumerSide) enrol.Trust {
	t.Helper()
	return enrol.Trust{
		ProviderID: providerID, ConsumerID: consumerID,
		EnrolmentKeys: []crypto.PublicKey{p.enrolment.Public()},
		CASHA256:      p.pin(t), Request: c.request,
	}
}

// grantTranscript is the grant encoding as the package documents it,
// written out here so that a change of the signed bytes fails a test.
func grantTranscript(g *peeringv1alpha1.Grant) []byte {
	var b cryptobyte.Builder
	str := func(s string) { b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) }) }
	str(enrol.GrantContext)
	b.AddUint8(enrol.Version)
	for _, s := range []string{g.ProviderID, g.ConsumerID, g.CSRSHA256, g.Namespace, g.APIServer} {
		str(s)
	}
	for _, p := range [][]byte{g.CA, g.Certificate} {
		b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(p) })
	}
	if g.ProxyURL == nil {
		b.AddUint8(0)
	} else {
		b.AddUint8(1)
		str(*g.ProxyURL)
	}
	return b.BytesOrPanic()
}

func resign(t testing.TB, k *keys.PrivateKey, g *peeringv1alpha1.Grant) {
	t.Helper()
	var err error
	g.Signature, err = keys.SignMessage(nil, k, grantTranscript(g))
	require.NoError(t, err)
}

func TestGrantRoundTrip(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	for _, proxy := range []*string{nil, ptr.To("http://proxy.example:3128")} {
		g := p.grant(t, c.request, proxy)
		sum := sha256.Sum256(c.request.CSR)
		assert.Equal(t, hex.EncodeToString(sum[:]), g.CSRSHA256)
		assert.NoError(t, keys.VerifyMessage(p.enrolment.Public(), grantTranscript(g), g.Signature), "the signature covers the documented encoding")

		id, err := enrol.VerifyGrant(g, p.trust(t, c))
		require.NoError(t, err)
		want := p.identity(c.request, proxy)
		assert.Equal(t, want.Spec, id.Spec)
		assert.Equal(t, authv1beta1.IdentityKind, id.Kind)
	}
}

// TestGrantSignedByEitherCommittedKey: while the enrolment key rotates,
// both committed keys verify.
func TestGrantSignedByEitherCommittedKey(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	tr := p.trust(t, c)
	tr.EnrolmentKeys = append([]crypto.PublicKey{generate(t).Public()}, tr.EnrolmentKeys...)
	_, err := enrol.VerifyGrant(p.grant(t, c.request, nil), tr)
	assert.NoError(t, err)
}

// TestGrantTampered changes each field of a signed grant: the signature
// covers them all.
func TestGrantTampered(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	other := newProvider(t)
	for _, tc := range []struct {
		name   string
		proxy  *string
		mutate func(*peeringv1alpha1.Grant)
	}{
		{"providerID", nil, func(g *peeringv1alpha1.Grant) { g.ProviderID = "provider-2" }},
		{"consumerID", nil, func(g *peeringv1alpha1.Grant) { g.ConsumerID = "consumer-2" }},
		{"csrSHA256", nil, func(g *peeringv1alpha1.Grant) { g.CSRSHA256 = hex.EncodeToString(make([]byte, 32)) }},
		{"namespace", nil, func(g *peeringv1alpha1.Grant) { g.Namespace = "default" }},
		{"apiServer", nil, func(g *peeringv1alpha1.Grant) { g.APIServer = "https://attacker.example:6443" }},
		{"CA", nil, func(g *peeringv1alpha1.Grant) { g.CA = append(other.ca, g.CA...) }},
		{"certificate", nil, func(g *peeringv1alpha1.Grant) { g.Certificate = append(g.Certificate, '\n') }},
		{"proxyURL added", nil, func(g *peeringv1alpha1.Grant) { g.ProxyURL = ptr.To("") }},
		{"proxyURL changed", ptr.To("http://proxy.example:3128"), func(g *peeringv1alpha1.Grant) { g.ProxyURL = ptr.To("http://attacker.example:3128") }},
		{"proxyURL removed", ptr.To("http://proxy.example:3128"), func(g *peeringv1alpha1.Grant) { g.ProxyURL = nil }},
		{"signature", nil, func(g *peeringv1alpha1.Grant) { g.Signature[len(g.Signature)-1] ^= 1 }},
		{"no signature", nil, func(g *peeringv1alpha1.Grant) { g.Signature = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := p.grant(t, c.request, tc.proxy)
			_, err := enrol.VerifyGrant(g, p.trust(t, c))
			require.NoError(t, err, "untampered")
			tc.mutate(g)
			_, err = enrol.VerifyGrant(g, p.trust(t, c))
			assert.ErrorIs(t, err, enrol.ErrBadGrant)
		})
	}
}

// TestGrantSignedButWrong has the committed enrolment key sign a grant
// that is not the one asked for: the checks past the signature refuse it.
func TestGrantSignedButWrong(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	other := newProvider(t)
	for _, tc := range []struct {
		name   string
		mutate func(*peeringv1alpha1.Grant)
		want   error
	}{
		{"for another provider", func(g *peeringv1alpha1.Grant) { g.ProviderID = "provider-2" }, enrol.ErrBadGrant},
		{"for another consumer", func(g *peeringv1alpha1.Grant) { g.ConsumerID = "consumer-2" }, enrol.ErrBadGrant},
		{"for another request", func(g *peeringv1alpha1.Grant) { g.CSRSHA256 = newConsumer(t).request.CSRSHA256() }, enrol.ErrBadGrant},
		{"in another namespace", func(g *peeringv1alpha1.Grant) { g.Namespace = "kube-system" }, enrol.ErrBadGrant},
		{"with another CA", func(g *peeringv1alpha1.Grant) { g.CA = other.ca }, enrol.ErrCAPin},
		{"with no CA", func(g *peeringv1alpha1.Grant) { g.CA = nil }, enrol.ErrCAPin},
		{"with a CA that is not PEM", func(g *peeringv1alpha1.Grant) { g.CA = []byte("not a certificate") }, enrol.ErrCAPin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := p.grant(t, c.request, nil)
			tc.mutate(g)
			resign(t, p.enrolment, g)
			_, err := enrol.VerifyGrant(g, p.trust(t, c))
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestGrantSignedByUncommittedKey(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	// An impostor that knows everything public, the CA included.
	impostor := providerSide{enrolment: generate(t), ca: p.ca}
	_, err := enrol.VerifyGrant(impostor.grant(t, c.request, nil), p.trust(t, c))
	assert.ErrorIs(t, err, enrol.ErrBadGrant)

	// The consumer's own cluster key is no enrolment key either.
	g := p.grant(t, c.request, nil)
	resign(t, c.cluster, g)
	_, err = enrol.VerifyGrant(g, p.trust(t, c))
	assert.ErrorIs(t, err, enrol.ErrBadGrant)
}

func TestVerifyGrantNil(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	tr := p.trust(t, c)
	_, err := enrol.VerifyGrant(nil, tr)
	assert.ErrorIs(t, err, enrol.ErrBadGrant)
	tr.Request = nil
	_, err = enrol.VerifyGrant(p.grant(t, c.request, nil), tr)
	assert.ErrorIs(t, err, enrol.ErrBadGrant)
}

func TestGrantCAPinMismatch(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	tr := p.trust(t, c)
	tr.CASHA256 = newProvider(t).pin(t)
	_, err := enrol.VerifyGrant(p.grant(t, c.request, nil), tr)
	assert.ErrorIs(t, err, enrol.ErrCAPin)
}

// TestGrantTranscriptIsNotDER: the enrolment key signs grants and the
// endpoint's X.509 certificates; neither can be read as the other.
func TestGrantTranscriptIsNotDER(t *testing.T) {
	t.Parallel()
	c, p := newConsumer(t), newProvider(t)
	for _, proxy := range []*string{nil, ptr.To("http://proxy.example:3128")} {
		msg := grantTranscript(p.grant(t, c.request, proxy))
		_, err := x509.ParseCertificate(msg)
		assert.Error(t, err)
		// A DER certificate is a SEQUENCE (0x30); a transcript starts with
		// the context's two-byte length.
		assert.NotEqual(t, byte(0x30), msg[0])
	}
	// and the other way: a certificate's signed part is no grant.
	cert := servingCertificate(t, p.enrolment, time.Now(), time.Hour)
	assert.Equal(t, byte(0x30), cert.RawTBSCertificate[0])
}

func TestCAPin(t *testing.T) {
	t.Parallel()
	p, other := newProvider(t), newProvider(t)
	pin := p.pin(t)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, pin)

	block, _ := pemDecode(p.ca)
	c, err := x509.ParseCertificate(block)
	require.NoError(t, err)
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), pin, "the pin is kubeadm's: SHA-256 of the SPKI")

	assert.NoError(t, enrol.CheckCAPin(p.ca, pin))
	bundle := append(append([]byte{}, other.ca...), p.ca...)
	assert.NoError(t, enrol.CheckCAPin(bundle, pin), "any certificate of the bundle")
	assert.ErrorIs(t, enrol.CheckCAPin(other.ca, pin), enrol.ErrCAPin)
	assert.ErrorIs(t, enrol.CheckCAPin(p.ca, "sha256:"+hex.EncodeToString(make([]byte, 32))), enrol.ErrCAPin)
	assert.ErrorIs(t, enrol.CheckCAPin(nil, pin), enrol.ErrCAPin)

	_, err = enrol.CAPin([]byte("no PEM here"))
	assert.ErrorIs(t, err, enrol.ErrMalformed)
}

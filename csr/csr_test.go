package csr_test

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"net"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

const (
	consumerID = "cl-consumer"
	sliceName  = "slice-a"
)

// request builds a PEM CSR from tmpl directly, bypassing csr.Create, the way
// a hostile consumer would.
func request(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func create(t *testing.T, key crypto.Signer, subject pkix.Name) []byte {
	t.Helper()
	b, err := csr.Create(nil, key, subject)
	require.NoError(t, err)
	return b
}

func check(t *testing.T, key *keys.PrivateKey, subject pkix.Name) *csr.Checked {
	t.Helper()
	c, err := csr.Check(create(t, key, subject), csr.Policy{
		CommonName: subject.CommonName, Organization: subject.Organization[0], PublicKey: key.Public(),
	})
	require.NoError(t, err)
	return c
}

func TestControlPlaneSubject(t *testing.T) {
	t.Parallel()
	got := csr.ControlPlaneSubject(consumerID)
	require.Equal(t, consumerID, got.CommonName)
	require.Equal(t, []string{"liqo.io"}, got.Organization)
	require.Equal(t, "liqo.io", csr.ControlPlaneOrganization)
	require.Empty(t, got.OrganizationalUnit)
	require.Empty(t, got.ExtraNames)
}

func TestResourceSliceSubject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		consumer, slice, wantCN string
	}{
		// Known vectors: the first 12 hex characters of sha256(consumer).
		{consumer: "cl-consumer", slice: "slice-a", wantCN: "slice-a-573ffa690333"},
		{consumer: "b6f5b6a4-8d2c-4a3e-9b61-2f1d3c4e5f60", slice: "gpu", wantCN: "gpu-631effa63117"},
	}
	for _, tt := range tests {
		t.Run(tt.wantCN, func(t *testing.T) {
			t.Parallel()
			sum := sha256.Sum256([]byte(tt.consumer))
			require.Equal(t, tt.slice+"-"+hex.EncodeToString(sum[:6]), tt.wantCN)

			got := csr.ResourceSliceSubject(tt.consumer, tt.slice)
			require.Equal(t, tt.wantCN, got.CommonName)
			require.Equal(t, []string{tt.consumer}, got.Organization)
		})
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	pub := testkeys.Generate(t, keys.Ed25519).Public()
	tests := []struct {
		name string
		got  csr.Policy
		want csr.Policy
	}{
		{
			name: "ControlPlane",
			got:  csr.ControlPlanePolicy(consumerID, pub),
			want: csr.Policy{CommonName: consumerID, Organization: "liqo.io", PublicKey: pub},
		},
		{
			name: "ResourceSlice",
			got:  csr.ResourceSlicePolicy(consumerID, sliceName, pub),
			want: csr.Policy{CommonName: "slice-a-573ffa690333", Organization: consumerID, PublicKey: pub},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want.CommonName, tt.got.CommonName)
			require.Equal(t, tt.want.Organization, tt.got.Organization)
			require.True(t, keys.Equal(tt.want.PublicKey, tt.got.PublicKey))
		})
	}
}

func TestCreateAndCheck(t *testing.T) {
	t.Parallel()
	for _, alg := range []keys.Algorithm{keys.Ed25519, keys.ECDSAP256, keys.RSA2048} {
		for _, kind := range []struct {
			name    string
			subject pkix.Name
			policy  func(crypto.PublicKey) csr.Policy
		}{
			{
				name:    "ControlPlane",
				subject: csr.ControlPlaneSubject(consumerID),
				policy:  func(pub crypto.PublicKey) csr.Policy { return csr.ControlPlanePolicy(consumerID, pub) },
			},
			{
				name:    "ResourceSlice",
				subject: csr.ResourceSliceSubject(consumerID, sliceName),
				policy:  func(pub crypto.PublicKey) csr.Policy { return csr.ResourceSlicePolicy(consumerID, sliceName, pub) },
			},
		} {
			t.Run(alg.String()+"/"+kind.name, func(t *testing.T) {
				t.Parallel()
				key := testkeys.Generate(t, alg)
				b, err := csr.Create(nil, key, kind.subject)
				require.NoError(t, err)
				block, rest := pem.Decode(b)
				require.NotNil(t, block)
				require.Equal(t, "CERTIFICATE REQUEST", block.Type)
				require.Empty(t, rest)

				c, err := csr.Check(b, kind.policy(key.Public()))
				require.NoError(t, err)
				require.Equal(t, b, c.PEM())
				require.Equal(t, kind.subject.CommonName, c.Subject().CommonName)
				require.Equal(t, kind.subject.Organization, c.Subject().Organization)
				require.True(t, keys.Equal(key.Public(), c.PublicKey()))

				// PEM returns a copy.
				p := c.PEM()
				p[0] ^= 0xff
				require.Equal(t, b, c.PEM())
			})
		}
	}
}

func TestCheckWithoutPolicyKey(t *testing.T) {
	t.Parallel()
	key := testkeys.Generate(t, keys.ECDSAP256)
	p := csr.ControlPlanePolicy(consumerID, nil)
	c, err := csr.Check(create(t, key, csr.ControlPlaneSubject(consumerID)), p)
	require.NoError(t, err)
	require.True(t, keys.Equal(key.Public(), c.PublicKey()))
}

func TestCheckAcceptsTrailingWhitespace(t *testing.T) {
	t.Parallel()
	key := testkeys.Generate(t, keys.Ed25519)
	b := append(create(t, key, csr.ControlPlaneSubject(consumerID)), "\n\n  \n"...)
	_, err := csr.Check(b, csr.ControlPlanePolicy(consumerID, key.Public()))
	require.NoError(t, err)
}

func TestCheckAcceptsP384(t *testing.T) {
	t.Parallel()
	key := testkeys.ECDSA(t, elliptic.P384())
	_, err := csr.Check(create(t, key, csr.ControlPlaneSubject(consumerID)), csr.ControlPlanePolicy(consumerID, key.Public()))
	require.NoError(t, err)
}

// flipSignature returns b with one bit of its self-signature flipped.
func flipSignature(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	require.NotNil(t, block)
	der := bytes.Clone(block.Bytes)
	der[len(der)-1] ^= 0x01 // the signature BIT STRING ends the DER
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der})
}

var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// otherNameSAN is a SAN extension holding only an otherName, a type Go's
// parser keeps in Extensions but not in DNSNames, IPAddresses,
// EmailAddresses or URIs.
func otherNameSAN(t *testing.T) pkix.Extension {
	t.Helper()
	// otherName [0] { type-id OID 1.3.6.1.4.1.311.20.2.3 (UPN), value [0] UTF8String "admin" }
	value, err := asn1.Marshal(asn1.RawValue{Tag: 0, Class: asn1.ClassContextSpecific, IsCompound: true, Bytes: func() []byte {
		oid, err := asn1.Marshal(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3})
		require.NoError(t, err)
		utf8, err := asn1.MarshalWithParams("admin", "utf8")
		require.NoError(t, err)
		explicit, err := asn1.Marshal(asn1.RawValue{Tag: 0, Class: asn1.ClassContextSpecific, IsCompound: true, Bytes: utf8})
		require.NoError(t, err)
		return append(oid, explicit...)
	}()})
	require.NoError(t, err)
	seq, err := asn1.Marshal(asn1.RawValue{Tag: asn1.TagSequence, Class: asn1.ClassUniversal, IsCompound: true, Bytes: value})
	require.NoError(t, err)
	return pkix.Extension{Id: oidSubjectAltName, Value: seq}
}

func TestCheckRejects(t *testing.T) {
	t.Parallel()
	key := testkeys.Generate(t, keys.Ed25519)
	ecKey := testkeys.Generate(t, keys.ECDSAP256)
	rsKey := testkeys.Generate(t, keys.RSA2048)
	other := testkeys.Generate(t, keys.Ed25519)
	cp := csr.ControlPlaneSubject(consumerID)
	policy := csr.ControlPlanePolicy(consumerID, key.Public())
	slicePolicy := csr.ResourceSlicePolicy(consumerID, sliceName, key.Public())
	valid := create(t, key, cp)
	validBlock, _ := pem.Decode(valid)

	withSubject := func(s pkix.Name) []byte {
		return request(t, key, &x509.CertificateRequest{Subject: s})
	}
	withTemplate := func(tmpl x509.CertificateRequest) []byte {
		tmpl.Subject = cp
		return request(t, key, &tmpl)
	}
	uri, err := url.Parse("spiffe://cluster.local/ns/liqo/sa/admin")
	require.NoError(t, err)

	tests := []struct {
		name   string
		csr    []byte
		policy csr.Policy
		want   error
	}{
		// Common name.
		{name: "other consumer's CN", csr: withSubject(pkix.Name{CommonName: "cl-other", Organization: []string{"liqo.io"}}), policy: policy, want: csr.ErrCommonName},
		{name: "empty CN", csr: withSubject(pkix.Name{Organization: []string{"liqo.io"}}), policy: policy, want: csr.ErrCommonName},
		{name: "CN differs in case", csr: withSubject(pkix.Name{CommonName: "CL-CONSUMER", Organization: []string{"liqo.io"}}), policy: policy, want: csr.ErrCommonName},
		{name: "ControlPlane CSR for a slice policy", csr: valid, policy: slicePolicy, want: csr.ErrCommonName},
		{name: "slice CN of another consumer", csr: create(t, key, csr.ResourceSliceSubject("cl-other", sliceName)), policy: slicePolicy, want: csr.ErrCommonName},

		// Organization.
		{name: "extra O", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "admins"}}), policy: policy, want: csr.ErrOrganization},
		{name: "extra O first", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"admins", "liqo.io"}}), policy: policy, want: csr.ErrOrganization},
		{name: "duplicate O", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "liqo.io"}}), policy: policy, want: csr.ErrOrganization},
		{name: "no O", csr: withSubject(pkix.Name{CommonName: consumerID}), policy: policy, want: csr.ErrOrganization},
		{name: "system:masters", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}}), policy: policy, want: csr.ErrOrganization},
		{name: "system:nodes", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"system:nodes"}}), policy: policy, want: csr.ErrOrganization},
		{name: "liqo.io and system:masters", csr: withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "system:masters"}}), policy: policy, want: csr.ErrOrganization},
		{name: "slice O is liqo.io", csr: withSubject(pkix.Name{CommonName: slicePolicy.CommonName, Organization: []string{"liqo.io"}}), policy: slicePolicy, want: csr.ErrOrganization},

		// Subject alternative names.
		{name: "DNS SAN", csr: withTemplate(x509.CertificateRequest{DNSNames: []string{"kubernetes.default"}}), policy: policy, want: csr.ErrSAN},
		{name: "IP SAN", csr: withTemplate(x509.CertificateRequest{IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}}), policy: policy, want: csr.ErrSAN},
		{name: "email SAN", csr: withTemplate(x509.CertificateRequest{EmailAddresses: []string{"admin@example.com"}}), policy: policy, want: csr.ErrSAN},
		{name: "URI SAN", csr: withTemplate(x509.CertificateRequest{URIs: []*url.URL{uri}}), policy: policy, want: csr.ErrSAN},
		{name: "otherName SAN", csr: withTemplate(x509.CertificateRequest{ExtraExtensions: []pkix.Extension{otherNameSAN(t)}}), policy: policy, want: csr.ErrSAN},

		// Signature.
		{name: "Ed25519 bad self-signature", csr: flipSignature(t, valid), policy: policy, want: csr.ErrSignature},
		{name: "ECDSA bad self-signature", csr: flipSignature(t, create(t, ecKey, cp)), policy: csr.ControlPlanePolicy(consumerID, ecKey.Public()), want: csr.ErrSignature},
		{name: "RSA bad self-signature", csr: flipSignature(t, create(t, rsKey, cp)), policy: csr.ControlPlanePolicy(consumerID, rsKey.Public()), want: csr.ErrSignature},
		{name: "bad self-signature and no policy key", csr: flipSignature(t, valid), policy: csr.ControlPlanePolicy(consumerID, nil), want: csr.ErrSignature},

		// Key.
		{name: "RSA 1024", csr: request(t, testkeys.WeakRSA(t), &x509.CertificateRequest{Subject: cp}), policy: csr.ControlPlanePolicy(consumerID, nil), want: keys.ErrWeak},
		{name: "ECDSA P-224", csr: request(t, testkeys.ECDSA(t, elliptic.P224()), &x509.CertificateRequest{Subject: cp}), policy: csr.ControlPlanePolicy(consumerID, nil), want: keys.ErrUnsupported},
		{name: "ECDSA P-521", csr: request(t, testkeys.ECDSA(t, elliptic.P521()), &x509.CertificateRequest{Subject: cp}), policy: csr.ControlPlanePolicy(consumerID, nil), want: keys.ErrUnsupported},
		{name: "another Ed25519 key", csr: create(t, other, cp), policy: policy, want: csr.ErrKeyMismatch},
		{name: "an ECDSA key for an Ed25519 policy", csr: create(t, ecKey, cp), policy: policy, want: csr.ErrKeyMismatch},
		{name: "an RSA key for an Ed25519 policy", csr: create(t, rsKey, cp), policy: policy, want: csr.ErrKeyMismatch},

		// Encoding.
		{name: "nil", csr: nil, policy: policy, want: csr.ErrMalformed},
		{name: "garbage", csr: []byte("not a certificate signing request"), policy: policy, want: csr.ErrMalformed},
		{name: "DER without PEM", csr: validBlock.Bytes, policy: policy, want: csr.ErrMalformed},
		{name: "two PEM blocks", csr: append(bytes.Clone(valid), valid...), policy: policy, want: csr.ErrMalformed},
		{name: "trailing garbage", csr: append(bytes.Clone(valid), "junk"...), policy: policy, want: csr.ErrMalformed},
		{name: "wrong PEM type", csr: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: validBlock.Bytes}), policy: policy, want: csr.ErrMalformed},
		{name: "NEW CERTIFICATE REQUEST", csr: pem.EncodeToMemory(&pem.Block{Type: "NEW CERTIFICATE REQUEST", Bytes: validBlock.Bytes}), policy: policy, want: csr.ErrMalformed},
		{name: "PEM holding garbage", csr: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("garbage")}), policy: policy, want: csr.ErrMalformed},
		{name: "oversized", csr: append(bytes.Clone(valid), bytes.Repeat([]byte("\n"), csr.MaxSize)...), policy: policy, want: csr.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := csr.Check(tt.csr, tt.policy)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, c)
		})
	}
}

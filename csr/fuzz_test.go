package csr_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	mathrand "math/rand/v2"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
)

// The fuzz targets below run their seeds as ordinary tests under go test.
// The policy's key comes from a fixed seed, so every fuzzing worker process
// holds the same key as the coordinator and the seeds signed with it pass
// or fail for the same reason everywhere.

const fuzzConsumerID = "cl-consumer"

var (
	fuzzOIDCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	fuzzOIDOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
	fuzzOIDSAN          = asn1.ObjectIdentifier{2, 5, 29, 17}
	fuzzEpoch           = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

func fuzzEd25519(f *testing.F, seed byte) *keys.PrivateKey {
	f.Helper()
	k, err := keys.Generate(fuzzRand(seed), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	return k
}

// fuzzCSR returns a PEM CSR made from tmpl and signed by key.
func fuzzCSR(f *testing.F, key crypto.Signer, tmpl x509.CertificateRequest) []byte {
	f.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		f.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// fuzzOtherNameSAN is a SAN extension holding one otherName (a UPN), which
// Go's parser leaves in Extensions only.
func fuzzOtherNameSAN(f *testing.F) pkix.Extension {
	f.Helper()
	must := func(b []byte, err error) []byte {
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	oid := must(asn1.Marshal(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}))
	utf8 := must(asn1.MarshalWithParams("admin", "utf8"))
	explicit := must(asn1.Marshal(asn1.RawValue{Tag: 0, Class: asn1.ClassContextSpecific, IsCompound: true, Bytes: utf8}))
	other := must(asn1.Marshal(asn1.RawValue{Tag: 0, Class: asn1.ClassContextSpecific, IsCompound: true, Bytes: append(oid, explicit...)}))
	seq := must(asn1.Marshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: other}))
	return pkix.Extension{Id: fuzzOIDSAN, Value: seq}
}

// fuzzUnsignedCSR encodes a request for pub whose signature is zeros.
func fuzzUnsignedCSR(f *testing.F, subject pkix.Name, pub crypto.PublicKey) []byte {
	f.Helper()
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		f.Fatal(err)
	}
	name, err := asn1.Marshal(subject.ToRDNSequence())
	if err != nil {
		f.Fatal(err)
	}
	type tbsRequest struct {
		Version    int
		Subject    asn1.RawValue
		PublicKey  asn1.RawValue
		Attributes []asn1.RawValue `asn1:"tag:0"`
	}
	type request struct {
		TBS       tbsRequest
		Algorithm pkix.AlgorithmIdentifier
		Signature asn1.BitString
	}
	der, err := asn1.Marshal(request{
		TBS:       tbsRequest{Subject: asn1.RawValue{FullBytes: name}, PublicKey: asn1.RawValue{FullBytes: spki}},
		Algorithm: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 3, 101, 112}}, // Ed25519
		Signature: asn1.BitString{Bytes: make([]byte, 64), BitLength: 512},
	})
	if err != nil {
		f.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// fuzzDamaged returns damaged forms of a PEM CSR or certificate.
func fuzzDamaged(valid []byte) [][]byte {
	block, _ := pem.Decode(valid)
	der := block.Bytes
	reencode := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	badSig := bytes.Clone(der)
	badSig[len(badSig)-1] ^= 0x01
	badBody := bytes.Clone(der)
	badBody[len(badBody)/3] ^= 0x01
	return [][]byte{
		valid[:len(valid)/2],
		der,
		reencode(block.Type, badSig),
		reencode(block.Type, badBody),
		reencode(block.Type, der[:len(der)-1]),
		reencode(block.Type, append(bytes.Clone(der), 0)),
		reencode("NEW "+block.Type, der),
		append(bytes.Clone(valid), valid...),
		append(bytes.Clone(valid), "trailing garbage"...),
		append(bytes.Clone(valid), " \n\t"...),
		bytes.ReplaceAll(valid, []byte("\n"), []byte("\r\n")),
	}
}

func FuzzCheck(f *testing.F) {
	key := fuzzEd25519(f, 1)
	policy := csr.ControlPlanePolicy(fuzzConsumerID, key.Public())
	subject := csr.ControlPlaneSubject(fuzzConsumerID)

	valid, err := csr.Create(nil, key, subject)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, d := range fuzzDamaged(valid) {
		f.Add(d)
	}
	uri, _ := url.Parse("spiffe://cluster.local/ns/liqo/sa/admin")
	for _, tmpl := range []x509.CertificateRequest{
		{Subject: csr.ResourceSliceSubject(fuzzConsumerID, "slice-a")},
		{Subject: pkix.Name{CommonName: "system:admin", Organization: []string{csr.ControlPlaneOrganization}}},
		{Subject: pkix.Name{CommonName: fuzzConsumerID, Organization: []string{csr.ControlPlaneOrganization, "system:masters"}}},
		{Subject: pkix.Name{CommonName: fuzzConsumerID}},
		{Subject: pkix.Name{CommonName: fuzzConsumerID, Organization: []string{csr.ControlPlaneOrganization}, OrganizationalUnit: []string{"system:masters"}}},
		{Subject: pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: fuzzOIDCommonName, Value: "system:admin"},
			{Type: fuzzOIDCommonName, Value: fuzzConsumerID},
			{Type: fuzzOIDOrganization, Value: csr.ControlPlaneOrganization},
		}}},
		{Subject: pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: fuzzOIDOrganization, Value: csr.ControlPlaneOrganization},
			{Type: fuzzOIDCommonName, Value: fuzzConsumerID},
		}}},
		{Subject: subject, DNSNames: []string{"kubernetes.default"}},
		{Subject: subject, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}},
		{Subject: subject, EmailAddresses: []string{"admin@example.com"}},
		{Subject: subject, URIs: []*url.URL{uri}},
		{Subject: subject, ExtraExtensions: []pkix.Extension{fuzzOtherNameSAN(f)}},
		{Subject: subject, ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: []byte{0x30, 0x03, 0x01, 0x01, 0xff}}}},
	} {
		f.Add(fuzzCSR(f, key, tmpl))
	}
	// Requests for other keys: another accepted key, and keys kubepact
	// refuses.
	other := fuzzEd25519(f, 2)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		f.Fatal(err)
	}
	for _, k := range []crypto.Signer{other, p224, weak} {
		f.Add(fuzzCSR(f, k, x509.CertificateRequest{Subject: subject}))
	}
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	// An X25519 key cannot sign a request: encode one by hand, with a
	// signature that cannot verify.
	f.Add(fuzzUnsignedCSR(f, subject, x25519.PublicKey()))
	f.Add(fuzzUnsignedCSR(f, subject, key.Public()))
	// Keys of small order, whose self-signature verifies with no private
	// key behind it (the neutral point) or for a share of requests.
	points, _ := weakkeys.SmallOrder()
	for _, pub := range points {
		if der, err := x509.CreateCertificateRequest(nil, &x509.CertificateRequest{Subject: subject}, weakkeys.NewSigner(pub)); err == nil {
			f.Add(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
		}
		f.Add(fuzzUnsignedCSR(f, subject, ed25519.PublicKey(pub)))
	}
	f.Add([]byte{})
	f.Add(append(bytes.Clone(valid), bytes.Repeat([]byte("\n"), csr.MaxSize)...))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := csr.Check(data, policy)
		if err != nil {
			if c != nil {
				t.Fatalf("Check returned a *Checked and error %q", err)
			}
			for _, s := range []error{csr.ErrMalformed, csr.ErrSignature, csr.ErrCommonName, csr.ErrOrganization,
				csr.ErrSAN, csr.ErrKeyMismatch, keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak, keys.ErrWeakKey} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Check error %q wraps no documented sentinel", err)
		}
		if !bytes.Equal(c.PEM(), data) {
			t.Fatalf("Checked.PEM differs from the checked input")
		}
		if s := c.Subject(); s.CommonName != policy.CommonName || !slices.Equal(s.Organization, []string{policy.Organization}) {
			t.Fatalf("accepted subject CN=%q O=%q, policy CN=%q O=%q", s.CommonName, s.Organization, policy.CommonName, policy.Organization)
		}
		if !keys.Equal(policy.PublicKey, c.PublicKey()) {
			t.Fatalf("accepted a request for key %s", keys.Fingerprint(c.PublicKey()))
		}
		block, _ := pem.Decode(data)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatalf("accepted request does not parse: %v", err)
		}
		if err := req.CheckSignature(); err != nil {
			t.Fatalf("accepted request has a bad signature: %v", err)
		}
		if n := len(req.DNSNames) + len(req.IPAddresses) + len(req.EmailAddresses) + len(req.URIs); n > 0 {
			t.Fatalf("accepted request has %d SANs", n)
		}
		for _, ext := range req.Extensions {
			if ext.Id.Equal(fuzzOIDSAN) {
				t.Fatalf("accepted request has a SAN extension")
			}
		}
		// "Exactly the expected CN and exactly one O" holds for the
		// attributes as encoded, not only for Go's summary of them.
		var cns, os []string
		for _, atv := range req.Subject.Names {
			switch {
			case atv.Type.Equal(fuzzOIDCommonName):
				cns = append(cns, atv.Value.(string))
			case atv.Type.Equal(fuzzOIDOrganization):
				os = append(os, atv.Value.(string))
			}
		}
		if !slices.Equal(cns, []string{policy.CommonName}) || !slices.Equal(os, []string{policy.Organization}) {
			t.Fatalf("accepted subject attributes CN=%q O=%q, policy CN=%q O=%q", cns, os, policy.CommonName, policy.Organization)
		}
	})
}

func FuzzParseCertificate(f *testing.F) {
	caPEM, caKey, err := csr.GenerateCA(fuzzRand(3), "fuzz-ca", fuzzEpoch, 24*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(fuzzEpoch), Rand: fuzzRand(4)})
	if err != nil {
		f.Fatal(err)
	}
	key := fuzzEd25519(f, 1)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(fuzzConsumerID))
	if err != nil {
		f.Fatal(err)
	}
	checked, err := csr.Check(req, csr.ControlPlanePolicy(fuzzConsumerID, key.Public()))
	if err != nil {
		f.Fatal(err)
	}
	leaf, err := ca.Sign(context.Background(), csr.Request{CSR: checked})
	if err != nil {
		f.Fatal(err)
	}
	for _, valid := range [][]byte{caPEM, leaf, append(bytes.Clone(leaf), caPEM...)} {
		f.Add(valid)
		for _, d := range fuzzDamaged(valid) {
			f.Add(d)
		}
	}
	f.Add(req)
	f.Add([]byte{})
	f.Add(append(bytes.Clone(leaf), bytes.Repeat([]byte("\n"), csr.MaxCertificateSize)...))

	f.Fuzz(func(t *testing.T, data []byte) {
		cert, err := csr.ParseCertificate(data)
		if err != nil {
			if cert != nil {
				t.Fatalf("ParseCertificate returned a certificate and error %q", err)
			}
			if !errors.Is(err, csr.ErrMalformedCertificate) {
				t.Fatalf("ParseCertificate error %q does not wrap ErrMalformedCertificate", err)
			}
			return
		}
		block, _ := pem.Decode(data)
		if block == nil || block.Type != "CERTIFICATE" || !bytes.Equal(block.Bytes, cert.Raw) {
			t.Fatalf("parsed certificate is not the first CERTIFICATE block of the input")
		}
		again, err := x509.ParseCertificate(cert.Raw)
		if err != nil || !again.Equal(cert) {
			t.Fatalf("parsed certificate does not re-parse: %v", err)
		}
	})
}

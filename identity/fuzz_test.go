package identity_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	mathrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
)

// The fuzz target below runs its seeds as ordinary tests under go test. Its
// keys and CAs come from fixed seeds, so every fuzzing worker process holds
// the same ones as the coordinator.

func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

type fuzzCA struct {
	pem []byte
	key *keys.PrivateKey
}

func newFuzzCA(f *testing.F, seed byte, name string) fuzzCA {
	f.Helper()
	caPEM, caKey, err := csr.GenerateCA(fuzzRand(seed), name, epoch.Add(-3*time.Hour), 365*24*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	return fuzzCA{pem: caPEM, key: caKey}
}

// issue signs a ControlPlane-style certificate for subject and key, issued
// at now for lifetime.
func (ca fuzzCA) issue(f *testing.F, key crypto.Signer, subject pkix.Name, now time.Time, lifetime time.Duration) []byte {
	f.Helper()
	local, err := csr.NewLocalCA(ca.pem, ca.key, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now), Rand: fuzzRand(9)})
	if err != nil {
		f.Fatal(err)
	}
	req, err := csr.Create(nil, key, subject)
	if err != nil {
		f.Fatal(err)
	}
	checked, err := csr.Check(req, csr.Policy{CommonName: subject.CommonName, Organization: subject.Organization[0]})
	if err != nil {
		f.Fatal(err)
	}
	cert, err := local.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: lifetime})
	if err != nil {
		f.Fatal(err)
	}
	return cert
}

// serverCert signs, with ca's key, a certificate for key that is good for
// server authentication only.
func (ca fuzzCA) serverCert(f *testing.F, key crypto.Signer, subject pkix.Name) []byte {
	f.Helper()
	block, _ := pem.Decode(ca.pem)
	parent, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		f.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      subject,
		NotBefore:    epoch.Add(-time.Hour),
		NotAfter:     epoch.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(fuzzRand(8), tmpl, parent, key.Public(), ca.key)
	if err != nil {
		f.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func FuzzVerify(f *testing.F) {
	key, err := keys.Generate(fuzzRand(1), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	otherKey, err := keys.Generate(fuzzRand(2), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	ca := newFuzzCA(f, 3, "provider-ca")
	other := newFuzzCA(f, 4, "other-ca")
	subject := csr.ControlPlaneSubject(consumerID)

	valid := ca.issue(f, key, subject, epoch, time.Hour)
	certs := [][]byte{
		valid,
		append(bytes.Clone(valid), ca.pem...),
		other.issue(f, key, subject, epoch, time.Hour),
		ca.issue(f, otherKey, subject, epoch, time.Hour),
		ca.issue(f, key, csr.ResourceSliceSubject(consumerID, "slice-a"), epoch, time.Hour),
		ca.issue(f, key, csr.ControlPlaneSubject("cl-other"), epoch, time.Hour),
		ca.issue(f, key, subject, epoch.Add(-2*time.Hour), 30*time.Minute), // expired
		ca.issue(f, key, subject, epoch.Add(time.Hour), time.Hour),         // not yet valid
		ca.serverCert(f, key, subject),
		ca.pem,
	}
	cas := [][]byte{ca.pem, other.pem, append(bytes.Clone(other.pem), ca.pem...), valid, {}}
	for _, cert := range certs {
		for _, bundle := range cas {
			f.Add(cert, bundle, false)
		}
		f.Add(cert, []byte{}, true)
	}
	block, _ := pem.Decode(valid)
	for _, damaged := range [][]byte{
		valid[:len(valid)/2],
		block.Bytes,
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes[:len(block.Bytes)-1]}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: append(bytes.Clone(block.Bytes[:len(block.Bytes)-1]), block.Bytes[len(block.Bytes)-1]^1)}),
		pem.EncodeToMemory(&pem.Block{Type: "TRUSTED CERTIFICATE", Bytes: block.Bytes}),
		{},
	} {
		f.Add(damaged, ca.pem, false)
		f.Add(valid, damaged, false)
	}
	f.Add(valid, append(bytes.Clone(ca.pem), bytes.Repeat([]byte("\n"), csr.MaxCertificateSize)...), false)

	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(ca.pem) {
		f.Fatal("CA does not parse")
	}
	pub := key.Public()

	f.Fuzz(func(t *testing.T, signedCRT, caPEM []byte, useClientCAs bool) {
		id := &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: authv1beta1.AuthParams{
			APIServer: "https://provider.example:6443", CA: caPEM, SignedCRT: signedCRT,
		}}}
		var opts *identity.VerifyOptions
		roots := clientCAs
		if useClientCAs {
			opts = &identity.VerifyOptions{ClientCAs: clientCAs}
		}
		cert, err := identity.Verify(id, consumerID, pub, epoch, opts)
		if err != nil {
			if cert != nil {
				t.Fatalf("Verify returned a certificate and error %q", err)
			}
			for _, s := range []error{identity.ErrMalformed, identity.ErrUntrusted, identity.ErrKeyMismatch,
				identity.ErrExpired, identity.ErrNotYetValid, identity.ErrSubject} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Verify error %q wraps no documented sentinel", err)
		}
		if !useClientCAs {
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(caPEM) {
				t.Fatalf("accepted spec.authParams.ca that holds no certificate")
			}
		}
		want := csr.ControlPlaneSubject(consumerID)
		if cert.Subject.CommonName != want.CommonName || !slices.Equal(cert.Subject.Organization, want.Organization) {
			t.Fatalf("accepted subject CN=%q O=%q", cert.Subject.CommonName, cert.Subject.Organization)
		}
		if !keys.Equal(pub, cert.PublicKey) {
			t.Fatalf("accepted a certificate for key %s", keys.Fingerprint(cert.PublicKey))
		}
		if epoch.Before(cert.NotBefore) || epoch.After(cert.NotAfter) {
			t.Fatalf("accepted a certificate valid from %v to %v at %v", cert.NotBefore, cert.NotAfter, epoch)
		}
		parsed, err := csr.ParseCertificate(signedCRT)
		if err != nil || !parsed.Equal(cert) {
			t.Fatalf("returned certificate is not the first of spec.authParams.signedCRT (%v)", err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: epoch, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("accepted a certificate that does not chain for client auth: %v", err)
		}
	})
}

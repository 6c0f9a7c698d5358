package identity_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	mathrand "math/rand/v2"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/wiretest"
	"github.com/kubepact/kubepact/keys"
)

// The fuzz targets below run their seeds as ordinary tests under go test. Its
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

// fuzzFixture is the consumer's fixed key, the provider's CA, and seeds.
type fuzzFixture struct {
	key       *keys.PrivateKey
	clientCAs *x509.CertPool
	valid     []byte // the certificate of key, issued by ca
	ca        []byte
	seeds     []fuzzIdentity
}

// fuzzIdentity are the fuzzed fields of an Identity.
type fuzzIdentity struct {
	signedCRT, ca []byte
	useClientCAs  bool
	proxyURL      string
	hasProxy      bool
}

func (v fuzzIdentity) identity() *authv1beta1.Identity {
	id := &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: authv1beta1.AuthParams{
		APIServer: "https://provider.example:6443", CA: v.ca, SignedCRT: v.signedCRT,
	}}}
	if v.hasProxy {
		id.Spec.AuthParams.ProxyURL = &v.proxyURL
	}
	return id
}

func newFuzzFixture(f *testing.F) fuzzFixture {
	f.Helper()
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
	var seeds []fuzzIdentity
	cas := [][]byte{ca.pem, other.pem, append(bytes.Clone(other.pem), ca.pem...), valid, {}}
	for _, cert := range certs {
		for _, bundle := range cas {
			seeds = append(seeds, fuzzIdentity{signedCRT: cert, ca: bundle})
		}
		seeds = append(seeds, fuzzIdentity{signedCRT: cert, useClientCAs: true})
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
		seeds = append(seeds, fuzzIdentity{signedCRT: damaged, ca: ca.pem}, fuzzIdentity{signedCRT: valid, ca: damaged})
	}
	seeds = append(seeds, fuzzIdentity{signedCRT: valid, ca: append(bytes.Clone(ca.pem), bytes.Repeat([]byte("\n"), csr.MaxCertificateSize)...)})
	for _, proxy := range []string{"http://proxy.example:3128", "https://proxy.example", "socks5://proxy.example:1080", "http://", "proxy.example:3128", "http://[::1", ""} {
		seeds = append(seeds, fuzzIdentity{signedCRT: valid, ca: ca.pem, proxyURL: proxy, hasProxy: true})
	}

	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(ca.pem) {
		f.Fatal("CA does not parse")
	}
	return fuzzFixture{key: key, clientCAs: clientCAs, valid: valid, ca: ca.pem, seeds: seeds}
}

var verifySentinels = []error{identity.ErrMalformed, identity.ErrUntrusted, identity.ErrKeyMismatch,
	identity.ErrExpired, identity.ErrNotYetValid, identity.ErrSubject, identity.ErrCACertificate, identity.ErrKeyUsage}

// checkVerified fails t unless cert, which Verify returned for id, is the
// consumer's valid ControlPlane client certificate, trusted by roots when
// they are set.
func checkVerified(t *testing.T, id *authv1beta1.Identity, pub crypto.PublicKey, roots *x509.CertPool, cert *x509.Certificate) {
	t.Helper()
	params := id.Spec.AuthParams
	if len(params.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(params.CA) {
		t.Fatalf("accepted spec.authParams.ca that holds no certificate")
	}
	if cert.IsCA {
		t.Fatalf("accepted a CA certificate")
	}
	if len(cert.ExtKeyUsage) > 0 && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageAny) {
		t.Fatalf("accepted extended key usage %v", cert.ExtKeyUsage)
	}
	if p := params.ProxyURL; p != nil {
		u, err := url.Parse(*p)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("accepted proxy URL %q", *p)
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
	parsed, err := csr.ParseCertificate(params.SignedCRT)
	if err != nil || !parsed.Equal(cert) {
		t.Fatalf("returned certificate is not the first of spec.authParams.signedCRT (%v)", err)
	}
	if roots == nil {
		return
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: epoch, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("accepted a certificate that does not chain for client auth: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	fx := newFuzzFixture(f)
	for _, v := range fx.seeds {
		f.Add(v.signedCRT, v.ca, v.useClientCAs, v.proxyURL, v.hasProxy)
	}
	pub := fx.key.Public()

	f.Fuzz(func(t *testing.T, signedCRT, caPEM []byte, useClientCAs bool, proxyURL string, hasProxy bool) {
		id := fuzzIdentity{signedCRT: signedCRT, ca: caPEM, proxyURL: proxyURL, hasProxy: hasProxy}.identity()
		var (
			opts  *identity.VerifyOptions
			roots *x509.CertPool
		)
		if useClientCAs {
			roots = fx.clientCAs
			opts = &identity.VerifyOptions{ClientCAs: roots}
		}
		cert, err := identity.Verify(id, consumerID, pub, epoch, opts)
		if err != nil {
			if cert != nil {
				t.Fatalf("Verify returned a certificate and error %q", err)
			}
			for _, s := range verifySentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Verify error %q wraps no documented sentinel", err)
		}
		checkVerified(t, id, pub, roots, cert)
	})
}

func FuzzDecode(f *testing.F) {
	fx := newFuzzFixture(f)
	for i, v := range fx.seeds {
		if len(v.ca) > csr.MaxCertificateSize {
			continue
		}
		params := v.identity().Spec.AuthParams
		params.APIServer = "https://provider.example:6443"
		id, err := identity.Build("cl-provider", params, &identity.BuildOptions{TenantNamespace: "liqo-tenant-" + consumerID})
		if err != nil {
			continue // Build refuses an empty certificate
		}
		y, err := yaml.Marshal(id)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(y)
		if i == 0 {
			j, err := json.Marshal(id)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(j)
			f.Add(y[:len(y)/2])
			f.Add(bytes.Replace(y, []byte("kind: Identity"), []byte("kind: Tenant"), 1))
			f.Add(bytes.Replace(y, []byte("spec:"), []byte("unknown: 1\nspec:"), 1))
			f.Add(bytes.Replace(y, []byte("signedCRT: "), []byte("signedCRT: \"not base64!\"\n    x: "), 1))
			f.Add(append(bytes.Clone(y), bytes.Repeat([]byte("#"), identity.MaxObjectSize)...))
		}
	}
	f.Add([]byte{})
	f.Add([]byte("null"))

	pub := fx.key.Public()
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := identity.Decode(data)
		if err != nil {
			if id != nil {
				t.Fatalf("Decode returned an Identity and error %q", err)
			}
			if !errors.Is(err, identity.ErrMalformed) {
				t.Fatalf("Decode error %q does not wrap ErrMalformed", err)
			}
			return
		}
		if len(data) == 0 || len(data) > identity.MaxObjectSize {
			t.Fatalf("decoded %d bytes", len(data))
		}
		if id.APIVersion != authv1beta1.SchemeGroupVersion.String() || id.Kind != authv1beta1.IdentityKind {
			t.Fatalf("decoded apiVersion %q kind %q", id.APIVersion, id.Kind)
		}
		// A decoded Identity goes through Verify.
		if cert, err := identity.Verify(id, consumerID, pub, epoch, nil); err == nil {
			checkVerified(t, id, pub, nil, cert)
		} else if !slices.ContainsFunc(verifySentinels, func(s error) bool { return errors.Is(err, s) }) {
			t.Fatalf("Verify error %q wraps no documented sentinel", err)
		}
		// What Decode accepted, marshalled again, decodes to the same
		// Identity.
		if !wiretest.Times(&id.ObjectMeta) {
			return
		}
		out, err := yaml.Marshal(id)
		if err != nil {
			t.Fatalf("Marshal of a decoded Identity: %v", err)
		}
		if len(out) > identity.MaxObjectSize {
			return
		}
		again, err := identity.Decode(out)
		if err != nil {
			t.Fatalf("a marshalled Identity does not decode: %v\n%s", err, out)
		}
		if !apiequality.Semantic.DeepEqual(id, again) {
			t.Fatalf("Identity changed in a round trip:\n%s", cmp.Diff(id, again))
		}
	})
}

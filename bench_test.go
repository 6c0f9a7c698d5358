package kubepact_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

// BenchmarkHandshake runs the whole in-memory handshake for a consumer whose
// cluster key already exists: nonce, Tenant, verification, signing, RBAC,
// Identity, consumer-side checks and the kubeconfig Secret. Each iteration is
// a new consumer ID, so nothing is served from a cache.
//
// It runs on a provider that accepted 10 and 1,000 Tenants before the timer
// starts (prior-tenants=N); the b.N handshakes it times add to them, so keep
// b.N small beside the larger count (-benchtime 200x). A handshake whose cost
// does not grow with the Tenants a provider holds takes the same time in
// both. Between rounds of ten handshakes, the timer stopped, it does the
// handshake's cryptography directly as many times (bareHandshake with every
// check, as BenchmarkBareCryptoAllChecks), and reports that floor's time
// per handshake as floor-ns/op and the handshakes' ratio to it as x-floor:
// measured side by side, both see the same load on the machine.
func BenchmarkHandshake(b *testing.B) {
	for _, prior := range []int{10, 1000} {
		b.Run("prior-tenants="+strconv.Itoa(prior), func(b *testing.B) { benchmarkHandshake(b, prior) })
	}
}

func benchmarkHandshake(b *testing.B, prior int) {
	ctx := context.Background()
	pc, err := memory.NewCluster(providerID, nil)
	if err != nil {
		b.Fatal(err)
	}
	provider, err := provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), nil)
	if err != nil {
		b.Fatal(err)
	}
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		b.Fatal(err)
	}
	newConsumer := func(id string) *kubepact.Consumer {
		ks := &fake.KeyStore{}
		if err := ks.Create(ctx, key); err != nil {
			b.Fatal(err)
		}
		ports := consumer.Ports{Core: consumer.Core{Namespaces: &fake.Namespaces{}, Keys: ks, Identities: &fake.IdentityStore{}, Secrets: &fake.SecretWriter{}}, IdentityKeys: &fake.Keyring{}}
		c, err := consumer.New(id, ports, nil)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	for i := range prior {
		if _, err := kubepact.Authenticate(ctx, newConsumer("cl-prior-"+strconv.Itoa(i)), provider, nil); err != nil {
			b.Fatal(err)
		}
	}
	consumers := make([]*kubepact.Consumer, b.N)
	for i := range consumers {
		consumers[i] = newConsumer("cl-consumer-" + strconv.Itoa(i))
	}
	// The floor is measured between rounds of handshakes, the timer
	// stopped, so that both see the same load on the machine.
	const round = 10
	bare := newBareFixture(b)
	var handshakes, floor time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += round {
		n := min(round, b.N-i)
		start := time.Now()
		for j := range n {
			if _, err := kubepact.Authenticate(ctx, consumers[i+j], provider, nil); err != nil {
				b.Fatal(err)
			}
		}
		handshakes += time.Since(start)
		b.StopTimer()
		start = time.Now()
		for j := range n {
			bareHandshake(b, bare, int64(i+j+2), true)
		}
		floor += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(handshakes)/float64(floor), "x-floor")
}

// bareFixture holds what the bare crypto benchmarks need beforehand, as the
// handshake has it: the consumer's key and the provider's CA.
type bareFixture struct {
	consumerKey ed25519.PrivateKey
	caKey       ed25519.PrivateKey
	ca          *x509.Certificate
}

func newBareFixture(b *testing.B) bareFixture {
	_, consumerKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	_, caKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		b.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	return bareFixture{consumerKey: consumerKey, caKey: caKey, ca: ca}
}

// bareHandshake does the handshake's cryptography with the standard library
// and nothing else: sign the nonce, create the CSR, verify the nonce
// signature, parse and check the CSR, sign the certificate, parse it. With
// allChecks it also signs and verifies a transcript-sized message, as a
// kubepact consumer and provider do, and does the consumer's check that the
// certificate chains to the CA: then it is all the cryptography of
// BenchmarkHandshake.
func bareHandshake(b *testing.B, f bareFixture, serial int64, allChecks bool) {
	var raw [64]byte
	if _, err := rand.Read(raw[:]); err != nil {
		b.Fatal(err)
	}
	nonce := []byte(base64.StdEncoding.EncodeToString(raw[:]))
	sig := ed25519.Sign(f.consumerKey, nonce)
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io"}},
	}, f.consumerKey)
	if err != nil {
		b.Fatal(err)
	}
	if !ed25519.Verify(f.consumerKey.Public().(ed25519.PublicKey), nonce, sig) {
		b.Fatal("nonce signature does not verify")
	}
	if allChecks {
		transcript := make([]byte, 160)
		tsig := ed25519.Sign(f.consumerKey, transcript)
		if !ed25519.Verify(f.consumerKey.Public().(ed25519.PublicKey), transcript, tsig) {
			b.Fatal("transcript signature does not verify")
		}
	}
	req, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		b.Fatal(err)
	}
	if err := req.CheckSignature(); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	certDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: req.Subject,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, f.ca, req.PublicKey, f.caKey)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		b.Fatal(err)
	}
	if allChecks {
		if err := cert.CheckSignatureFrom(f.ca); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareCrypto measures the cryptographic operations of one
// handshake, done directly: the floor below any handshake.
// BenchmarkHandshake measures the fuller floor of
// BenchmarkBareCryptoAllChecks beside itself, in the same run.
func BenchmarkBareCrypto(b *testing.B) {
	f := newBareFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		bareHandshake(b, f, int64(i+2), false)
	}
}

// BenchmarkBareCryptoAllChecks adds what kubepact's handshake checks beyond
// that list: the transcript's signature and the consumer's check of the CA's
// signature on its certificate.
func BenchmarkBareCryptoAllChecks(b *testing.B) {
	f := newBareFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		bareHandshake(b, f, int64(i+2), true)
	}
}

// BenchmarkProviderTenants has one provider, on the in-memory ports, accept
// a Tenant from each of b.N consumers and keep them all: run it with
// -benchtime 10000x for 10,000 tenants. It reports the provider's retained
// heap per tenant (B/tenant: the live heap after the last Accept, less the
// one before the first, over b.N, after a full GC; the consumers' side is
// dropped as it goes) and the time per handshake of the first and the last
// tenth, whose ratio shows whether the cost per operation stays flat as
// tenants accumulate.
func BenchmarkProviderTenants(b *testing.B) {
	ctx := context.Background()
	pc, err := memory.NewCluster(providerID, nil)
	if err != nil {
		b.Fatal(err)
	}
	provider, err := provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), nil)
	if err != nil {
		b.Fatal(err)
	}
	key, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		b.Fatal(err)
	}
	tenth := max(b.N/10, 1)
	var first, last time.Duration
	before := liveHeap()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		ks := &fake.KeyStore{}
		if err := ks.Create(ctx, key); err != nil {
			b.Fatal(err)
		}
		ports := consumer.Ports{Core: consumer.Core{Namespaces: &fake.Namespaces{}, Keys: ks, Identities: &fake.IdentityStore{}, Secrets: &fake.SecretWriter{}}, IdentityKeys: &fake.Keyring{}}
		c, err := consumer.New("cl-consumer-"+strconv.Itoa(i), ports, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kubepact.Authenticate(ctx, c, provider, nil); err != nil {
			b.Fatal(err)
		}
		switch d := time.Since(start); {
		case i < tenth:
			first += d
		case i >= b.N-tenth:
			last += d
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(liveHeap()-before)/float64(b.N), "B/tenant")
	b.ReportMetric(float64(first.Nanoseconds())/float64(tenth), "first-tenth-ns/op")
	b.ReportMetric(float64(last.Nanoseconds())/float64(tenth), "last-tenth-ns/op")
	runtime.KeepAlive(provider)
	runtime.KeepAlive(pc)
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

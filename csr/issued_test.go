package csr_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

// forgingSigner is a csr.Signer gone wrong: it issues, under a CA of its
// own, the client certificate a well-behaved signer would issue at now,
// after forge has changed it.
type forgingSigner struct {
	ca    testCA
	now   time.Time
	forge func(tmpl *x509.Certificate, pub *crypto.PublicKey)
}

func (s forgingSigner) Sign(_ context.Context, r csr.Request) ([]byte, error) {
	lifetime := r.Lifetime
	if lifetime <= 0 {
		lifetime = csr.DefaultMaxLifetime
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               r.CSR.Subject(),
		NotBefore:             s.now.Add(-5 * time.Minute),
		NotAfter:              s.now.Add(lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	pub := r.CSR.PublicKey()
	if s.forge != nil {
		s.forge(tmpl, &pub)
	}
	caCert, err := csr.ParseCertificate(s.ca.pem)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, s.ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

const issuedLifetime = 3 * time.Hour

// forgeries are the certificates a signer must never get past the check,
// each made from the certificate it should have issued, for issuedLifetime
// at epoch.
func forgeries(t *testing.T) []struct {
	name  string
	forge func(tmpl *x509.Certificate, pub *crypto.PublicKey)
} {
	other := testkeys.Generate(t, keys.Ed25519)
	return []struct {
		name  string
		forge func(tmpl *x509.Certificate, pub *crypto.PublicKey)
	}{
		{"another key", func(_ *x509.Certificate, pub *crypto.PublicKey) { *pub = other.Public() }},
		{"another common name", func(c *x509.Certificate, _ *crypto.PublicKey) { c.Subject.CommonName = "cl-other" }},
		{"two common names", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.Subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: oidCommonName, Value: "cl-other"}}
		}},
		{"system:masters added", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.Subject.Organization = append(c.Subject.Organization, "system:masters")
		}},
		{"no organization", func(c *x509.Certificate, _ *crypto.PublicKey) { c.Subject.Organization = nil }},
		{"DNS name", func(c *x509.Certificate, _ *crypto.PublicKey) { c.DNSNames = []string{"kubernetes.default"} }},
		{"CA", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.IsCA, c.KeyUsage = true, c.KeyUsage|x509.KeyUsageCertSign
		}},
		{"cert sign key usage", func(c *x509.Certificate, _ *crypto.PublicKey) { c.KeyUsage |= x509.KeyUsageCertSign }},
		{"server auth", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}},
		{"client and server auth", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.ExtKeyUsage = append(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}},
		{"any usage", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
		}},
		{"no extended key usage", func(c *x509.Certificate, _ *crypto.PublicKey) { c.ExtKeyUsage = nil }},
		{"ten years", func(c *x509.Certificate, _ *crypto.PublicKey) { c.NotAfter = epoch.Add(10 * 365 * 24 * time.Hour) }},
		{"just beyond the lifetime", func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.NotAfter = epoch.Add(issuedLifetime + csr.IssuedSkew + time.Second)
		}},
		{"starts in an hour", func(c *x509.Certificate, _ *crypto.PublicKey) { c.NotBefore = epoch.Add(time.Hour) }},
		{"expired", func(c *x509.Certificate, _ *crypto.PublicKey) { c.NotAfter = epoch.Add(-time.Second) }},
	}
}

func TestCheckIssued(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: issuedLifetime}
	issue := func(t *testing.T, r csr.Request, forge func(*x509.Certificate, *crypto.PublicKey)) []byte {
		t.Helper()
		cert, err := forgingSigner{ca: ca, now: epoch, forge: forge}.Sign(t.Context(), r)
		require.NoError(t, err)
		return cert
	}

	t.Run("accepts", func(t *testing.T) {
		t.Parallel()
		rsaReq := csr.Request{CSR: check(t, testkeys.Generate(t, keys.RSA2048), csr.ControlPlaneSubject(consumerID)), Lifetime: issuedLifetime}
		tests := []struct {
			name string
			r    csr.Request
			cert []byte
			now  time.Time
		}{
			{"as issued", req, issue(t, req, nil), epoch},
			{"with its CA after it", req, append(issue(t, req, nil), ca.pem...), epoch},
			{"at the latest end", req, issue(t, req, func(c *x509.Certificate, _ *crypto.PublicKey) {
				c.NotAfter = epoch.Add(issuedLifetime + csr.IssuedSkew)
			}), epoch},
			{"signed a little later", req, issue(t, req, func(c *x509.Certificate, _ *crypto.PublicKey) {
				c.NotBefore, c.NotAfter = epoch.Add(csr.IssuedSkew), epoch.Add(issuedLifetime+csr.IssuedSkew)
			}), epoch},
			{"shortened", req, issue(t, req, func(c *x509.Certificate, _ *crypto.PublicKey) { c.NotAfter = epoch.Add(time.Minute) }), epoch},
			{"checked later", req, issue(t, req, nil), epoch.Add(2 * time.Hour)},
			{"RSA with key encipherment", rsaReq, issue(t, rsaReq, func(c *x509.Certificate, _ *crypto.PublicKey) {
				c.KeyUsage |= x509.KeyUsageKeyEncipherment
			}), epoch},
			{"signer's default lifetime", csr.Request{CSR: req.CSR}, issue(t, csr.Request{CSR: req.CSR}, nil), epoch},
			{"raised to ten minutes", csr.Request{CSR: req.CSR, Lifetime: time.Minute},
				issue(t, csr.Request{CSR: req.CSR, Lifetime: 10 * time.Minute}, nil), epoch},
			{"from the local CA", req, func() []byte {
				cert, err := ca.ca.Sign(t.Context(), req)
				require.NoError(t, err)
				return cert
			}(), epoch},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				leaf, err := csr.CheckIssued(tt.cert, tt.r, tt.now)
				require.NoError(t, err)
				require.True(t, keys.Equal(tt.r.CSR.PublicKey(), leaf.PublicKey))
			})
		}
	})
	t.Run("refuses", func(t *testing.T) {
		t.Parallel()
		for _, tt := range forgeries(t) {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				leaf, err := csr.CheckIssued(issue(t, req, tt.forge), req, epoch)
				require.ErrorIs(t, err, csr.ErrBadCertificate)
				require.Nil(t, leaf)
			})
		}
	})
	t.Run("refuses malformed", func(t *testing.T) {
		t.Parallel()
		for _, in := range [][]byte{nil, []byte("garbage"), req.CSR.PEM()} {
			_, err := csr.CheckIssued(in, req, epoch)
			require.ErrorIs(t, err, csr.ErrBadCertificate)
			require.ErrorIs(t, err, csr.ErrMalformedCertificate)
		}
	})
	t.Run("refuses longer than the signer's default", func(t *testing.T) {
		t.Parallel()
		r := csr.Request{CSR: req.CSR}
		cert := issue(t, r, func(c *x509.Certificate, _ *crypto.PublicKey) {
			c.NotAfter = epoch.Add(csr.DefaultMaxLifetime + csr.IssuedSkew + time.Second)
		})
		_, err := csr.CheckIssued(cert, r, epoch)
		require.ErrorIs(t, err, csr.ErrBadCertificate)
	})
	t.Run("refuses another request", func(t *testing.T) {
		t.Parallel()
		other := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ResourceSliceSubject(consumerID, sliceName)), Lifetime: issuedLifetime}
		_, err := csr.CheckIssued(issue(t, req, nil), other, epoch)
		require.ErrorIs(t, err, csr.ErrBadCertificate)
	})
}

// TestIssueRefusesBadCertificates checks that Issue neither returns nor
// caches a certificate its signer should not have issued.
func TestIssueRefusesBadCertificates(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: issuedLifetime}
	for _, tt := range forgeries(t) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &memCache{}
			cert, err := csr.Issue(t.Context(), forgingSigner{ca: ca, now: epoch, forge: tt.forge}, c, cpKey, req, epoch)
			require.ErrorIs(t, err, csr.ErrBadCertificate)
			require.Nil(t, cert)
			require.Zero(t, c.puts, "nothing cached")
			require.Empty(t, c.entries)
		})
	}
}

// TestIssueResignsBadCachedCertificates checks that a cached certificate
// for the same CSR that fails the check, as one written into the cache by
// someone else would, is replaced by a certificate from the signer.
func TestIssueResignsBadCachedCertificates(t *testing.T) {
	t.Parallel()
	ca := newCA(t, caLifetime, csr.LocalCAOptions{})
	req := csr.Request{CSR: check(t, testkeys.Generate(t, keys.Ed25519), csr.ControlPlaneSubject(consumerID)), Lifetime: issuedLifetime}
	for _, tt := range forgeries(t) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			planted, err := forgingSigner{ca: ca, now: epoch, forge: tt.forge}.Sign(t.Context(), req)
			require.NoError(t, err)
			c := &memCache{entries: map[csr.CacheKey]csr.CacheEntry{cpKey: {CSR: req.CSR.PEM(), Certificate: planted}}}
			s := &countingSigner{Signer: ca.ca}

			got, err := csr.Issue(t.Context(), s, c, cpKey, req, epoch)
			require.NoError(t, err)
			require.Equal(t, 1, s.count(), "signed again")
			require.False(t, bytes.Equal(planted, got), "the planted certificate is not returned")
			_, err = csr.CheckIssued(got, req, epoch)
			require.NoError(t, err)
			require.Equal(t, csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: got}, c.entries[cpKey], "the planted entry is replaced")
		})
	}
}

func TestRenewAt(t *testing.T) {
	t.Parallel()
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: nb, NotAfter: nb.Add(900 * time.Hour)}
	got := csr.RenewAt(cert)
	if got.Before(nb.Add(450*time.Hour)) || !got.Before(nb.Add(600*time.Hour)) {
		t.Fatalf("RenewAt = %v, want from half of 900 hours on, before two thirds", got)
	}
}

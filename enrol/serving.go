package enrol

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/kubepact/kubepact/keys"
)

// ErrEndpointCertificate reports an enrolment endpoint whose TLS
// certificate no committed enrolment key issued, or that is not valid now
// for serving.
var ErrEndpointCertificate = errors.New("the enrolment endpoint's certificate is not the provider's")

// ServingCertificate returns a PEM TLS serving certificate for servingKey,
// valid for dnsNames from now for lifetime, issued by the enrolment key
// key of provider providerID. A consumer authenticates the endpoint by
// the enrolment key it committed (VerifyServingCertificate), as it
// verifies a grant: no CA and no host name enter into it.
func ServingCertificate(rnd io.Reader, key crypto.Signer, providerID string, servingKey crypto.PublicKey, dnsNames []string,
	now time.Time, lifetime time.Duration) ([]byte, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	serial, err := rand.Int(rnd, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	issuer := pkix.Name{CommonName: "kubepact enrolment key of " + providerID}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "kubepact enrolment endpoint of " + providerID},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rnd, tmpl, &x509.Certificate{Subject: issuer}, servingKey, key)
	if err != nil {
		return nil, fmt.Errorf("issuing the enrolment endpoint's certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// VerifyServingCertificate checks the DER certificate an enrolment
// endpoint presented: issued by one of enrolmentKeys (its signature
// verifies with one), valid at now, for serving.
func VerifyServingCertificate(der []byte, enrolmentKeys []crypto.PublicKey, now time.Time) error {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEndpointCertificate, err)
	}
	signed := false
	for _, k := range enrolmentKeys {
		if keys.Check(k) == nil && (&x509.Certificate{PublicKey: k}).CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil {
			signed = true
			break
		}
	}
	switch {
	case !signed:
		return fmt.Errorf("%w: no committed enrolment key issued it", ErrEndpointCertificate)
	case now.Before(c.NotBefore) || now.After(c.NotAfter):
		return fmt.Errorf("%w: valid from %s to %s", ErrEndpointCertificate, c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageServerAuth {
			return nil
		}
	}
	return fmt.Errorf("%w: not for serving", ErrEndpointCertificate)
}

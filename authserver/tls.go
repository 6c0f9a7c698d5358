package authserver

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

// CAKey is the key of a serving Secret holding the PEM CA that consumers
// trust for the Server (the Authenticate Remote.CA).
const CAKey = "ca.crt"

// ErrServingSecret reports a Secret that does not hold a serving
// certificate and its key.
var ErrServingSecret = errors.New("not a kubernetes.io/tls Secret with a serving certificate")

// TLSConfig returns the TLS configuration serving the certificate and key
// of a kubernetes.io/tls Secret (tls.crt, tls.key), at least TLS 1.2.
func TLSConfig(s *corev1.Secret) (*tls.Config, error) {
	if s == nil || s.Type != corev1.SecretTypeTLS {
		return nil, ErrServingSecret
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		// The parser's message may describe the key; say only which Secret.
		return nil, fmt.Errorf("%w: Secret %s/%s: the certificate and key do not load", ErrServingSecret, s.Namespace, s.Name)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ServingOptions tunes ServingSecret. The zero value, like a nil pointer,
// uses crypto/rand.Reader, time.Now and a lifetime of one year.
type ServingOptions struct {
	Rand     io.Reader
	Now      time.Time
	Lifetime time.Duration
}

// ServingSecret returns a kubernetes.io/tls Secret namespace/name holding a
// new CA (ca.crt, its key is discarded) and a serving certificate it
// signed for hosts (DNS names or IP addresses), with the certificate's
// ECDSA P-256 key. Consumers pin ca.crt.
func ServingSecret(namespace, name string, hosts []string, opts *ServingOptions) (*corev1.Secret, error) {
	var o ServingOptions
	if opts != nil {
		o = *opts
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Lifetime <= 0 {
		o.Lifetime = 365 * 24 * time.Hour
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: no host to serve", ErrServingSecret)
	}
	caPEM, caKey, err := csr.GenerateCA(o.Rand, "kubepact-authentication-server-ca", o.Now, o.Lifetime)
	if err != nil {
		return nil, err
	}
	ca, err := csr.ParseCertificate(caPEM)
	if err != nil {
		return nil, err
	}
	key, err := keys.Generate(o.Rand, keys.ECDSAP256)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(o.Rand, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    o.Now.Add(-5 * time.Minute),
		NotAfter:     o.Now.Add(o.Lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(o.Rand, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	keyPEM, err := keys.MarshalPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: keyPEM,
			CAKey:                   caPEM,
		},
	}, nil
}

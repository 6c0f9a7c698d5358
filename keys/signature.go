package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// ErrBadSignature reports a signature that does not verify.
var ErrBadSignature = errors.New("signature does not verify")

// SignMessage signs msg with s the way Liqo signs a nonce: pure Ed25519 over
// msg, PKCS#1 v1.5 over SHA-256 for RSA, ASN.1 ECDSA over SHA-256. r supplies
// randomness where the algorithm needs it (crypto/rand.Reader when nil).
func SignMessage(r io.Reader, s crypto.Signer, msg []byte) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no signer", ErrUnsupported)
	}
	switch s.Public().(type) {
	case ed25519.PublicKey:
		return s.Sign(r, msg, crypto.Hash(0))
	case *rsa.PublicKey, *ecdsa.PublicKey:
		if r == nil {
			r = rand.Reader
		}
		sum := sha256.Sum256(msg)
		return s.Sign(r, sum[:], crypto.SHA256)
	}
	return nil, fmt.Errorf("%w: %T", ErrUnsupported, s.Public())
}

// VerifyMessage checks a signature made by SignMessage. It returns an error
// wrapping ErrBadSignature when sig does not verify.
func VerifyMessage(pub crypto.PublicKey, msg, sig []byte) error {
	if err := Check(pub); err != nil {
		return err
	}
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, msg, sig)
	case *rsa.PublicKey:
		sum := sha256.Sum256(msg)
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(msg)
		ok = ecdsa.VerifyASN1(k, sum[:], sig)
	}
	if !ok {
		return ErrBadSignature
	}
	return nil
}

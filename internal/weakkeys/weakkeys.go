// Package weakkeys makes the Ed25519 public keys that no private key stands
// behind, for tests that must see them refused: the eight points of small
// order, the non-canonical encodings of points, and a crypto.Signer that
// "signs" for such a key without any secret.
package weakkeys

import (
	"crypto"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"io"

	"filippo.io/edwards25519"
)

// order8 is one point of order 8: its multiples are the whole 8-torsion
// subgroup.
const order8 = "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"

// SmallOrder returns the canonical encodings of the eight points of small
// order (orders 1, 2, 4 and 8), each computed as a multiple of one point of
// order 8, with the order of each.
func SmallOrder() (points [][]byte, orders []int) {
	b, err := hex.DecodeString(order8)
	if err != nil {
		panic(err)
	}
	gen, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		panic(err)
	}
	p := edwards25519.NewIdentityPoint()
	for range 8 {
		points = append(points, p.Bytes())
		orders = append(orders, order(p))
		p = new(edwards25519.Point).Add(p, gen)
	}
	return points, orders
}

// order returns the order of a point of the 8-torsion subgroup.
func order(p *edwards25519.Point) int {
	q := new(edwards25519.Point).Set(p)
	for n := 1; n <= 8; n++ {
		if q.Equal(edwards25519.NewIdentityPoint()) == 1 {
			return n
		}
		q.Add(q, p)
	}
	panic(fmt.Sprintf("point %x is not of small order", p.Bytes()))
}

// NonCanonical returns every non-canonical encoding of a point: y written
// as y + p (possible for y < 19), and x = 0 written with its sign bit set.
// Each decodes, under edwards25519's lenient decoding, to a valid point;
// small reports whether that point has small order.
func NonCanonical() (encodings [][]byte, small []bool) {
	// p = 2^255 - 19, little-endian.
	for y := range 19 {
		for _, sign := range []byte{0, 0x80} {
			var enc [32]byte
			enc[0] = byte(0xed + y)
			for i := 1; i < 31; i++ {
				enc[i] = 0xff
			}
			enc[31] = 0x7f | sign
			if add(&encodings, &small, enc[:]) {
				continue
			}
		}
	}
	// x = 0 with the sign bit set: the points with y = 1 and y = -1.
	for _, y := range []string{
		"0100000000000000000000000000000000000000000000000000000000000000",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	} {
		enc, _ := hex.DecodeString(y)
		enc[31] |= 0x80
		add(&encodings, &small, enc)
	}
	return encodings, small
}

func add(encodings *[][]byte, small *[]bool, enc []byte) bool {
	p, err := new(edwards25519.Point).SetBytes(enc)
	if err != nil {
		return false // not on the curve
	}
	*encodings = append(*encodings, enc)
	*small = append(*small, new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1)
	return true
}

// Signer claims the public key pub and answers every Sign with R = the
// neutral point and S = 0: a signature that verifies under a key of small
// order for every message whose challenge is a multiple of the key's order
// (all messages for the neutral point). It holds no secret.
type Signer struct{ pub ed25519.PublicKey }

// NewSigner returns a Signer claiming pub.
func NewSigner(pub []byte) *Signer { return &Signer{pub: ed25519.PublicKey(pub)} }

// Public returns the claimed key.
func (s *Signer) Public() crypto.PublicKey { return s.pub }

// Sign returns the forged signature, whatever the message.
func (s *Signer) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	sig := make([]byte, ed25519.SignatureSize)
	copy(sig, edwards25519.NewIdentityPoint().Bytes())
	return sig, nil
}

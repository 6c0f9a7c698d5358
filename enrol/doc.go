// Package enrol is peering from Git with public material only: the
// consumer's enrolment request, which the provider's administrators commit
// (an AuthorizedConsumer), and the grant, which the provider's controller
// signs with its enrolment key and a consumer that committed that key (a
// TrustedProvider) verifies before it trusts anything in it.
//
// The design is the one of SSH's authorized_keys: each side commits the
// other's public keys, and nothing secret ever leaves a cluster.
//
//   - A Request is the consumer's CSR for a key of this identity (never
//     its cluster key), signed by its cluster key over a domain-separated
//     transcript of the provider ID, the consumer ID and the SHA-256 of
//     the CSR. It carries no nonce and no expiry, and needs neither: it is
//     worth something only where a provider's administrator committed it,
//     for the keys committed beside it, and what it yields (a certificate)
//     is of use only to the holder of the CSR's private key. Replayed or
//     relayed, it gets nothing: a provider grants only a committed request
//     that names it.
//   - A Commitment is what a provider learns from its AuthorizedConsumer:
//     the consumer ID, the keys that alone may hold an identity for it,
//     and the committed request.
//   - A Grant is the Identity the provider issued for a committed request,
//     signed by the provider's enrolment key over a domain-separated
//     encoding of every field. The enrolment key signs nothing else but
//     the enrolment endpoint's TLS certificates, which are X.509 DER and
//     cannot be read as a grant's encoding, or a grant as them.
//
// Everything here is pure: it parses, signs and verifies, and reads and
// writes nothing.
package enrol

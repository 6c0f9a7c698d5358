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
//
// # Errors
//
// Every refusal wraps one sentinel, for errors.Is: ErrMalformed (an object
// that does not parse), ErrBadRequest (a request no committed key signed,
// or made for another provider or consumer), ErrClusterKeyCSR (a CSR for
// a committed cluster key), ErrNotCommitted (a key the AuthorizedConsumer
// does not list), ErrBadGrant (a grant no committed enrolment key signed,
// or for another provider, consumer, request or namespace), ErrCAPin (a
// grant whose CA does not hold the pinned key) and ErrEndpointCertificate
// (an endpoint certificate no committed enrolment key issued, or not valid
// now). Errors name IDs and key fingerprints, never a signature's or a
// CSR's bytes.
//
// # Security
//
// The enrolment key signs two things only: grants, whose encoding starts
// with the length of GrantContext, and the endpoint's X.509 certificates,
// which start with a DER SEQUENCE; neither parses as the other. A request
// and a grant are each bound to both IDs and to the CSR's SHA-256, so
// neither can be replayed to another provider or consumer, or for another
// key.
//
// # Concurrency
//
// Functions and the methods of Commitment are safe for concurrent use;
// nothing here holds state.
package enrol

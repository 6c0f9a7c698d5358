package controllers

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Reasons of the Events the reconcilers record. Normal Events report a step
// done; Warning Events report why an object was refused or a step failed.
const (
	// ReasonNonceGenerated: the nonce Secret got its nonce (Normal).
	ReasonNonceGenerated = "NonceGenerated"
	// ReasonIssueNonceFailed: issuing the nonce failed (an API error); it
	// is retried.
	ReasonIssueNonceFailed = "IssueNonceFailed"
	// ReasonInvalidNonceSecret: a Secret labelled liqo.io/nonce that is not
	// the liqo-nonce Secret in the tenant namespace of the cluster ID it is
	// labelled with; it gets no nonce.
	ReasonInvalidNonceSecret = "InvalidNonceSecret"

	// ReasonTenantAccepted: the Tenant was verified, its certificate signed,
	// its RBAC bound and its status filled (Normal).
	ReasonTenantAccepted = "TenantAccepted"
	// ReasonCertificatePending: the Tenant's CSR is submitted and waits for
	// the API server's signer (Normal); the CSR's update requeues it.
	ReasonCertificatePending = "CertificatePending"
	// ReasonTenantRemoved: a deleted Tenant's binding, cached certificate
	// and nonce were removed, and then kubepact's finalizer (Normal).
	ReasonTenantRemoved = "TenantRemoved"
	// ReasonInvalidTenant: the Tenant is malformed or misplaced (name,
	// namespace, cluster ID, key, proxy URL).
	ReasonInvalidTenant = "InvalidTenant"
	// ReasonNonceNotFound: no nonce was issued to the Tenant's consumer.
	ReasonNonceNotFound = "NonceNotFound"
	// ReasonNonceRedeemed: the nonce was redeemed by a Tenant of another key.
	ReasonNonceRedeemed = "NonceRedeemed"
	// ReasonNonceExpired: the nonce expired before the Tenant redeemed it.
	ReasonNonceExpired = "NonceExpired"
	// ReasonInvalidSignature: the Tenant's nonce signature does not verify
	// under its key.
	ReasonInvalidSignature = "InvalidSignature"
	// ReasonTranscriptRejected: the Tenant's transcript is missing (Strict),
	// does not match the handshake, or expired.
	ReasonTranscriptRejected = "TranscriptRejected"
	// ReasonCSRRejected: the Tenant's CSR breaks the provider's policy.
	ReasonCSRRejected = "CSRRejected"
	// ReasonPrivilegedUser: the consumer's cluster ID names a user that
	// already holds permissions on the provider.
	ReasonPrivilegedUser = "PrivilegedUser"
	// ReasonConsumerPrivileged: an accepted consumer's user, or a group of
	// its certificate, was granted a permission kubepact never grants
	// (rbac.CheckUnprivileged, judged again when a binding naming it
	// changes): its bindings are deleted and its certificate is not
	// re-signed; the certificate already issued stays valid until it
	// expires. Accepted again once the grant goes.
	ReasonConsumerPrivileged = "ConsumerPrivileged"
	// ReasonIdentityHeld: another key holds a live certificate for the
	// consumer's ID (lifecycle.HeldError); refused until it expires or the
	// provider forgets the consumer.
	ReasonIdentityHeld = "IdentityHeld"
	// ReasonAPIServerURLUnknown: the provider does not know the URL
	// consumers reach its API server at (kubepact.ErrNoEndpoint): set
	// --api-server-url, or publish kube-public/cluster-info.
	ReasonAPIServerURLUnknown = "APIServerURLUnknown"
	// ReasonPeerRoleMissing: a ClusterRole consumers are bound to is not
	// installed (rbac.MissingRoleError); retried with backoff until an
	// administrator installs it (config/roles, kubepact install roles).
	ReasonPeerRoleMissing = "PeerRoleMissing"
	// ReasonCSRDenied: the CSR was denied.
	ReasonCSRDenied = "CSRDenied"
	// ReasonSigningFailed: the signer failed, or issued a certificate that is
	// not the one asked for.
	ReasonSigningFailed = "SigningFailed"
	// ReasonAcceptFailed: accepting the Tenant failed for another reason,
	// such as an API error; it is retried.
	ReasonAcceptFailed = "AcceptFailed"
	// ReasonRemoveFailed: cleaning up after a deleted Tenant failed; it is
	// retried.
	ReasonRemoveFailed = "RemoveFailed"

	// ReasonNonceSigned: the signed-nonce Secret got its signature (Normal).
	ReasonNonceSigned = "NonceSigned"
	// ReasonInvalidSignedNonceSecret: a Secret labelled liqo.io/signed-nonce
	// that is not the liqo-signed-nonce Secret in the tenant namespace of the
	// cluster ID it is labelled with; nothing is signed.
	ReasonInvalidSignedNonceSecret = "InvalidSignedNonceSecret"
	// ReasonNotTenantNamespace: a namespace that has a tenant namespace's
	// name but not its labels (liqo.io/tenant-namespace: "true",
	// liqo.io/remote-cluster-id: the peer's ID), so no peer was set up
	// there and someone else may hold rights in it: a liqo-signed-nonce
	// Secret there gets nothing signed, and a handshake that would adopt it
	// stops (tenant.ErrNotTenantNamespace).
	ReasonNotTenantNamespace = "NotTenantNamespace"
	// ReasonMalformedNonce: data.nonce is not a nonce (88 characters of
	// standard base64 encoding 64 bytes); nothing is signed.
	ReasonMalformedNonce = "MalformedNonce"
	// ReasonSignedNonceMismatch: data.signedNonce is not this cluster's
	// signature over data.nonce; kubepact never overwrites it.
	ReasonSignedNonceMismatch = "SignedNonceMismatch"
	// ReasonInvalidProxyURL: data.proxyURL (TenantProxyURLKey) is not an
	// absolute http or https URL; nothing is signed.
	ReasonInvalidProxyURL = "InvalidProxyURL"
	// ReasonSigningNonceFailed: reading the cluster key, building the
	// Tenant or writing the signature failed; it is retried.
	ReasonSigningNonceFailed = "SigningNonceFailed"
	// ReasonKeyUnattested: a key found in the key namespace under the name
	// of an identity's own key was not made by this cluster's kubepact
	// (keys.ErrUnattested): it is never used, nothing is signed for it, and
	// it stays until an administrator removes it (Warning, final).
	ReasonKeyUnattested = "KeyUnattested"
	// ReasonKeysNotAdopted: at start, the keys of its own that the consumer
	// kept before it attested keys could not be attested; the next start
	// tries again (logged).
	ReasonKeysNotAdopted = "KeysNotAdopted"

	// ReasonIdentityApplied: the Identity's kubeconfig Secret was written
	// and its status points at it (Normal).
	ReasonIdentityApplied = "IdentityApplied"
	// ReasonInvalidIdentity: the Identity is malformed, misplaced, for
	// another provider, or its certificate is not the consumer's.
	ReasonInvalidIdentity = "InvalidIdentity"
	// ReasonIdentityRejected: the provider refuses the Identity's
	// credentials, or takes them for another user.
	ReasonIdentityRejected = "IdentityRejected"
	// ReasonApplyFailed: applying the Identity failed for another reason,
	// such as an API error or an unreachable provider; it is retried.
	ReasonApplyFailed = "ApplyFailed"

	// ReasonTenantCordoned: the Tenant is Cordoned and its ResourceSlices
	// are marked so (Normal).
	ReasonTenantCordoned = "TenantCordoned"
	// ReasonTenantDrained: the Tenant is Drained: its bindings,
	// ResourceSlices and NamespaceMaps are deleted (Normal); a drained
	// Tenant is refused with this reason if accepted again.
	ReasonTenantDrained = "TenantDrained"
	// ReasonEnforceFailed: enforcing the Tenant's condition failed; it is
	// retried.
	ReasonEnforceFailed = "EnforceFailed"
	// ReasonConsumerRevoked: the consumer's certificates were revoked (its
	// Tenant was drained or deleted) and may still be valid: it is not
	// bound again before they expire, unless the provider's administrator
	// readmits it. The Tenant is reconciled again when the record ends.
	ReasonConsumerRevoked = "ConsumerRevoked"
	// ReasonTransitionRefused: a change of tenantCondition the rules refuse.
	ReasonTransitionRefused = "TransitionRefused"
)

// reasonOf returns the Event reason for err and whether err is terminal:
// the object itself is refused and retrying the same object cannot help.
// fallback is the reason of any other error, which is transient.
func reasonOf(err error, fallback string) (string, bool) {
	var denied *csr.DeniedError
	switch {
	case errors.Is(err, lifecycle.ErrRevoked):
		return ReasonConsumerRevoked, true
	case errors.Is(err, lifecycle.ErrDrained):
		return ReasonTenantDrained, true
	case errors.Is(err, lifecycle.ErrTransition):
		return ReasonTransitionRefused, true
	case errors.Is(err, nonce.ErrRedeemed):
		return ReasonNonceRedeemed, true
	case errors.Is(err, nonce.ErrExpired):
		return ReasonNonceExpired, true
	case errors.Is(err, nonce.ErrNotFound), errors.Is(err, nonce.ErrMalformed):
		return ReasonNonceNotFound, true
	case errors.Is(err, tenant.ErrTranscriptMissing), errors.Is(err, tenant.ErrTranscriptMismatch),
		errors.Is(err, tenant.ErrTranscriptExpired):
		return ReasonTranscriptRejected, true
	case errors.Is(err, keys.ErrBadSignature):
		return ReasonInvalidSignature, true
	case errors.Is(err, rbac.ErrPrivilegedUser):
		return ReasonPrivilegedUser, true
	case errors.Is(err, lifecycle.ErrIdentityHeld):
		return ReasonIdentityHeld, true
	case errors.Is(err, kubepact.ErrNoEndpoint):
		return ReasonAPIServerURLUnknown, true
	case errors.Is(err, tenant.ErrNotTenantNamespace):
		return ReasonNotTenantNamespace, true
	case errors.Is(err, rbac.ErrMissingRole):
		return ReasonPeerRoleMissing, false
	case errors.As(err, &denied):
		return ReasonCSRDenied, true
	case errors.Is(err, csr.ErrMalformed), errors.Is(err, csr.ErrSignature), errors.Is(err, csr.ErrCommonName),
		errors.Is(err, csr.ErrOrganization), errors.Is(err, csr.ErrSAN), errors.Is(err, csr.ErrKeyMismatch):
		return ReasonCSRRejected, true
	case errors.Is(err, csr.ErrFailed), errors.Is(err, csr.ErrBadCertificate):
		return ReasonSigningFailed, false
	case errors.Is(err, identity.ErrRejected), errors.Is(err, identity.ErrWrongUser):
		return ReasonIdentityRejected, true
	case errors.Is(err, identity.ErrMalformed), errors.Is(err, identity.ErrUntrusted), errors.Is(err, identity.ErrKeyMismatch),
		errors.Is(err, identity.ErrExpired), errors.Is(err, identity.ErrNotYetValid), errors.Is(err, identity.ErrSubject),
		errors.Is(err, identity.ErrCACertificate), errors.Is(err, identity.ErrKeyUsage), errors.Is(err, identity.ErrInvalidServer),
		errors.Is(err, identity.ErrWrongProvider):
		return ReasonInvalidIdentity, true
	case errors.Is(err, clusterid.ErrInvalid), errors.Is(err, keys.ErrMalformed), errors.Is(err, keys.ErrUnsupported),
		errors.Is(err, keys.ErrWeak), errors.Is(err, keys.ErrWeakKey), errors.Is(err, tenant.ErrInvalidProxyURL),
		errors.Is(err, tenant.ErrMalformed), errors.Is(err, kubepact.ErrInvalidConfig):
		return ReasonInvalidTenant, true
	}
	return fallback, false
}

// transient reports whether err is worth retrying with backoff: an API
// error, a network error or a deadline. Anything else a step returns
// describes the object, and is terminal.
func transient(err error) bool {
	var status apierrors.APIStatus
	var netErr net.Error
	return errors.As(err, &status) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Reasons of the Events of the ResourceSlice reconcilers and the replicator.
const (
	// ReasonSliceAccepted: the provider authenticated the ResourceSlice and
	// accepted its resources; its certificate is signed, its RBAC bound and
	// its status filled (Normal).
	ReasonSliceAccepted = "ResourceSliceAccepted"
	// ReasonSliceResourcesDenied: the slice is authenticated but its
	// resources are denied (tenant cordoned or drained, class not offered)
	// (Normal).
	ReasonSliceResourcesDenied = "ResourceSliceResourcesDenied"
	// ReasonSliceDenied: the provider denied the slice's authentication
	// (namespace, cluster IDs, Tenant, CSR, privileged group).
	ReasonSliceDenied = "ResourceSliceDenied"
	// ReasonSliceFailed: judging or cleaning up after the slice failed for
	// another reason, such as an API error; it is retried.
	ReasonSliceFailed = "ResourceSliceFailed"
	// ReasonSliceRemoved: a deleted slice's cached certificate, and the
	// bindings no other slice needs, were removed (Normal, provider); or
	// its Identity, kubeconfig Secret and key (Normal, consumer).
	ReasonSliceRemoved = "ResourceSliceRemoved"
	// ReasonSliceIdentityApplied: the slice's Identity and kubeconfig
	// Secret were written (Normal).
	ReasonSliceIdentityApplied = "ResourceSliceIdentityApplied"
	// ReasonSliceIdentityRejected: the credentials in the slice's status
	// failed the consumer's checks (bad or foreign certificate, another
	// endpoint, refused by the provider): nothing was written.
	ReasonSliceIdentityRejected = "ResourceSliceIdentityRejected"
	// ReasonInvalidSlice: the local slice is misplaced or names another
	// consumer or provider.
	ReasonInvalidSlice = "InvalidResourceSlice"
	// ReasonReplicationFailed: copying an object to the provider, or its
	// status back, failed; it is retried.
	ReasonReplicationFailed = "ReplicationFailed"
	// ReasonSliceLimitReached: the slice's consumer has as many older live
	// slices as may get certificates (resourceslice.ErrSliceLimit):
	// nothing is signed; the slice is judged again when a slice of the
	// consumer is deleted.
	ReasonSliceLimitReached = "SliceLimitReached"
	// ReasonRekeyTooSoon: the slice asks for a certificate for another CSR
	// too soon after its last (resourceslice.ErrRekeyTooSoon): nothing is
	// signed, it keeps the certificate it holds, and it is judged again
	// when the time has passed.
	ReasonRekeyTooSoon = "RekeyTooSoon"
	// ReasonCertificateRateLimited: the slice's consumer had as many
	// certificates for new requests signed in the last hour as it may
	// (resourceslice.ErrCertificateRate): nothing is signed; the slice is
	// judged again when one leaves the hour.
	ReasonCertificateRateLimited = "CertificateRateLimited"
)

// boundReason returns the Event reason naming the bound err is over.
func boundReason(err error) string {
	switch {
	case errors.Is(err, resourceslice.ErrSliceLimit):
		return ReasonSliceLimitReached
	case errors.Is(err, resourceslice.ErrRekeyTooSoon):
		return ReasonRekeyTooSoon
	default:
		return ReasonCertificateRateLimited
	}
}

// Reasons of the Events of the renewal reconcilers.
const (
	// ReasonRenewAnswered: the provider filled a Renew's status (Normal).
	ReasonRenewAnswered = "RenewAnswered"
	// ReasonRenewWaiting: the Renew's consumer has no accepted Tenant yet
	// (Normal); the Tenant's status requeues it.
	ReasonRenewWaiting = "RenewWaiting"
	// ReasonInvalidRenew: the Renew is misplaced, names another consumer or
	// identity, or its fields do not parse; it is not answered.
	ReasonInvalidRenew = "InvalidRenew"
	// ReasonRenewRefused: the Renew's consumer is Drained, or revoked by a
	// revocation record in force; its certificates are not renewed.
	ReasonRenewRefused = "RenewRefused"
	// ReasonRenewTooEarly: the Renew asks for a new key before half the
	// lifetime of the certificate its consumer holds; it is answered then.
	ReasonRenewTooEarly = "RenewTooEarly"
	// ReasonRenewFailed: answering or applying a renewal failed for another
	// reason, such as an API error; it is retried.
	ReasonRenewFailed = "RenewFailed"
	// ReasonIdentityRenewed: the consumer switched its kubeconfig to a
	// renewed certificate (Normal).
	ReasonIdentityRenewed = "IdentityRenewed"
)

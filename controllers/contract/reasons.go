package contract

// Reasons of the Events the reconcilers record. Normal Events report a step
// done; Warning Events report why an object was refused or a step failed.
// Beside each Warning reason, "Final." marks a refusal for good ([Final]),
// "Blocking." one that waits for an administrator ([Blocking]); any other
// is retried by the controller that records it, and a tool waiting for it
// waits until its own timeout.
const (
	// ReasonNonceGenerated: the nonce Secret got its nonce (Normal).
	ReasonNonceGenerated = "NonceGenerated"
	// ReasonIssueNonceFailed: issuing the nonce failed (an API error); it
	// is retried.
	ReasonIssueNonceFailed = "IssueNonceFailed"
	// ReasonInvalidNonceSecret: a Secret labelled liqo.io/nonce that is not
	// the liqo-nonce Secret in the tenant namespace of the cluster ID it is
	// labelled with; it gets no nonce.
	// Final.
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
	// Final.
	ReasonInvalidTenant = "InvalidTenant"
	// ReasonNonceNotFound: no nonce was issued to the Tenant's consumer.
	// Final.
	ReasonNonceNotFound = "NonceNotFound"
	// ReasonNonceRedeemed: the nonce was redeemed by a Tenant of another key.
	// Final.
	ReasonNonceRedeemed = "NonceRedeemed"
	// ReasonNonceExpired: the nonce expired before the Tenant redeemed it.
	// Final.
	ReasonNonceExpired = "NonceExpired"
	// ReasonInvalidSignature: the Tenant's nonce signature does not verify
	// under its key.
	// Final.
	ReasonInvalidSignature = "InvalidSignature"
	// ReasonTranscriptRejected: the Tenant's transcript is missing (Strict),
	// does not match the handshake, or expired.
	// Final.
	ReasonTranscriptRejected = "TranscriptRejected"
	// ReasonCSRRejected: the Tenant's CSR breaks the provider's policy.
	// Final.
	ReasonCSRRejected = "CSRRejected"
	// ReasonPrivilegedUser: the consumer's cluster ID names a user that
	// already holds permissions on the provider.
	// Final.
	ReasonPrivilegedUser = "PrivilegedUser"
	// ReasonConsumerPrivileged: an accepted consumer's user, or a group of
	// its certificate, was granted a permission kubepact never grants
	// (rbac.CheckUnprivileged, judged again when a binding naming it
	// changes): its bindings are deleted and its certificate is not
	// re-signed; the certificate already issued stays valid until it
	// expires. Accepted again once the grant goes.
	// Final.
	ReasonConsumerPrivileged = "ConsumerPrivileged"
	// ReasonIdentityHeld: another key holds a live certificate for the
	// consumer's ID (lifecycle.HeldError); refused until it expires or the
	// provider forgets the consumer.
	// Final.
	ReasonIdentityHeld = "IdentityHeld"
	// ReasonAPIServerURLUnknown: the provider does not know the URL
	// consumers reach its API server at (provider.ErrNoEndpoint): set
	// --api-server-url, or publish kube-public/cluster-info.
	// Blocking.
	ReasonAPIServerURLUnknown = "APIServerURLUnknown"
	// ReasonPeerRoleMissing: a ClusterRole consumers are bound to is not
	// installed (rbac.MissingRoleError); retried with backoff until an
	// administrator installs it (config/roles, kubepact install roles).
	// Blocking.
	ReasonPeerRoleMissing = "PeerRoleMissing"
	// ReasonCSRDenied: the CSR was denied.
	// Final.
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
	// Final.
	ReasonInvalidSignedNonceSecret = "InvalidSignedNonceSecret"
	// ReasonNotTenantNamespace: a namespace that has a tenant namespace's
	// name but not its labels (liqo.io/tenant-namespace: "true",
	// liqo.io/remote-cluster-id: the peer's ID), so no peer was set up
	// there and someone else may hold rights in it: a liqo-signed-nonce
	// Secret there gets nothing signed, and a handshake that would adopt it
	// stops (tenant.ErrNotTenantNamespace).
	// Final.
	ReasonNotTenantNamespace = "NotTenantNamespace"
	// ReasonMalformedNonce: data.nonce is not a nonce (88 characters of
	// standard base64 encoding 64 bytes); nothing is signed.
	// Final.
	ReasonMalformedNonce = "MalformedNonce"
	// ReasonSignedNonceMismatch: data.signedNonce is not this cluster's
	// signature over data.nonce; kubepact never overwrites it.
	// Final.
	ReasonSignedNonceMismatch = "SignedNonceMismatch"
	// ReasonInvalidProxyURL: data.proxyURL (TenantProxyURLKey) is not an
	// absolute http or https URL; nothing is signed.
	// Final.
	ReasonInvalidProxyURL = "InvalidProxyURL"
	// ReasonSigningNonceFailed: reading the cluster key, building the
	// Tenant, publishing the cluster's public key or writing the signature
	// failed for a reason a retry may cure (an API error); it is retried.
	ReasonSigningNonceFailed = "SigningNonceFailed"
	// ReasonPublishRefused: the API server forbade publishing the
	// cluster's public key (kube.PublicKeyRecord): the admission policy
	// kubepact-cluster-public-key lets only kubepact-controller's
	// ServiceAccount write that record, so a controller run under another
	// identity (an administrator's kubeconfig) is refused; so is one whose
	// RBAC lacks the grant. Nothing is signed. It is retried with backoff,
	// but only running the controller as its ServiceAccount, with the RBAC
	// config/ grants it, helps.
	// Blocking.
	ReasonPublishRefused = "PublishRefused"
	// ReasonKeyUnattested: a key found in the key namespace under the name
	// of an identity's own key was not made by this cluster's kubepact
	// (keys.ErrUnattested): it is never used, nothing is signed for it, and
	// it stays until an administrator removes it (Warning, final).
	// Final.
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
	// Final.
	ReasonInvalidIdentity = "InvalidIdentity"
	// ReasonIdentityRejected: the provider refuses the Identity's
	// credentials, or takes them for another user.
	// Final.
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
	// Final.
	ReasonTenantDrained = "TenantDrained"
	// ReasonEnforceFailed: enforcing the Tenant's condition failed; it is
	// retried.
	ReasonEnforceFailed = "EnforceFailed"
	// ReasonConsumerRevoked: the consumer's certificates were revoked (its
	// Tenant was drained or deleted) and may still be valid: it is not
	// bound again before they expire, unless the provider's administrator
	// readmits it. The Tenant is reconciled again when the record ends.
	// Final.
	ReasonConsumerRevoked = "ConsumerRevoked"
	// ReasonTransitionRefused: a change of tenantCondition the rules refuse.
	ReasonTransitionRefused = "TransitionRefused"
)

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

// Final reports whether reason is the reason of a Warning Event with which
// a kubepact controller refuses an object for good (marked Final above):
// retrying the same object cannot help, so a tool waiting for the
// controller's answer, such as kubepact authenticate, stops at once.
func Final(reason string) bool {
	switch reason {
	// the provider's
	case ReasonInvalidNonceSecret, ReasonInvalidTenant,
		ReasonNonceNotFound, ReasonNonceRedeemed, ReasonNonceExpired,
		ReasonInvalidSignature, ReasonTranscriptRejected, ReasonCSRRejected,
		ReasonPrivilegedUser, ReasonConsumerPrivileged,
		ReasonIdentityHeld, ReasonCSRDenied,
		ReasonTenantDrained, ReasonConsumerRevoked,
		ReasonNotCommitted, ReasonRequestRejected,
		// the consumer's
		ReasonInvalidSignedNonceSecret, ReasonNotTenantNamespace,
		ReasonMalformedNonce, ReasonSignedNonceMismatch, ReasonInvalidProxyURL,
		ReasonInvalidIdentity, ReasonIdentityRejected, ReasonKeyUnattested,
		ReasonEndpointForbidden, ReasonGrantRejected, ReasonInvalidSpec:
		return true
	}
	return false
}

// Blocking reports whether reason is the reason of a Warning Event with
// which a controller says it cannot do its step until an administrator
// changes its configuration or its cluster, whatever the object (marked
// Blocking above): the provider's controller knows no URL for its API
// server, a ClusterRole consumers are bound to is missing, or the
// consumer's controller may not publish the cluster's public key (it runs
// under another identity than its ServiceAccount). The controller may
// retry (PeerRoleMissing and PublishRefused are retried with backoff), but
// no retry helps before a person acts, so a tool waiting for the
// controller tells its user at once.
func Blocking(reason string) bool {
	switch reason {
	case ReasonAPIServerURLUnknown, ReasonPeerRoleMissing, ReasonPublishRefused:
		return true
	}
	return false
}

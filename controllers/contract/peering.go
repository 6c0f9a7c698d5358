package contract

// Reasons of peering from Git: of the conditions of AuthorizedConsumers
// (provider) and TrustedProviders (consumer), and of the Events on them.
// The conditions follow kstatus: Ready, Reconciling, Stalled.
const (
	// ReasonGranted: the AuthorizedConsumer's grant is signed and served
	// (Ready).
	ReasonGranted = "Granted"
	// ReasonEnrolling: the committed request is recorded as the consumer's
	// Tenant, which the Tenant reconciler accepts (Reconciling).
	ReasonEnrolling = "Enrolling"
	// ReasonNotCommitted: a Tenant's key is not among the keys an
	// AuthorizedConsumer commits for its consumer ID: no flow grants the
	// ID to it.
	// Final.
	ReasonNotCommitted = "NotCommitted"
	// ReasonRequestRejected: the AuthorizedConsumer's request does not
	// verify with its committed keys, names another provider, or is
	// malformed (Stalled until the object changes).
	// Final.
	ReasonRequestRejected = "RequestRejected"
	// ReasonForgetFailed: forgetting the consumer of a deleted
	// AuthorizedConsumer failed; it is retried, and the finalizer stays.
	ReasonForgetFailed = "ForgetFailed"

	// ReasonPeered: the TrustedProvider's grant verified and its
	// kubeconfig is written (Ready).
	ReasonPeered = "Peered"
	// ReasonNotAuthorized: the provider's endpoint has no grant for this
	// consumer's request, yet: commit it there (Reconciling). Nothing more
	// is known, and nothing more is said.
	ReasonNotAuthorized = "NotAuthorized"
	// ReasonClusterKeyRotationFailed: the step of the cluster key's
	// rotation kubepact-controller was started with failed (a log line);
	// the next start takes it again.
	ReasonClusterKeyRotationFailed = "ClusterKeyRotationFailed"
	// ReasonAwaitingHandOver: the cluster key rotates, and the provider
	// has not granted the request of the next key yet; the identity held
	// works meanwhile (Reconciling). Commit the request, and both keys,
	// on the provider.
	ReasonAwaitingHandOver = "AwaitingHandOver"
	// ReasonEndpointForbidden: the TrustedProvider's endpoint is a URL the
	// controller refuses to contact (Stalled).
	// Final.
	ReasonEndpointForbidden = "EndpointForbidden"
	// ReasonEndpointUntrusted: the endpoint's certificate was not issued
	// by a committed enrolment key (Stalled; retried, as a rotation may
	// be under way).
	ReasonEndpointUntrusted = "EndpointUntrusted"
	// ReasonEndpointUnreachable: the endpoint could not be reached; it is
	// retried (Reconciling).
	ReasonEndpointUnreachable = "EndpointUnreachable"
	// ReasonGrantRejected: the grant does not verify with a committed
	// enrolment key, or its CA does not match the pin (Stalled).
	// Final.
	ReasonGrantRejected = "GrantRejected"
	// ReasonInvalidSpec: the object's spec does not parse (Stalled).
	// Final.
	ReasonInvalidSpec = "InvalidSpec"
)

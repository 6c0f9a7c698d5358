// Package saidentity gives a consumer cluster an identity on a provider as a
// ServiceAccount with a bound, expiring token: the form of Liqo v0.2's
// ServiceAccount identity that Kubernetes supports today.
//
// The provider calls Issue for a consumer: it ensures the consumer's tenant
// namespace "liqo-tenant-<consumerID>", the ServiceAccount
// "remote-<consumerID>" there, and the least RBAC the identity needs, then
// asks the TokenRequest API for a token bound to that ServiceAccount and
// returns a kubeconfig that authenticates with it. The RBAC is:
//
//   - a Role "remote-<consumerID>" in the tenant namespace allowing get,
//     update, patch and delete on the Secret named after the consumer, and
//     create on serviceaccounts/token for the identity's own ServiceAccount
//     only, so the consumer can refresh its token (see Refresher);
//   - a ClusterRole "kubepact-remote-<consumerID>" allowing get, update,
//     patch and delete on the discovery.liqo.io PeeringRequest named after
//     the consumer;
//   - a RoleBinding and a ClusterRoleBinding of the same names binding them
//     to the ServiceAccount alone.
//
// Every rule names its objects (resourceNames): the identity can list or
// watch nothing. Kubernetes authorizes a create without knowing the new
// object's name, so a resourceNames rule can never allow creating the
// Secret or the PeeringRequest: the provider creates them when it wants the
// consumer to write them.
//
// Revoke deletes the ServiceAccount and its RBAC. Tokens from the
// TokenRequest API carry the ServiceAccount's UID, and the API server
// checks that a ServiceAccount with that UID still exists: every token
// issued, refreshed ones included, may do nothing at once (its RBAC is
// gone) and is refused outright once the API server's token
// authentication cache forgets it (10 seconds in kube-apiserver), even if
// a ServiceAccount of the same name is created again.
//
// The consumer keeps the kubeconfig in Secret
// "kubeconfig-serviceaccount-<providerID>" of its tenant namespace for the
// provider (SecretFor). A Refresher, given only that Secret, requests a new
// token with the current one at a jittered 70-90% of the current token's
// lifetime, proves the new token with a SelfSubjectReview that must answer
// with the identity's user, and only then writes the Secret.
//
// # Security
//
//   - The ServiceAccount's user name and groups are checked before anything
//     is written: they must not hold any of rbac.PrivilegeProbes nor any of
//     NamespaceProbes in the tenant namespace, so a binding someone planted
//     for "system:serviceaccount:liqo-tenant-<id>:remote-<id>" (or for its
//     groups) is never handed to a consumer. The check is repeated after the
//     RBAC is written and before a token is requested.
//   - A ServiceAccount, Role, ClusterRole or binding of the identity's names
//     that exists without IdentityLabel naming the consumer was made by
//     someone else: Issue refuses with a *ForeignError and changes nothing.
//   - The token returned by the API server must be for the ServiceAccount
//     Issue ensured (same namespace, name and UID) and expire when the
//     TokenRequest status says: otherwise ErrWrongServiceAccount.
//   - Lifetimes are between MinExpiration and MaxExpiration; a Refresher
//     asks for the lifetime of the token it holds, within the same bounds.
//     A consumer could ask for a longer one by hand: with the Admission
//     port, Issue installs TokenPolicy, by which the API server refuses a
//     token of a ServiceAccount identity longer than MaxExpiration, and
//     any service-account-token Secret naming it, which Kubernetes would
//     fill with a token that never expires.
//   - With the Lifecycle port (lifecycle.Gate over the provider's Tenants
//     and revocation records), Issue answers to the provider's lifecycle
//     decisions before it writes anything: a consumer whose Tenant is
//     Drained, or whose revocation record is in force, gets no identity.
//     The port is optional, so that callers without the Tenant CRD keep
//     working; without it Issue sees no lifecycle record. The CLI sets it.
//   - A consumer refreshes its token with TokenRequests it sends to the API
//     server itself, which no gate of the provider sees. So a drain or a
//     revocation of the consumer on the provider (Provider.Drain,
//     Provider.Revoke) deletes the identity's RoleBinding and
//     ClusterRoleBinding (IdentityBinding): from then on its tokens may do
//     nothing, and a Refresher fails with ErrRevoked. The ServiceAccount
//     stays, and its tokens authenticate, powerless, until they expire;
//     Revoke deletes it too.
//   - Tokens are secret: Token prints only whose it is and when it expires,
//     kubeconfigs print redacted, and no error quotes a token.
//
// # Errors
//
// Issue wraps clusterid.ErrInvalid, ErrInvalidOptions, lifecycle.ErrDrained,
// *lifecycle.RevokedError (lifecycle.ErrRevoked), *rbac.PrivilegedError
// (rbac.ErrPrivilegedUser), *ForeignError (ErrForeign),
// ErrWrongServiceAccount or ErrMalformedToken, and returns port errors
// wrapped. A Refresher wraps ErrNotFound when there is no kubeconfig Secret,
// ErrMalformedToken when it holds no ServiceAccount token, ErrRevoked
// (with identity.ErrRejected) when the provider refuses the token, and
// identity.ErrWrongUser when a new token authenticates as another user; in
// every failing case the stored Secret is left as it was.
//
// # Concurrency
//
// Builders and steps share no state. A Refresher is safe for concurrent
// use; its Refresh calls are serialised.
package saidentity

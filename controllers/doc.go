// Package controllers runs kubepact's side of Liqo v1.2's declarative
// handshake: reconcilers that answer the objects liqoctl (or a person with
// kubectl) writes, as Liqo's own controllers do (SPEC §7), built on the
// steps of package kubepact and on controller-runtime.
//
// A controller binary builds a manager with NewScheme (and, optionally,
// CacheOptions), then calls SetupProvider, SetupConsumer or both:
//
//	scheme, err := controllers.NewScheme()
//	mgr, err := ctrl.NewManager(cfg, manager.Options{Scheme: scheme, Cache: controllers.CacheOptions()})
//	err = controllers.SetupProvider(mgr, controllers.ProviderConfig{ClusterID: "cl-provider", Endpoint: endpoint})
//	err = controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: "cl-provider"})
//	err = mgr.Start(ctx)
//
// # Behaviour
//
// The handshake, each step written by liqoctl and answered by one reconciler:
//
//  1. Provider, nonce reconciler: a Secret labelled liqo.io/nonce without
//     data.nonce gets its nonce (Provider.IssueNonce), only if it is the
//     Secret "liqo-nonce" in the tenant namespace of the cluster ID of its
//     liqo.io/remote-cluster-id label. A Secret that already holds a nonce
//     is never touched. Event NonceGenerated.
//  2. Consumer, signed-nonce reconciler: a Secret labelled
//     liqo.io/signed-nonce with data.nonce and no data.signedNonce gets the
//     signature of the nonce by the cluster key (kept in the Secret
//     "authentication-keys" of ConsumerConfig.KeyNamespace, created when
//     missing), only if it is "liqo-signed-nonce" in the tenant namespace of
//     its label's cluster ID, and that namespace carries the tenant
//     namespace's labels for that cluster ID (tenant.CheckNamespace), as
//     kubepact, Liqo and liqoctl create it. Event NonceSigned. With the
//     signature, and again whenever it is removed, it writes the Tenant
//     answering the nonce (contract.TenantKey, with the proxy URL of
//     contract.TenantProxyURLKey; Consumer.BuildTenant, so with ConsumerConfig.Strict,
//     or contract.TenantOwnKeyKey in the request, the CSR is for a fresh identity
//     key), so that kubepact authenticate applies it on the provider
//     without reading the cluster key. A malformed proxy URL gets nothing
//     signed: Event InvalidProxyURL. The cluster key is made, and its
//     public half published (kube.PublicKeyRecord, which kubepact
//     authenticate checks the Tenant against: whoever may write Secrets in
//     the tenant namespace may write the Tenant there too), when the
//     manager starts leading.
//  3. Provider, Tenant reconciler: a Tenant named after its spec.clusterID
//     in that cluster's tenant namespace is verified, its CSR signed, its
//     RBAC bound and its status filled (Provider.Accept, which adds the
//     finalizer tenant.liqo.io/finalizer). Event TenantAccepted. A deleted
//     Tenant carrying the finalizer is unpeered, as Liqo does: its binding
//     goes, its nonce and cached certificate stay for the same cluster key
//     (Provider.Forget), then kubepact's finalizer. A drained Tenant, or one
//     annotated kubepact.io/revoke: "true", is revoked instead: its
//     certificates are recorded as revoked, its cached certificate and
//     nonce deleted. Event TenantRemoved. The reconciler watches revocation
//     records (ConfigMaps kubepact-revocation labelled
//     kubepact.io/revocation), so deleting one (kubepact readmit tenant)
//     requeues the Tenant it refused. A change of the spec.policy of the
//     consumer's AuthorizedConsumer requeues the Tenant too: its Accept
//     applies the slice ClusterRoleBinding, or deletes it where
//     resourceSliceClusterWideRole is false.
//  4. Consumer, Identity reconciler: a ControlPlane Identity in the tenant
//     namespace of its spec.clusterID gets its kubeconfig Secret and
//     status.kubeconfigSecretRef (Consumer.Apply). Event IdentityApplied.
//     Deleting the Identity deletes the Secret: the reconciler deletes it at
//     once, and the garbage collector would through the Secret's owner
//     reference. ResourceSlice Identities are the ResourceSlice
//     reconciler's.
//
// After the handshake, the ResourceSlice reconcilers (provider and
// consumer) and the replicator turn slices into identities of their own,
// granted the cluster-wide slice role only (not even that where the
// consumer's AuthorizedConsumer withholds it), never a tenant namespace (the
// provider deletes, when it starts leading, the tenant-namespace slice
// bindings kubepact v0.1.0 made); the provider computes a slice's status
// anew on every change of it, the status its consumer may write included;
// the Tenant and ResourceSlice reconcilers come back when each certificate
// falls due (csr.RenewAt: between half and two thirds of its lifetime,
// spread per certificate) to re-sign it, and the Renew reconcilers carry
// renewed certificates to the consumer; the Tenant reconciler enforces
// spec.tenantCondition (Cordoned, Drained), and a slice created while its
// Tenant is Cordoned or Drained requeues the Tenant, which marks or deletes
// it (a slice of an Active Tenant does not). The provider signs slices'
// certificates within per-consumer bounds (ProviderConfig.SliceBounds):
// over one, nothing is signed, the slice's status is left as it is, and a
// Warning Event names the bound (SliceLimitReached, RekeyTooSoon,
// CertificateRateLimited); the slice is judged again when the bound lifts
// (at the time it names, or when a slice of its consumer is deleted).
//
// Every reconciler is idempotent and resumable: it reads the object, calls
// the step, and the step writes only what is missing, so a controller
// restarted at any point completes the handshake. The Tenant reconciler
// never blocks a worker on the API server's signer: with the CSR API
// (ProviderConfig.Signer nil) it submits and approves a
// CertificateSigningRequest, records CertificatePending and returns; a watch
// on CertificateSigningRequests (labelled liqo.io/remote-tenant-csr and
// liqo.io/remote-cluster-id by kube.CSRSigner) requeues the Tenant once the
// request is issued, denied or failed, and the next Accept picks the same
// object up. A request without the cluster-ID label, made by an older
// kubepact or by Liqo, requeues the Tenant its common name names. A local
// CA (a *csr.LocalCA) signs at once.
//
// Tenants and Identities are reconciled when created, when their
// generation changes (their spec: the status subresource keeps the
// reconcilers' own status writes from requeuing them), when they are marked
// for deletion, and at the manager's resync period; Secrets on every
// change. kubepact writes with server-side apply as the field manager
// "kubepact" and owns only what it applies: the signed-nonce reconciler
// applies data.signedNonce and data["tenant.yaml"] alone, held to the
// Secret's resourceVersion.
//
// Failures become Events on the object. A refusal is a Warning recorded
// once, and the object is not retried until it changes: InvalidTenant,
// NonceNotFound, NonceRedeemed, NonceExpired, InvalidSignature,
// TranscriptRejected, CSRRejected, PrivilegedUser, CSRDenied,
// InvalidNonceSecret, InvalidSignedNonceSecret, NotTenantNamespace, MalformedNonce,
// SignedNonceMismatch, InvalidProxyURL, InvalidIdentity, IdentityRejected. API, network and
// signing errors are Warnings too (IssueNonceFailed, AcceptFailed,
// SigningFailed, RemoveFailed, SigningNonceFailed, ApplyFailed) and are
// retried with the controller's backoff. So is PublishRefused, the API
// server's refusal to let the consumer's controller publish the cluster's
// public key (it runs under another identity than its ServiceAccount), but
// only running the controller as its ServiceAccount ends it: it is
// Blocking (contract.Blocking), and kubepact authenticate stops at it with
// that fix instead of waiting for its timeout. Every failure is also logged once,
// with its reason: a retried one is returned to controller-runtime, which
// logs it ("Reconciler error", the message prefixed with the reason) and
// counts it in controller_runtime_reconcile_errors_total; one that is not
// retried is logged by the reconciler ("Reconcile failed", with a "reason"
// field). Both are counted in kubepact_reconcile_errors_total. Errors, like
// Events, carry no secret.
//
// The reasons of the Events, which of them are final (contract.Final) or
// wait for an administrator (contract.Blocking), and the keys of the
// signed-nonce Secret are the controllers' stable contract: they are
// package contract's (github.com/kubepact/kubepact/controllers/contract),
// which a tool reads without importing this package.
//
// # Metrics
//
// SetupProvider and SetupConsumer register kubepact's metrics on
// controller-runtime's metrics.Registry, once per process (RegisterMetrics),
// so the manager's metrics endpoint serves them. Label values are bounded:
// counters carry no cluster ID; only the per-certificate gauge names its
// peer. Every counter series exists, at zero, from startup.
//
//   - kubepact_handshakes_total{flow, result, reason}: a decision on a
//     handshake object. flow is tenant (Provider.Accept), resourceslice
//     (Provider.AcceptSlice) or identity (the consumer applying a
//     ControlPlane or ResourceSlice Identity); result is accepted (counted
//     once, when the object's status is first filled), refused (the object
//     itself is refused) or failed (retried); reason is the Event's.
//   - kubepact_handshake_duration_seconds{flow}: histogram of the time
//     from an object's metadata.creationTimestamp (one-second resolution)
//     to its first acceptance, so it spans every reconcile, the CSR API's
//     signing and any restart in between.
//   - kubepact_certificate_expiration_timestamp_seconds{role, peer,
//     identity}: the NotAfter, in Unix seconds, of each certificate the
//     provider issued (role="provider", peer the consumer's ID, identity
//     "ControlPlane" or the ResourceSlice's name), set whenever the Tenant
//     or slice is accepted or re-signed, and of each certificate the
//     consumer holds in a kubeconfig Secret (role="consumer", peer the
//     provider's ID, identity the Identity's name). The series goes when
//     the Tenant, slice or Identity goes, and when a Tenant is drained.
//   - kubepact_renewals_total{role, result}: role="provider" counts a
//     Tenant certificate re-signed at its deadline and a Renew answered,
//     refused (drained, too early, invalid) or failed; role="consumer" a
//     kubeconfig switched to renewed credentials, refused or failed.
//   - kubepact_tenant_transitions_total{condition}: a Tenant's
//     spec.tenantCondition changed to Active, Cordoned or Drained and was
//     enforced (changes since the process started; the first condition seen
//     of each Tenant is not counted).
//   - kubepact_reconcile_errors_total{controller, reason}: every failure
//     above, retried or not.
//   - kubepact_build_info{version}: 1 (SetBuildInfo).
//
// # Security
//
// The reconcilers add no check of their own: what is verified, and how, is
// the steps' (see SECURITY.md). Beyond them:
//
//   - The cluster key is no signing oracle: the signed-nonce reconciler signs
//     only a well-formed nonce (nonce.Parse: 88 characters of standard
//     base64 encoding 64 bytes, the length checked before anything is
//     decoded), never arbitrary bytes, and never replaces an existing
//     signedNonce (SignedNonceMismatch when it is not this cluster's
//     signature over data.nonce; delete the Secret to sign a new nonce).
//   - Nor does it sign for whoever may create a namespace named
//     liqo-tenant-<ID> and a Secret in it: it signs only in a namespace
//     labelled liqo.io/tenant-namespace: "true" and
//     liqo.io/remote-cluster-id: <the Secret's cluster ID>, read from the
//     API server as it is now (NotTenantNamespace otherwise; fix the labels
//     and touch the Secret to sign). Those labels are set by whoever created
//     the namespace for a peer; the ValidatingAdmissionPolicy in
//     config/signed-nonce-policy keeps anyone else from setting them, and
//     from creating or updating liqo-signed-nonce Secrets (see SECURITY.md).
//   - Objects are honoured only where the protocol puts them: a nonce or
//     signed-nonce Secret outside the tenant namespace of the cluster ID it
//     names, a Tenant not named after its cluster ID or outside its tenant
//     namespace, an Identity outside the tenant namespace of its provider,
//     are refused, so no object can make kubepact write another cluster's.
//   - Whoever may write Identities in the consumer cluster chooses the
//     provider an Identity is applied for: the reconciler trusts the
//     Identity's spec.clusterID (Consumer.Apply still refuses an Identity
//     whose name or type says otherwise) and, unlike the CLI, replaces the
//     kubeconfig when the Identity's endpoint changes, since the Identity
//     itself is what it holds. Without ConsumerConfig.Offline the provider
//     first confirms the new credentials (kube.IdentityReviewer).
//   - A Tenant refused after redeeming its consumer's nonce (a bad
//     signature) keeps that nonce bound to the key it claimed; the nonce
//     reconciler fills only a nonce Secret without data.nonce, so a new
//     handshake for that consumer starts from a new liqo-nonce Secret, as
//     liqoctl writes it.
//   - Event messages are the steps' errors, which carry no secret (keys,
//     nonces, signatures, certificates); none quotes Secret data.
//
// # Permissions
//
// What each reconciler's credentials need, for least-privilege RBAC (every
// reconciler also needs create and patch on events.k8s.io events):
//
//   - nonce reconciler (provider): secrets: get, list, watch, create,
//     patch, delete (nonce Secrets in tenant namespaces); namespaces: get,
//     list, watch, create, update (tenant namespaces; list and watch for
//     the manager's cache of their labels).
//   - Tenant reconciler (provider): authentication.liqo.io tenants: get,
//     list, watch, patch, delete; tenants/status: patch; tenants/finalizers:
//     update (the OwnerReferencesPermissionEnforcement admission plugin);
//     secrets: get, create, patch, delete (liqo-remote-certificate and the
//     nonce, in tenant namespaces); rolebindings: get, create, patch, delete
//     in tenant namespaces, and list, watch cluster-wide (every binding, so
//     that one naming a consumer's user or group has its privileges
//     judged again); clusterrolebindings: list, watch (the same), delete
//     (a refused consumer's slice binding); configmaps: list, watch (the
//     revocation records, by name); clusterroles: get and bind on
//     liqo-remote-controlplane, which must be installed (config/roles,
//     Liqo's chart, or rbac.Install); authorization.k8s.io subjectaccessreviews:
//     create; renews: list, watch, delete (the Renews the consumer's
//     replicator copied into its tenant namespace, deleted with its
//     Tenant). With the CSR API also certificates.k8s.io
//     certificatesigningrequests: get, list, watch, create;
//     certificatesigningrequests/approval: update; signers
//     kubernetes.io/kube-apiserver-client: approve; and
//     authentication.k8s.io selfsubjectreviews: create (granted to every
//     authenticated user).
//   - signed-nonce reconciler (consumer): secrets: get, list, watch, patch
//     (signed-nonce Secrets in tenant namespaces) and get, create in
//     ConsumerConfig.KeyNamespace (the cluster key and, with Strict or a
//     request's contract.TenantOwnKeyKey, the identity keys its Tenants ask
//     certificates for); configmaps: create, patch of
//     kube.PublicKeyRecordName in ConsumerConfig.KeyNamespace (the cluster's
//     public key, published with server-side apply when the manager starts
//     leading, the cluster key made then if missing, and before each
//     answer); namespaces: get, list, watch (the tenant namespace's labels,
//     from the manager's cache first), create (the key namespace, when
//     missing).
//   - Identity reconciler (consumer): authentication.liqo.io identities:
//     get, list, watch, patch; identities/status: patch; secrets: get, list,
//     watch, create, patch, delete (kubeconfig Secrets in tenant
//     namespaces) and get in ConsumerConfig.KeyNamespace (the cluster key
//     and identity keys). The online confirmation uses only the new
//     kubeconfig, on the provider.
//   - ResourceSlice reconciler (provider): resourceslices: get, list,
//     watch, patch; resourceslices/status: update; secrets: get, create,
//     patch, delete (liqo-remote-certificate-<slice>); clusterrolebindings:
//     get, create, patch, delete (the cluster-wide slice binding);
//     rolebindings: list, delete (when it starts leading, the slice
//     bindings kubepact v0.1.0 made in tenant namespaces: it makes none);
//     clusterroles: get and bind on
//     liqo-virtual-kubelet-remote-clusterwide; subjectaccessreviews:
//     create; storage.k8s.io storageclasses: list (offered in the status
//     of accepted slices; not with ProviderConfig.DisableStorage); with the
//     CSR API as for the Tenant reconciler.
//   - ResourceSlice reconciler and replicator (consumer): resourceslices
//     and renews: get, list, watch, update, patch; their status: update;
//     identities: get, list, create, patch, delete; secrets: get, create,
//     patch, delete in tenant namespaces and in ConsumerConfig.KeyNamespace
//     (slice keys of a Strict consumer). The replicator reaches each
//     provider with the consumer's ControlPlane kubeconfig only, which may
//     write resourceslices and renews in its tenant namespace there; it
//     reads the provider's copy of every replicated object once per
//     ConsumerConfig.ReplicationResync (no watch on the provider), so a
//     status the provider writes reaches the consumer within that bound.
//   - Renew reconciler (provider): authentication.liqo.io renews: get,
//     list, watch; renews/status: patch; tenants: list, watch; secrets:
//     get, create, patch (liqo-remote-certificate--renew, the record of the
//     certificate each Renew gave); what the Tenant reconciler needs to
//     sign.
//   - renewal reconciler (consumer): authentication.liqo.io renews: get,
//     list, watch, create, patch; identities: get, list, watch, and what
//     the Identity reconciler needs; secrets: create, delete in
//     ConsumerConfig.KeyNamespace (a Strict consumer's renewal keys).
//   - AuthorizedConsumer reconciler and the enrolment keeper (provider,
//     where the peering.kubepact.io CRDs are served and
//     ProviderConfig.EnrolmentNamespace is set): peering.kubepact.io
//     authorizedconsumers: get, list, watch, patch (its finalizer);
//     authorizedconsumers/status: patch; what the Tenant reconciler needs
//     (it records the committed request as a Tenant, in a tenant namespace
//     it creates); in EnrolmentNamespace, secrets: get, create, patch
//     (kube.EnrolmentKeyName, kube.EnrolmentTLSSecretName), and through
//     a rotation (ProviderConfig.EnrolmentKeyRotation) create and delete
//     (kube.EnrolmentNextKeyName, and the key's Secret at the switch) and
//     configmaps: create, patch (kube.EnrolmentPublicKeyRecordName).
//     Every provider reads authorizedconsumers (get, list, watch), to bind
//     every flow to the committed keys.
//   - TrustedProvider reconciler (consumer, where the CRDs are served):
//     trustedproviders: get, list, watch, patch (its finalizer);
//     trustedproviders/status: patch; namespaces: create (the provider's
//     tenant namespace); what the Identity reconciler needs. It contacts
//     each TrustedProvider's endpoint, an https URL it checks
//     (enrolhttp.CheckURL). Through a rotation of the cluster key
//     (ConsumerConfig.ClusterKeyRotation), in KeyNamespace, secrets:
//     create, delete (keys.NextSecretName), patch (authentication-keys, at
//     the switch), and patch on the keyring's Secrets (an identity key
//     attested again by the new key).
//
// No reconciler writes a role. config/controller ships this RBAC, and a
// ValidatingAdmissionPolicy that scopes what RBAC cannot (Secret, ConfigMap
// and binding namespaces, binding subjects, pod-security labels, CSR
// approvals); SECURITY.md lists its rules.
//
// With CacheOptions, the manager caches only ConfigMaps named
// kubepact-revocation (the revocation records the Tenant reconciler
// watches) and Secrets labelled liqo.io/remote-cluster-id.
//
// Where Secrets are read ("secrets: get, list, watch" above) is the tenant
// namespaces, the key namespace and the enrolment namespace, and a
// manager whose cache is a SecretScope's (manager.Options.NewCache, as
// kubepact-controller builds it) reads them there alone: it binds the
// ClusterRole SecretReaderRole to its own subject in each such namespace
// as it appears, and watches each apart. Its credentials then need no read
// of Secrets cluster-wide: create, update, patch and delete of secrets,
// and bind on the ClusterRole SecretReaderRole, which grants get, list and
// watch of secrets; selfsubjectaccessreviews and selfsubjectreviews:
// create (granted to every authenticated user).
//
// # Concurrency
//
// The provider's reconcilers run ProviderConfig.Workers workers each
// (DefaultWorkers, 16, by default); the consumer's run one, as a consumer
// answers one provider at a time. controller-runtime never gives one object
// to two workers at once; the Provider and Consumer the workers share are
// safe for concurrent use, and a handshake of one consumer is serialised
// by its nonce. At most Workers handshakes are in flight, from the nonce
// issued to the Tenant accepted or refused: a nonce request beyond them
// waits, in the order it came, for one to settle (or for HandshakeHold, so
// that a consumer that never sends its Tenant delays the others at most
// that long; a client that asks for many nonces and sends no Tenant until
// it holds them all is therefore served about Workers nonces per
// HandshakeHold). With the CSR API, a worker waits up to CSRWait for the
// certificate it asked for, so a handshake goes from Tenant to status in
// one reconcile. Under a burst, consumers are therefore served in the
// order they came, and the first are done first instead of all of them
// getting their nonces at once and their certificates together at the
// end.
//
// The manager's clients need a rate limit to match: kubepact-controller
// makes about 21 requests per handshake of a new consumer with the CSR API
// (7 of them SubjectAccessReviews, asked at once; its Events included;
// the nonce request, its tenant namespace, the nonce and the certificate
// come from the manager's informers), so 30 handshakes a second need a
// QPS near 650, and kubepact-controller's
// default (--kube-api-qps 1000, --kube-api-burst 2000) leaves room for its
// leases and resyncs; at 200 a provider accepts about 8 a second, and at
// client-go's default of 5 fewer than one.
// With the CSR API, the kube-controller-manager's own client limit
// (--kube-api-qps, 20 by default) also bounds the provider, to about 20
// signatures a second. Run one active manager per cluster: enable the
// manager's leader election when running several replicas. The Identity
// reconciler's online confirmation is a request to the provider's API
// server, bounded by kube.IdentityReviewerOptions' default timeout; no
// reconciler waits on another controller.
//
// # Restarts and idle
//
// A restarted controller reconciles every Tenant again. One that was
// accepted and changed in nothing since is left as it is, on what the
// manager's cache holds (provider.Provider.Unchanged): its spec still
// verifies against the nonce it redeemed, under the current policy, its
// certificate record holds its CSR and the certificate of its status,
// which is not yet due for re-signing, no revocation record is in force,
// its bindings are in place, and no other binding names the consumer's
// user or the group of its certificate (liqo.io). It then costs no request
// of its own: no SubjectAccessReview, no CSR and no write. Only a
// Tenant's first reconcile since the process started is judged so;
// anything else, a Tenant requeued by a change or by its re-signing
// included, goes through Accept, which decides on what the API server
// stores. The manager's cache (CacheOptions) keeps, without their
// managedFields: nonce and certificate-record Secrets, revocation
// ConfigMaps (by name), every RoleBinding and ClusterRoleBinding (without
// annotations; a ControlPlane binding someone deletes is applied again at
// its Tenant's next reconcile), and the peers' CertificateSigningRequests,
// not every CSR of the cluster. Idle, with nothing changing, the provider
// makes no request but its leader election's and its watches' renewals
// (the readiness check watches the two peer roles); no Tenant is requeued
// before its certificate's re-signing.
//
// # Privileges judged again
//
// The privilege check (rbac.CheckUnprivileged) runs in Accept, but a
// grant can come after it: a RoleBinding or ClusterRoleBinding created,
// changed or deleted that names a consumer's user (its cluster ID) or the
// group of ControlPlane certificates (liqo.io, which requeues every
// Tenant) requeues the Tenant, and the provider forgets that its
// privileges passed (provider.Provider.Recheck), so Accept asks again.
// The provider's own bindings (rbac.IsControlPlaneRoleBinding, the slice
// ClusterRoleBinding) requeue nothing: a provider that unpeers deletes them
// before the Tenant. A consumer refused then loses its bindings, its
// certificate is not re-signed, and a ConsumerPrivileged Event says until
// when the certificate issued stays valid; when the grant goes, the
// binding's deletion requeues the Tenant and Accept binds it again.
package controllers

// Package fake holds in-memory implementations of every kubepact port, for
// tests and for running the handshake in one process.
//
// The package is a leaf: it imports the step packages and never the root
// package or any other that composes them. Package wire/memory composes one
// cluster's worth of these fakes (memory.NewCluster), sharing a local CA,
// ready to be a provider or a consumer; package wire/intercept injects
// failures into any port implementation, these fakes and package kube's
// adapters alike.
//
// Every fake passes the same conformance suites (the xxxtest packages) as
// the client-go adapters do on a real API server.
//
// # Behaviour and limits
//
//   - Every type is safe for concurrent use; each guards its state with its
//     own mutex, so a Consume of a nonce hands it to exactly one caller, and
//     of concurrent Creates of a key exactly one succeeds.
//   - NonceStore is also a nonce.Peeker whose Peek sees what is stored, as a
//     cache that has caught up would: a provider over the fakes peeks as
//     the controller does.
//   - Objects are deep-copied in and out: callers never share memory with
//     the store.
//   - Apply and Write create or update and assign a UID and a
//     resourceVersion as an API server would; a write that changes nothing
//     is not counted and does not bump the resourceVersion. Writes reports
//     the number of counted writes, Objects what is stored.
//   - As package kube's server-side applies do, the stores of Tenants,
//     Identities, Secrets and RBAC record who set each label, annotation,
//     finalizer and owner reference: Apply keeps what another component
//     set and removes what kubepact set before and no longer applies. The
//     Update methods (TenantStore.Update, IdentityStore.Update,
//     RBAC.UpdateClusterRole, RBAC.UpdateRoleBinding), which are not part
//     of the ports, write as another component does; a ClusterRole's rules
//     another component set stay, as on an API server.
//   - Delete of a Tenant or an Identity removes kubepact's finalizer, if
//     any, and keeps the object, terminating, while others' finalizers
//     stay.
//   - There is no optimistic concurrency (no conflict on a stale
//     resourceVersion), no admission, no defaulting, no authorization of
//     the callers themselves, no garbage collection of owned objects, no
//     watch, and deleting a namespace does not delete what is in it. Use
//     intercept.Faults to see how callers cope with conflicts and other failures.
//   - RBAC answers reviews (rbac.Reviewer) from the ClusterRoles,
//     RoleBindings and ClusterRoleBindings it holds, as Kubernetes RBAC
//     evaluates them: ApplyClusterRoleBinding (also rbac.ClusterBinder's)
//     plants grants made outside kubepact too, and replaces a binding
//     whole: labels others set on a ClusterRoleBinding are not kept. It
//     holds no Roles, does no aggregation and knows no bootstrap roles or
//     system:masters. It finds the bindings a review needs by subject, and
//     ListBindings those of a peer by its label, through an index every
//     write keeps current, so neither costs more as bindings of other
//     subjects accumulate.
//   - ResourceSlices keeps slices for resourceslice.Store; Put stores one
//     whole, as a user or the replicator does. Nothing replicates it.
//   - StorageClasses holds the StorageClasses Put plants, for
//     resourceslice.StorageClassLister; it models no provisioner and no
//     admission of the default-class annotation. SlicePolicy caps every
//     slice at one set of limits and refuses the slices Refuse names.
//   - The Signer signs with a csr.LocalCA in memory; it does not model the
//     Kubernetes CSR API's objects, garbage collection or signer caps.
//   - Reviewer plays the API servers of the providers a memory.Cluster
//     reaches (memory.Cluster.Reach): it takes a client certificate that chains to that
//     server's client CAs, is valid and matches the kubeconfig's key, and
//     answers with its CN as user and its O as groups. It checks no server
//     certificate, and models no proxy and no anonymous request.
//   - KeyStore and Keyring print redacted: they hold private
//     keys. TokenStore prints redacted: it holds the shared token.
//   - TokenStore and Secrets serve the shared-token flow (authtoken,
//     authserver); they are not part of a memory.Cluster.
//   - ServiceAccounts issues unsigned JWTs with a ServiceAccount token's
//     claims, which only its TokenClient authenticates; ServiceAccountRBAC
//     evaluates Roles as well as ClusterRoles; Admission stores policies and
//     enforces none (it evaluates no CEL).
//   - The lifecycle ports (memory.Cluster.LifecyclePorts): TenantStore.SetCondition
//     checks the resourceVersion, as a patch with a precondition does, and
//     TenantStore.Apply keeps the stored condition when it applies none, as
//     a server-side apply that does not name it does. ResourceSlices counts
//     NamespaceMaps (PutNamespaceMaps), deleted by DeleteAll only when
//     ServesNamespaceMaps is set. Revocations keeps records in memory.
package fake

// Package kube implements kubepact's ports over a Kubernetes API server with
// client-go: every type here is the real counterpart of one in package fake.
//
// The package is a leaf: it imports the step packages and never the root
// package or any other that composes them. Package wire composes these
// adapters into a provider.Provider and a consumer.Consumer (wire.Connect,
// from a cluster's *rest.Config). Built-in kinds go through
// kubernetes.Interface, speaking protobuf (NewClientset); the
// authentication.liqo.io kinds (Tenant, Identity, ResourceSlice, Renew),
// which have no generated clientset, go through a typed controller-runtime
// client (NewClient) with the types of package apis/authentication/v1beta1.
// InstallCRDs alone uses a dynamic client, made from its *rest.Config. The
// naming, labels and data layout of every object come from the step
// packages (nonce.Secret, keys.Secret, csr.CacheSecret, kubeconfig.Secret,
// tenant.Namespace, rbac); this package only reads and writes them.
//
// # Behaviour
//
//   - Tenants, Identities, Secrets, ClusterRoles and RoleBindings are
//     written with server-side apply under FieldManager ("kubepact"), so
//     kubepact owns exactly the fields it applies: labels, annotations,
//     finalizers and owner references others put on a shared object stay,
//     as do fields kubepact's types do not know, and a field kubepact
//     applied before and no longer applies goes. kubepact takes over the
//     fields it applies on its own objects (force), except the rules of a
//     ClusterRole another manager set to other values, which stay theirs
//     (Liqo's chart installs liqo-remote-controlplane; kubepact writes a
//     ClusterRole only when told to install the peer roles, rbac.Install).
//     An apply that
//     changes nothing writes nothing. Namespaces get their labels merged,
//     with optimistic concurrency.
//   - Not-found errors wrap the port's sentinel (nonce.ErrNotFound,
//     tenant.ErrNotFound, ...) and the API error, so both errors.Is and
//     apierrors.IsNotFound work. Other API errors are wrapped with the
//     object's kind and name.
//   - NonceStore.MarkRedeemed records the redemption in annotations of the
//     nonce Secret with an update conditional on the resourceVersion read,
//     so of concurrent redeemers exactly one is recorded; Consume deletes
//     the Secret with UID and resourceVersion preconditions, so concurrent
//     consumers of one nonce get it at most once.
//   - RBAC.Allowed asks the API server with a SubjectAccessReview, and
//     reports an authorizer's evaluation error as an error, never as "no".
//   - CSRSigner creates a certificates.k8s.io/v1 CertificateSigningRequest,
//     approves it through a csr.Approver (held to the object's UID), and
//     watches it until it is issued, denied, failed or deleted, or the
//     context ends, then checks the certificate with csr.CheckIssued. With
//     CSRSignerOptions.NoWait it returns csr.ErrPending instead of
//     watching, for a controller that is requeued by its own watch of
//     CSR objects (labelled liqo.io/remote-cluster-id with the consumer's
//     ID); a later Sign picks up the same object.
//     Re-signing the same CSR re-uses its existing object only when its
//     signer, usages, expirationSeconds, request and requesting user are
//     what CSRSigner would create; objects planted with kubepact's labels
//     are ignored, never approved. Approver refuses any other object with
//     ErrForeignCSR and a *csr.DeniedError.
//   - IdentityReviewer confirms a consumer's new kubeconfig online: it
//     makes a SelfSubjectReview (authentication.k8s.io/v1) on the
//     provider's API server with the kubeconfig under review, which every
//     authenticated user may make (system:basic-user), and reports a
//     refused certificate as identity.ErrRejected.
//   - InstallCRDs creates only the CRDs that are missing and never updates
//     an existing one (Liqo's, say): it checks that its served v1beta1
//     schema declares every field kubepact's does, and returns a
//     *CRDFieldMissingError (errors.Is ErrCRDIncompatible) otherwise.
//   - ServiceAccounts, ServiceAccountRBAC, Admission, TokenRequester and
//     KubeconfigSecrets are saidentity's ports: ServiceAccounts and their
//     tokens (the TokenRequest API), the Role, ClusterRole and bindings of
//     a ServiceAccount identity (refusing objects of its names without its
//     label), the admission policy bounding token lifetimes, a
//     TokenRequest made with a kubeconfig's own token (401, 403 and a
//     deleted ServiceAccount wrap identity.ErrRejected), and the consumer's
//     kubeconfig Secrets read back.
//   - TokenStore keeps the shared token of the token flow in the Secret
//     "auth-token" (authtoken.Store): Create creates it, Replace applies it,
//     and Get reads it from the API server on every call, so a server that
//     asks on each request sees a rotation at once. Secrets is the
//     authtoken.Secrets of the consumer's remote token and identity Secrets.
//
// # Security
//
// Secrets' data never reaches an error, and no error quotes a
// rest.Config's credentials. wire.Connect's check needs only discovery,
// which system:discovery grants every authenticated user. The provider's
// credentials need:
// namespaces (get, create, update, delete), secrets, tenants and
// rolebindings in tenant namespaces, clusterroles, create on
// subjectaccessreviews.authorization.k8s.io (rbac.CheckUnprivileged),
// update on tenants/finalizers where the OwnerReferencesPermissionEnforcement
// admission plugin is on (the ControlPlane RoleBinding blocks its Tenant's
// deletion until the garbage collector removes it), and
// for CSRSigner certificatesigningrequests (create, get, list, watch),
// certificatesigningrequests/approval (update), approve on
// signers/kubernetes.io/kube-apiserver-client, and create on
// selfsubjectreviews.authentication.k8s.io (granted to every authenticated
// user by system:basic-user).
package kube

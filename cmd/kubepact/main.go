// Command kubepact gives one Kubernetes cluster (the consumer) a narrowly
// scoped identity on another (the provider), speaking Liqo's authentication
// API (authentication.liqo.io/v1beta1), so either cluster may be a Liqo
// cluster.
//
// Usage:
//
//	kubepact COMMAND [RESOURCE] [flags] [FILE]
//
// Installed on the PATH as kubectl-kubepact, it is also the kubectl plugin
// "kubectl kubepact".
//
// The commands, by who runs them (a test keeps this list equal to the
// command tree):
//
//	authenticate                     both clusters reachable: the local cluster (--kubeconfig) consumes the remote one (--remote-kubeconfig), through their controllers
//	unauthenticate                   both clusters reachable: remove what authenticate created
//	status                           anyone: the cluster's peers, their role, condition, GitOps state, certificate expiry and last error
//	version                          anyone: the CLI's version and its controller's
//	install roles                    provider: install the ClusterRoles consumers are bound to, once, where neither Liqo nor config/ did
//	create nonce                     provider: issue the nonce a consumer must sign
//	get nonce                        provider: print a consumer's current nonce
//	get tenant                       provider: print Tenants
//	get identity                     consumer: print Identities
//	get kubeconfig                   consumer: print or write the kubeconfig of a peering
//	get resourceslice                consumer: print ResourceSlices, their conditions and Identities
//	get token                        provider: print the shared token, creating it when missing (--rotate)
//	generate tenant                  consumer: sign a nonce and print the Tenant
//	generate identity                provider: accept a Tenant, print the Identity
//	generate key                     anyone, offline: write a new cluster key file
//	get public-key                   anyone: print the cluster key or the enrolment key, as the peering objects take it
//	generate authorized-consumer     consumer: print the AuthorizedConsumer a provider commits to let it peer from Git
//	generate trusted-provider        provider: print the TrustedProvider a consumer commits to peer with it from Git
//	generate peering                 both clusters readable: print the TrustedProvider and the AuthorizedConsumer of a peering
//	verify tenant                    anyone, offline: check a Tenant against a nonce
//	apply tenant                     provider: store a consumer's Tenant
//	apply identity                   consumer: check and store a provider's Identity, write the kubeconfig Secret
//	apply serviceaccount-identity    consumer: store the kubeconfig Secret of a ServiceAccount identity
//	create serviceaccount-identity   provider: issue a ServiceAccount identity with an expiring token
//	revoke serviceaccount-identity   provider: delete a consumer's ServiceAccount identity
//	refresh serviceaccount-identity  consumer: replace a ServiceAccount identity's token before it expires
//	create resourceslice             consumer: ask the provider for a ResourceSlice and its identity
//	delete resourceslice             consumer: delete a ResourceSlice, its identity and its copy on the provider
//	cordon tenant                    provider: accept no new ResourceSlice of a consumer
//	uncordon tenant                  provider: make a cordoned Tenant Active again
//	drain tenant                     provider: delete a consumer's bindings and ResourceSlices, revoking its certificates
//	readmit tenant                   provider: let a drained or forgotten consumer be bound again
//	serve                            provider: run the shared-token authentication server (Liqo v0.4-v0.10 API)
//	completion bash                  anyone: print the bash completion script
//	completion zsh                   anyone: print the zsh completion script
//	completion fish                  anyone: print the fish completion script
//	completion powershell            anyone: print the PowerShell completion script
//	help                             anyone: help about any command
//
// With --auth-token, --auth-url and --auth-ca, authenticate instead reaches
// the provider's authentication server with the shared token (no
// --remote-kubeconfig; --remote-cluster-id names the provider). --token, the
// old name of --auth-token, still works for one release, with a warning;
// then it is the bearer token, as for every other command.
//
// Every command that talks to a cluster takes kubectl's connection flags
// (--kubeconfig, default $KUBECONFIG or ~/.kube/config, --context, --as,
// --server, ...: k8s.io/cli-runtime's ConfigFlags), -n/--namespace (the
// Liqo namespace, which holds the cluster key Secret "authentication-keys"
// and the cluster ID ConfigMap; default "liqo"), --cluster-id and
// --timeout. authenticate and unauthenticate take the same flags for the
// provider with a remote- prefix, as liqoctl names them
// (--remote-kubeconfig, --remote-context, --remote-namespace,
// --remote-cluster-id, ...). A command's own flag of the same name wins:
// authenticate's deprecated --token is the shared token (--auth-token),
// create serviceaccount-identity's --as what it writes. Commands that print an
// object take -o yaml|json|name|jsonpath=...|go-template=... (cli-runtime's
// printers); get commands print a table by default. What generate prints
// can be applied with kubectl apply -f on the other cluster. Run "kubepact
// COMMAND [RESOURCE] --help" for what each flag means and an example.
//
// # Flags
//
// Every command takes -h/--help. In the list below, "connection flags" are
// kubectl's, for the local cluster (k8s.io/cli-runtime's ConfigFlags but
// its --namespace):
//
//	--as, --as-group, --as-uid, --as-user-extra, --cache-dir, --certificate-authority,
//	--client-certificate, --client-key, --cluster, --context, --disable-compression,
//	--insecure-skip-tls-verify, --kubeconfig, --request-timeout, -s/--server,
//	--tls-server-name, --token, --user
//
// and "remote connection flags" are the same for the other cluster, each
// with a remote- prefix and no shorthand (--remote-as, ...,
// --remote-kubeconfig, --remote-server, ...). A command's own flag of the
// same name as a connection flag replaces it. Each command's flags (a test
// keeps this list equal to the command tree):
//
//	authenticate                     connection flags, remote connection flags, --api-server-url, --auth-ca,
//	                                 --auth-token, --auth-url, --cluster-id, --install-crds, --key-algorithm,
//	                                 --local, -n/--namespace, --no-token, --nonce-ttl, --policy, --proxy-url,
//	                                 --remote-cluster-id, --remote-namespace, --replace-endpoint,
//	                                 --send-cluster-key, --strict, --timeout
//	unauthenticate                   connection flags, remote connection flags, --cluster-id, --force,
//	                                 --local, -n/--namespace, --remote-cluster-id, --remote-namespace,
//	                                 --revoke, --timeout
//	status                           connection flags, --cluster-id, -n/--namespace, -o/--output, --timeout
//	version                          connection flags, --client, --cluster-id, -n/--namespace, -o/--output,
//	                                 --timeout
//	install roles                    connection flags, --cluster-id, --helm-namespace, --helm-release,
//	                                 -n/--namespace, --timeout
//	create nonce                     connection flags, --cluster-id, -n/--namespace, --nonce-ttl,
//	                                 --remote-cluster-id, --timeout
//	get nonce                        connection flags, --cluster-id, -n/--namespace, --nonce-ttl,
//	                                 -o/--output, --remote-cluster-id, --timeout
//	get tenant                       connection flags, --cluster-id, -n/--namespace, -o/--output, --timeout
//	get identity                     connection flags, --cluster-id, -n/--namespace, -o/--output,
//	                                 --show-secrets, --timeout
//	get kubeconfig                   connection flags, --cluster-id, -n/--namespace, --output-file,
//	                                 --remote-cluster-id, --resourceslice, --timeout
//	get resourceslice                connection flags, --cluster-id, -n/--namespace, -o/--output,
//	                                 --remote-cluster-id, --timeout
//	get token                        connection flags, --cluster-id, -n/--namespace, --rotate, --timeout
//	generate tenant                  connection flags, --cluster-id, --key-algorithm, --key-file,
//	                                 -n/--namespace, --nonce, -o/--output, --proxy-url, --remote-cluster-id,
//	                                 --strict, --timeout, --transcript-lifetime
//	generate identity                connection flags, --api-server-url, --cluster-id, -f/--filename,
//	                                 --install-crds, -n/--namespace, --nonce-ttl, -o/--output, --policy,
//	                                 --remote-cluster-id, --timeout
//	generate key                     --algorithm, --out
//	get public-key                   connection flags, --cluster-id, --enrolment-namespace, --key,
//	                                 -n/--namespace, --timeout
//	generate authorized-consumer     connection flags, --cluster-id, -n/--namespace, --remote-cluster-id,
//	                                 --timeout
//	generate trusted-provider        connection flags, --api-server-ca-file, --cluster-id,
//	                                 --enrolment-namespace, --enrolment-url, -n/--namespace, --timeout
//	generate peering                 connection flags, remote connection flags, --api-server-ca-file,
//	                                 --cluster-id, --enrolment-namespace, --enrolment-url, -n/--namespace,
//	                                 --remote-cluster-id, --remote-namespace, --timeout
//	verify tenant                    --cluster-id, --nonce, --policy
//	apply tenant                     connection flags, --cluster-id, --install-crds, -n/--namespace,
//	                                 --timeout
//	apply identity                   connection flags, --client-ca, --cluster-id, --install-crds,
//	                                 -n/--namespace, --remote-cluster-id, --replace-endpoint, --timeout
//	apply serviceaccount-identity    connection flags, --cluster-id, -n/--namespace, --timeout
//	create serviceaccount-identity   connection flags, --api-server-url, --as, --cluster-id, --expiration,
//	                                 --install-token-policy, -n/--namespace, --out, --remote-cluster-id,
//	                                 --timeout
//	revoke serviceaccount-identity   connection flags, --cluster-id, -n/--namespace, --remote-cluster-id,
//	                                 --timeout
//	refresh serviceaccount-identity  connection flags, --cluster-id, -n/--namespace, --remote-cluster-id,
//	                                 --timeout, --watch
//	create resourceslice             connection flags, --class, --cluster-id, -n/--namespace,
//	                                 --remote-cluster-id, --resource, --strict, --timeout
//	delete resourceslice             connection flags, --cluster-id, -n/--namespace, --remote-cluster-id,
//	                                 --timeout
//	cordon tenant                    connection flags, --certificate-lifetime, --cluster-id, -n/--namespace,
//	                                 --remote-cluster-id, --timeout
//	uncordon tenant                  connection flags, --certificate-lifetime, --cluster-id, -n/--namespace,
//	                                 --remote-cluster-id, --timeout
//	drain tenant                     connection flags, --certificate-lifetime, --cluster-id, -n/--namespace,
//	                                 --remote-cluster-id, --timeout
//	readmit tenant                   connection flags, --certificate-lifetime, --cluster-id, -n/--namespace,
//	                                 --remote-cluster-id, --timeout
//	serve                            connection flags, --allow-empty-token, --api-server-url,
//	                                 --certificate-lifetime, --cluster-id, --cluster-name, --hosts,
//	                                 --listen, -n/--namespace, --tls-secret
//	completion bash                  --no-descriptions
//	completion zsh                   --no-descriptions
//	completion fish                  --no-descriptions
//	completion powershell            --no-descriptions
//
// # Cluster IDs
//
// Each cluster's ID is read from the cluster, where Liqo and liqoctl keep
// it: the ConfigMap labelled app.kubernetes.io/name=clusterid-configmap in
// the Liqo namespace, key CLUSTER_ID (kubepact-controller records its ID
// there too). --cluster-id and --remote-cluster-id are needed only for a
// cluster without one; one that disagrees with the record is refused
// (clusterid.ErrConflict) before anything is written.
//
// # Online: both clusters reachable from one place
//
//	kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig
//	kubepact get kubeconfig --kubeconfig consumer.kubeconfig --remote-cluster-id PROVIDER_ID > provider.kubeconfig
//	kubepact unauthenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig
//
// authenticate first looks for the controllers that answer the handshake on
// both clusters (kubepact-controller or Liqo's controller manager: a ready
// Deployment, or a held Lease) and refuses to write anything without them.
// Then it does what liqoctl v1.2 does, in its order: the tenant namespaces
// on both clusters; the nonce request on the provider, waiting for its
// controller to issue the nonce; the signed-nonce request on the consumer,
// waiting for its controller to sign; the Tenant, applied on the provider,
// waiting for its controller to accept it; the Identity from the Tenant's
// status applied on the consumer, waiting for its controller to write the
// kubeconfig Secret. It never creates a CertificateSigningRequest, approves
// one or binds a role on the provider: the provider's controller does.
// Where the consumer runs kubepact-controller, that controller builds the
// Tenant too and writes it beside the signature (key tenant.yaml of the
// liqo-signed-nonce Secret, proxy URL from its key proxyURL, a CSR for a
// key of the identity's own when its key ownKey asks for one, as
// authenticate always does unless --send-cluster-key, whatever the
// provider shows of itself): authenticate reads it there, checks that it answers the
// provider's nonce, that it is signed with the cluster key the controller
// publishes (ConfigMap kubepact-cluster-public-key in the key namespace,
// which only the controller may write) and, when asked, that its CSR is
// for a key of its own, and never reads the cluster key, so the consumer's
// credentials need no access to the key Secrets. There --key-algorithm is
// refused (the controller makes the key). With Liqo's controller
// on the consumer, authenticate builds the Tenant as liqoctl does, reading
// the cluster key Secret. Each wait says what it waits for (a spinner on
// a terminal, else a line " INFO  Waiting for ..."), and ends at the first
// answer that needs a person: a Warning Event with which a controller
// refuses the object (ConsumerRevoked, InvalidSignature, Liqo's InvalidCSR
// or SignatureVerificationFailed, ...) or cannot go on
// (APIServerURLUnknown, PeerRoleMissing), including one recorded before
// the wait about the object as it still is, printed whole with the fix; or
// when a controller's Lease runs out by the API server's clock. Otherwise
// --timeout does. Ctrl-C ends with "interrupted", what was left behind and
// how to resume or clean up. unauthenticate deletes the
// consumer's Identity and the provider's Tenant and waits for the
// controllers to clean up; like the in-process flow, it refuses while the
// consumer holds ResourceSlices of the provider (consumer.ErrInUse). With --local, both commands instead do every
// step in this process with both clusters' admin kubeconfigs, for clusters
// where no controller runs. unauthenticate of two clusters with no peering
// changes nothing and fails saying so. One whose Identity and Tenant are
// already gone (its tenant namespaces remain) succeeds and says so, as
// liqoctl does.
//
// # Offline: files moved by hand between the two clusters' operators
//
//	# provider
//	kubepact create nonce --remote-cluster-id cl-consumer > nonce.txt
//	# consumer
//	kubepact generate tenant --remote-cluster-id cl-provider --nonce "$(cat nonce.txt)" > tenant.yaml
//	# provider
//	kubepact verify tenant --nonce "$(cat nonce.txt)" tenant.yaml
//	kubepact generate identity --remote-cluster-id cl-consumer -f tenant.yaml > identity.yaml
//	# consumer
//	kubepact apply identity --remote-cluster-id cl-provider identity.yaml
//
// Instead of -f, the provider may store the Tenant first (kubepact apply tenant
// tenant.yaml, or kubectl apply -f tenant.yaml) and then run generate identity
// with --remote-cluster-id alone. A Tenant can also be signed with no cluster
// at all, from a key file:
//
//	kubepact generate key --out key.pem
//	kubepact generate tenant --key-file key.pem --cluster-id cl-consumer --remote-cluster-id cl-provider --nonce "$(cat nonce.txt)"
//
// # Policies
//
// A Tenant made by kubepact carries, in annotations a Liqo provider ignores,
// a signed transcript that binds it to the provider (--remote-cluster-id of
// generate tenant), the nonce, the CSR and an expiry (--transcript-lifetime,
// ten minutes by default, at most an hour). Provider-side commands take
// --policy: compatible (the default) also accepts a Liqo consumer's Tenant,
// which has no transcript; strict requires one. verify tenant checks the
// transcript for the provider given by --cluster-id, or else for the provider
// the transcript names, and says which.
//
// # Trusting an Identity
//
// apply identity requires --remote-cluster-id, the provider the consumer
// expects the Identity from: an Identity for any other provider is refused,
// whatever the file says. The Identity must name an https API server. Once
// the consumer holds a kubeconfig for a provider, an Identity (or a new run
// of authenticate) that changes its API server or CA is refused and nothing
// is written, unless --replace-endpoint says the change is meant; a renewed
// certificate for the same server and CA needs no flag. Only the name, the
// provider label and the spec of an Identity are stored: owner references,
// finalizers, annotations and other labels the provider sent are dropped.
//
// # Output
//
// Results go to standard output; progress lines (" INFO  <step>", as liqoctl
// prints them) and errors go to standard error, so the output of create nonce
// and of the generate commands can be redirected or captured. Keys,
// kubeconfigs and Secrets are never printed, but where asked for: get
// kubeconfig prints a peering's kubeconfig (or writes it to --output-file),
// get token the shared token, get nonce -o the nonce Secret, and get
// identity --show-secrets an AWS secret access key. Errors start with "kubepact: ",
// name the step of the handshake that failed, and say what to do next.
//
// status prints a table, or with -o json|yaml (or jsonpath=, go-template=)
// a document of a stable schema, apiVersion cli.kubepact.io/v1, kind
// Status, to which fields are only ever added:
//
//	apiVersion: cli.kubepact.io/v1
//	kind: Status
//	peers:                         # consumers (Tenants or AuthorizedConsumers here) first, then providers (Identities or TrustedProviders here)
//	- clusterID: cl-provider
//	  role: provider               # or consumer
//	  object: {kind: Identity, namespace: liqo-tenant-cl-provider, name: ...}  # or, for a peer only committed in Git, its AuthorizedConsumer or TrustedProvider
//	  condition: Ready             # consumer: Pending, Active, Cordoned, Drained; provider: Pending, Ready
//	  certificateExpires: "2026-12-01T10:00:00Z"  # absent without a certificate
//	  certificateInvalid: true     # only when the certificate cannot be read
//	  warning:                     # absent when none is current
//	    reason: InvalidCSR
//	    message: ...               # the Event's note, whole (the table cuts it)
//	    time: "2026-11-30T10:00:00Z"
//	  gitops:                      # the peer's TrustedProvider (or AuthorizedConsumer); absent when none is committed
//	    kind: TrustedProvider
//	    name: cl-provider
//	    state: Ready               # the first True of Stalled, Reconciling, Ready; else NotReady (Ready False) or Unknown
//	    reason: Peered
//	    message: the identity is held and renewed through itself
//	    upToDate: true             # false while status.observedGeneration is not metadata.generation
//	unreadable:                    # absent when none: the kinds of peering.kubepact.io the user may not list
//	- {kind: AuthorizedConsumer, reason: Forbidden, message: ...}
//
// The warning is the newest Warning Event about the Tenant or Identity
// that no later Normal Event about it superseded (a controller records a
// Normal Event once it gets past what it warned about): an old refusal
// next to an Active Tenant is history and is not shown. A peer committed
// in Git (an AuthorizedConsumer on a provider, a TrustedProvider on a
// consumer) is listed beside its Tenant or Identity, or alone, Pending,
// until one exists; the table's GITOPS column shows its state, with the
// reason unless Ready, and "(stale)" while it is not upToDate. A user who
// may not list those kinds gets the rest, with a warning on standard error.
//
// version prints the CLI's version: the release (v0.2.0) for a release
// build, else VERSION with -dev and, when the build recorded it, the
// revision built (v0.2.0-dev+9d87c3ba008d, ".dirty" for a checkout with
// changes). The version set with -ldflags "-X main.version=..." wins, then
// the release go install recorded (go install ...@v0.2.0), then VERSION.
// The controller's version is the one the leader of kubepact-controller's
// replicas writes into the leader election Lease it holds (annotation
// kubepact.io/version), "no controller running" when no Lease is held;
// with -o json|yaml, a document of apiVersion cli.kubepact.io/v1, kind
// Version:
//
//	apiVersion: cli.kubepact.io/v1
//	kind: Version
//	clientVersion: v0.2.0
//	cluster:                       # absent with --client, or when the cluster cannot be reached
//	  server: https://10.0.0.1:6443
//	  controller: kubepact-controller  # or liqo-controller-manager; absent when none runs
//	  controllerVersion: v0.2.0    # "unknown" when the holder wrote none; absent when none runs
//	  lease: kubepact-system/kubepact-controller.kubepact.io
//
// version exits 1 when the cluster cannot be reached, and 0 when it
// answers, also when it runs no controller.
//
// Exit status: 0 on success, 1 on failure, 2 on a usage error, 130 when
// interrupted (Ctrl-C; 143 for SIGTERM).
package main

import (
	"context"
	"os"
)

func main() {
	ctx, stop := notifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(ctx, code))
}

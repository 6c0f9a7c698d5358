// Command kubepact gives one Kubernetes cluster (the consumer) a narrowly
// scoped identity on another (the provider), speaking Liqo's authentication
// API (authentication.liqo.io/v1beta1), so either cluster may be a Liqo
// cluster.
//
// Usage:
//
//	kubepact COMMAND [RESOURCE] [flags] [FILE]
//
// The commands, by who runs them:
//
//	authenticate       both clusters reachable: the local cluster (--kubeconfig) consumes the remote one (--remote-kubeconfig)
//	unauthenticate     both clusters reachable: remove what authenticate created
//	install roles      provider: install the ClusterRoles consumers are bound to, once, where neither Liqo nor config/ did
//	create nonce       provider: issue the nonce a consumer must sign
//	get nonce          provider: print a consumer's current nonce
//	generate tenant    consumer: sign a nonce and print the Tenant
//	verify tenant      anyone, offline: check a Tenant against a nonce
//	apply tenant       provider: store a consumer's Tenant
//	generate identity  provider: accept a Tenant, print the Identity
//	apply identity     consumer: check and store a provider's Identity, write the kubeconfig Secret
//	generate key       anyone, offline: write a new cluster key file
//	serve              provider: run the shared-token authentication server (Liqo v0.4-v0.10 API)
//	get token          provider: print the shared token, creating it when missing (--rotate)
//
// With --token, --auth-url and --auth-ca, authenticate instead reaches the
// provider's authentication server with the shared token (no --remote-kubeconfig;
// --remote-cluster-id names the provider).
//
// Every command that talks to a cluster takes --kubeconfig (default $KUBECONFIG
// or ~/.kube/config) and --context, -n/--namespace (the Liqo namespace, which
// holds the cluster key Secret "authentication-keys" and the ConfigMap
// "liqo-clusterid-configmap"; default "liqo"), --cluster-id (default: the
// ConfigMap's CLUSTER_ID) and --timeout. authenticate and unauthenticate add
// --remote-kubeconfig, --remote-context, --remote-namespace and
// --remote-cluster-id for the provider. Commands that print an object take
// -o yaml|json; what they print can be applied with kubectl apply -f on the
// other cluster. Run "kubepact COMMAND [RESOURCE] -h" for every flag.
//
// # Online: both clusters reachable from one place
//
//	kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig
//	kubepact unauthenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig
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
// kubeconfigs and Secrets are never printed. Errors start with "kubepact: ",
// name the step of the handshake that failed, and say what to do next.
//
// Exit status: 0 on success, 1 on failure, 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is what a command reads and writes.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// consumerID is the consumer of the handshake at hand, once known; the
	// advice printed with an error uses it.
	consumerID string
	// wrapTransport, when set, wraps the transport of every client of a
	// cluster (role "consumer", "provider", ...): tests record requests.
	wrapTransport func(role string, rt http.RoundTripper) http.RoundTripper
}

// runFunc runs a command with its positional arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// command is one entry of the command table. setup registers the command's
// flags and returns the function that runs it.
type command struct {
	name     string // "generate tenant"
	synopsis string // what follows the name in the usage line
	summary  string
	example  string
	setup    func(f *flags) runFunc
}

var commands = []command{
	{"authenticate", "--remote-kubeconfig FILE [flags]",
		"Make the local cluster a consumer of the remote one, through both clusters' controllers (or in-process with --local)",
		`  # The clusters' controllers answer; the CLI writes and waits, as liqoctl does
  kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

  # No controller runs: do every step from here, with both admin kubeconfigs
  kubepact authenticate --local --remote-kubeconfig provider.kubeconfig`, authenticateCommand},
	{"unauthenticate", "--remote-kubeconfig FILE [flags]",
		"Remove the identity authenticate created, on both clusters",
		`  kubepact unauthenticate --remote-kubeconfig provider.kubeconfig

  # The provider is gone for good: clean up the consumer only
  kubepact unauthenticate --force --remote-cluster-id cl-provider`, unauthenticateCommand},
	{"status", "[flags]",
		"Show the cluster's peers: role, condition, GitOps state, certificate expiry and last error",
		`  kubepact status
  kubepact status --context provider -o json`, statusCommand},
	{"version", "[flags]",
		"Print the CLI's version and, when the cluster is reachable, its controller's",
		`  kubepact version
  kubectl kubepact version --client`, versionCommand},
	{"install roles", "[flags]",
		"Provider: install the ClusterRoles consumers are bound to (Liqo's chart and config/roles ship them too)",
		`  kubepact install roles --context provider`, installRolesCommand},
	{"create nonce", "--remote-cluster-id CONSUMER [flags]",
		"Provider: issue the nonce a consumer must sign, and print it",
		`  kubepact create nonce --remote-cluster-id cl-consumer > nonce.txt`, createNonceCommand},
	{"get nonce", "--remote-cluster-id CONSUMER [flags]",
		"Provider: print a consumer's current nonce",
		`  kubepact get nonce --remote-cluster-id cl-consumer
  kubepact get nonce --remote-cluster-id cl-consumer -o yaml`, getNonceCommand},
	{"get tenant", "[CONSUMER] [flags]",
		"Provider: print Tenants, as a table or with -o",
		`  kubepact get tenant
  kubepact get tenant cl-consumer -o json`, getTenantCommand},
	{"get identity", "[PROVIDER] [flags]",
		"Consumer: print Identities, as a table or with -o",
		`  kubepact get identity
  kubepact get identity cl-provider -o yaml`, getIdentityCommand},
	{"get kubeconfig", "--remote-cluster-id PROVIDER [--resourceslice NAME] [--output-file FILE] [flags]",
		"Consumer: print, or write to a file, the kubeconfig of a peering (its ControlPlane identity or a ResourceSlice's)",
		`  kubepact get kubeconfig --remote-cluster-id cl-provider > provider.kubeconfig
  kubepact get kubeconfig --remote-cluster-id cl-provider --resourceslice gpu --output-file gpu.kubeconfig`, getKubeconfigCommand},
	{"generate tenant", "--remote-cluster-id PROVIDER --nonce NONCE [flags]",
		"Consumer: sign the provider's nonce and print the Tenant",
		`  kubepact generate tenant --remote-cluster-id cl-provider --nonce "$(cat nonce.txt)" > tenant.yaml`, generateTenantCommand},
	{"verify tenant", "--nonce NONCE [flags] FILE|-",
		"Check a Tenant against a nonce, offline",
		`  kubepact verify tenant --nonce "$(cat nonce.txt)" tenant.yaml`, verifyTenantCommand},
	{"apply tenant", "FILE|- [flags]",
		"Provider: store a consumer's Tenant",
		`  kubepact apply tenant tenant.yaml`, applyTenantCommand},
	{"generate identity", "--remote-cluster-id CONSUMER [-f FILE|-] [flags]",
		"Provider: accept a consumer's Tenant and print its Identity",
		`  kubepact generate identity --remote-cluster-id cl-consumer -f tenant.yaml > identity.yaml`, generateIdentityCommand},
	{"apply identity", "--remote-cluster-id PROVIDER FILE|- [flags]",
		"Consumer: store the provider's Identity and write the kubeconfig Secret",
		`  kubepact apply identity --remote-cluster-id cl-provider identity.yaml`, applyIdentityCommand},
	{"get public-key", "[--key cluster|enrolment|enrolment-next] [flags]",
		"Print this cluster's public key as the peering objects take it: the cluster key (AuthorizedConsumer) or the enrolment key (TrustedProvider)",
		`  kubepact get public-key
  kubepact get public-key --key enrolment`, getPublicKeyCommand},
	{"generate authorized-consumer", "--remote-cluster-id PROVIDER [flags]",
		"Consumer: print the AuthorizedConsumer the provider commits to let this cluster peer from Git",
		`  kubepact generate authorized-consumer --remote-cluster-id cl-provider > authorized-consumer.yaml`, generateAuthorizedConsumerCommand},
	{"generate trusted-provider", "--enrolment-url URL [flags]",
		"Provider: print the TrustedProvider a consumer commits to peer with this cluster from Git",
		`  kubepact generate trusted-provider --enrolment-url https://enrol.provider.example > trusted-provider.yaml`, generateTrustedProviderCommand},
	{"generate peering", "--remote-kubeconfig FILE --enrolment-url URL [flags]",
		"Print both manifests of a peering from Git: the consumer's TrustedProvider and the provider's AuthorizedConsumer",
		`  kubepact generate peering --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig \
    --enrolment-url https://enrol.provider.example`, generatePeeringCommand},
	{"generate key", "--out FILE [--algorithm ALG]",
		"Write a new cluster key file (PKCS#8 PEM), for Tenants signed offline",
		`  kubepact generate key --out key.pem --algorithm ed25519`, generateKeyCommand},
	{"serve", "[--listen ADDR] [--tls-secret NAME | --hosts HOSTS] [flags]",
		"Provider: run the token authentication server (Liqo v0.4-v0.10 API)",
		`  kubepact serve --listen :8443 --hosts auth.provider.example`, serveCommand},
	{"get token", "[--rotate] [flags]",
		"Provider: print the shared authentication token, creating it when missing",
		`  kubepact get token
  kubepact get token --rotate`, getTokenCommand},
	{"create serviceaccount-identity", "--remote-cluster-id CONSUMER [--expiration D] [--out FILE] [flags]",
		"Provider: issue a ServiceAccount identity with an expiring token, and print its kubeconfig Secret",
		`  kubepact create serviceaccount-identity --remote-cluster-id cl-consumer --expiration 24h --out secret.yaml`, createServiceAccountIdentityCommand},
	{"revoke serviceaccount-identity", "--remote-cluster-id CONSUMER [flags]",
		"Provider: delete a consumer's ServiceAccount identity; its tokens stop working",
		`  kubepact revoke serviceaccount-identity --remote-cluster-id cl-consumer`, revokeServiceAccountIdentityCommand},
	{"apply serviceaccount-identity", "FILE|- [flags]",
		"Consumer: store the kubeconfig Secret of a ServiceAccount identity",
		`  kubepact apply serviceaccount-identity secret.yaml`, applyServiceAccountIdentityCommand},
	{"refresh serviceaccount-identity", "--remote-cluster-id PROVIDER [--watch] [flags]",
		"Consumer: replace the token of a ServiceAccount identity before it expires",
		`  kubepact refresh serviceaccount-identity --remote-cluster-id cl-provider --watch`, refreshServiceAccountIdentityCommand},
	{"create resourceslice", "NAME --remote-cluster-id PROVIDER [--class C] [--resource cpu=2,...] [flags]",
		"Consumer: ask the provider for a ResourceSlice and its identity",
		`  kubepact create resourceslice gpu --remote-cluster-id cl-provider --resource cpu=2,memory=4Gi`, createResourceSliceCommand},
	{"get resourceslice", "[NAME] --remote-cluster-id PROVIDER [flags]",
		"Consumer: print ResourceSlices, their conditions and Identities",
		`  kubepact get resourceslice --remote-cluster-id cl-provider
  kubepact get resourceslice gpu --remote-cluster-id cl-provider -o json`, getResourceSliceCommand},
	{"delete resourceslice", "NAME --remote-cluster-id PROVIDER [flags]",
		"Consumer: delete a ResourceSlice, its identity and its copy on the provider",
		`  kubepact delete resourceslice gpu --remote-cluster-id cl-provider`, deleteResourceSliceCommand},
	{"cordon tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: accept no new ResourceSlice of a consumer (only from Active)",
		`  kubepact cordon tenant --remote-cluster-id cl-consumer`, cordonTenantCommand},
	{"uncordon tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: make a cordoned Tenant Active again",
		`  kubepact uncordon tenant --remote-cluster-id cl-consumer`, uncordonTenantCommand},
	{"drain tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: delete a consumer's bindings and ResourceSlices, revoking its certificates",
		`  kubepact drain tenant --remote-cluster-id cl-consumer`, drainTenantCommand},
	{"readmit tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: let a drained or forgotten consumer be bound again before its certificates expire",
		`  kubepact readmit tenant --remote-cluster-id cl-consumer`, readmitTenantCommand},
}

// verbs are the summaries of the commands that group others.
var verbs = map[string]string{
	"install":  "Install what a provider needs",
	"create":   "Create a nonce, a ServiceAccount identity or a ResourceSlice",
	"get":      "Print objects of the handshake, a kubeconfig, a token or a public key",
	"generate": "Generate a Tenant, an Identity, a key or the manifests of a peering from Git",
	"verify":   "Verify a Tenant offline",
	"apply":    "Store a Tenant, an Identity or a ServiceAccount identity",
	"revoke":   "Revoke a ServiceAccount identity",
	"refresh":  "Refresh a ServiceAccount identity",
	"delete":   "Delete a ResourceSlice",
	"cordon":   "Cordon a consumer's Tenant",
	"uncordon": "Uncordon a consumer's Tenant",
	"drain":    "Drain a consumer's Tenant",
	"readmit":  "Readmit a consumer",
}

// run runs the command named by args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	cmd, err := execute(ctx, e, args)
	return report(e, cmd, err)
}

// execute runs the command named by args and returns the command it ran
// and its error.
func execute(ctx context.Context, e *env, args []string) (*cobra.Command, error) {
	root := newRootCommand(e)
	root.SetArgs(args)
	return root.ExecuteContextC(ctx)
}

// displayName is how the program is called: "kubectl kubepact" when kubectl
// runs it as a plugin (installed as kubectl-kubepact), else "kubepact".
func displayName() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl kubepact"
	}
	return "kubepact"
}

// longHelp is what a command's help says beyond its summary, if anything,
// after a blank line.
func longHelp(name string) string {
	if name == "version" {
		return "\n\n" + versionHelp
	}
	return ""
}

// newRootCommand builds the command tree over e.
func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubepact",
		Short: "Give one Kubernetes cluster a narrowly scoped identity on another",
		Long: `kubepact gives one Kubernetes cluster (the consumer) a narrowly scoped identity
on another (the provider), speaking Liqo's authentication.liqo.io/v1beta1.`,
		Example: `  # Online, both clusters reachable, their controllers running
  kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

  # Offline, files moved by hand
  provider$ kubepact create nonce --remote-cluster-id CONSUMER > nonce.txt
  consumer$ kubepact generate tenant --remote-cluster-id PROVIDER --nonce "$(cat nonce.txt)" > tenant.yaml
  provider$ kubepact generate identity --remote-cluster-id CONSUMER -f tenant.yaml > identity.yaml
  consumer$ kubepact apply identity --remote-cluster-id PROVIDER identity.yaml`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName()},
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(e.stderr, cmd.UsageString())
			return usagef("missing command")
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })

	groups := map[string]*cobra.Command{}
	for i := range commands {
		c := &commands[i]
		parent, use := root, c.name
		if verb, resource, ok := strings.Cut(c.name, " "); ok {
			if groups[verb] == nil {
				groups[verb] = newGroupCommand(verb)
				root.AddCommand(groups[verb])
			}
			parent, use = groups[verb], resource
		}
		f := newFlags(c.name)
		f.env = e
		runCmd := c.setup(f)
		cmd := &cobra.Command{
			Use:     use + " " + c.synopsis,
			Short:   c.summary,
			Long:    c.summary + "." + longHelp(c.name),
			Example: c.example,
			Args:    cobra.ArbitraryArgs, // each command checks its own
			RunE: func(cmd *cobra.Command, args []string) error {
				return runCmd(cmd.Context(), e, args)
			},
		}
		f.addTo(cmd.Flags())
		// pflag's warnings (a deprecated flag used) go to standard error,
		// not through cobra's buffer to the command's output.
		cmd.Flags().SetOutput(e.stderr)
		parent.AddCommand(cmd)
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			for _, sh := range c.Commands() {
				sh.Example = fmt.Sprintf("  source <(kubepact completion %[1]s)\n  kubepact completion %[1]s > kubepact-completion.%[1]s", sh.Name())
			}
			c.Example = "  source <(kubepact completion bash)"
		}
		if c.Name() == "help" {
			c.Example = "  kubepact help generate tenant"
		}
	}
	return root
}

// newGroupCommand returns the command that groups the commands of verb: run
// alone or with an unknown resource, it is a usage error.
func newGroupCommand(verb string) *cobra.Command {
	return &cobra.Command{
		Use:     verb + " RESOURCE",
		Short:   verbs[verb],
		Example: fmt.Sprintf("  kubepact %s --help", verb),
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var resources []string // in the order of the command table
			for _, c := range commands {
				if v, resource, ok := strings.Cut(c.name, " "); ok && v == verb {
					resources = append(resources, resource)
				}
			}
			if len(args) == 0 {
				return usagef("%s what? One of: %s", verb, strings.Join(resources, ", "))
			}
			return usagef("unknown resource %q; one of: %s", args[0], strings.Join(resources, ", "))
		},
	}
}

// unknownCommand is the root's argument check: any argument that names no
// command is a usage error.
func unknownCommand(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q", args[0])
	}
	return nil
}

// report prints err, if any, and returns the exit code it stands for.
func report(e *env, cmd *cobra.Command, err error) int {
	path := "kubepact"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		if name := strings.TrimSpace(strings.TrimPrefix(path, displayName())); name != "" {
			fmt.Fprintf(e.stderr, "kubepact: %s: %s\nRun '%s --help' for help.\n", name, usage.msg, path)
		} else {
			fmt.Fprintf(e.stderr, "kubepact: %s\nRun '%s --help' for help.\n", usage.msg, path)
		}
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "kubepact: %s\n", strings.TrimPrefix(err.Error(), "kubepact: "))
	if hint := advice(err, e.consumerID); hint != "" {
		fmt.Fprintf(e.stderr, "  %s\n", hint)
	}
	return exitError
}

// usageError reports a command line that cannot be run as written.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// flags are a command's flags, registered by its setup before the command
// exists. kubectl's connection flags (ConfigFlags) are registered apart, in
// connection, and a command's own flag of the same name wins over them
// (authenticate's deprecated --token, create serviceaccount-identity's --as).
type flags struct {
	*pflag.FlagSet
	short      map[string]string // long name → one-letter alias
	connection []*pflag.FlagSet
	env        *env
}

func newFlags(name string) *flags {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	return &flags{FlagSet: fs, short: map[string]string{}}
}

// alias makes -short another name of the flag long.
func (f *flags) alias(short, long string) { f.short[long] = short }

// addTo adds every flag to fs.
func (f *flags) addTo(fs *pflag.FlagSet) {
	f.VisitAll(func(fl *pflag.Flag) {
		if s, ok := f.short[fl.Name]; ok {
			fl.Shorthand = s
		}
		fs.AddFlag(fl)
	})
	for _, k := range f.connection {
		k.VisitAll(func(fl *pflag.Flag) {
			if fs.Lookup(fl.Name) != nil || (fl.Shorthand != "" && fs.ShorthandLookup(fl.Shorthand) != nil) {
				return
			}
			fs.AddFlag(fl)
		})
	}
}

// noArgs and oneArg check the number of positional arguments.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

func oneArg(args []string, what string) (string, error) {
	switch len(args) {
	case 0:
		return "", usagef("missing %s", what)
	case 1:
		return args[0], nil
	}
	return "", usagef("unexpected argument %q after %s", args[1], what)
}

// required reports a flag that was not given.
func required(name, value string) error {
	if value == "" {
		return usagef("--%s is required", name)
	}
	return nil
}

// maxOneArg returns the one optional positional argument, "" when none.
func maxOneArg(args []string, what string) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	return oneArg(args, what)
}

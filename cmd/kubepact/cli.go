package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
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
}

// runFunc runs a command with its positional arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// command is one entry of the command table. setup registers the command's
// flags and returns the function that runs it.
type command struct {
	name     string // "generate tenant"
	synopsis string // what follows the name in the usage line
	summary  string
	setup    func(f *flags) runFunc
}

var commands = []command{
	{"authenticate", "--remote-kubeconfig FILE [flags]",
		"Run the whole handshake: the local cluster becomes a consumer of the remote one", authenticateCommand},
	{"unauthenticate", "--remote-kubeconfig FILE [flags]",
		"Remove the identity authenticate created, on both clusters", unauthenticateCommand},
	{"install roles", "[flags]",
		"Provider: install the ClusterRoles consumers are bound to (Liqo's chart and config/roles ship them too)", installRolesCommand},
	{"create nonce", "--remote-cluster-id CONSUMER [flags]",
		"Provider: issue the nonce a consumer must sign, and print it", createNonceCommand},
	{"get nonce", "--remote-cluster-id CONSUMER [flags]",
		"Provider: print a consumer's current nonce", getNonceCommand},
	{"generate tenant", "--remote-cluster-id PROVIDER --nonce NONCE [flags]",
		"Consumer: sign the provider's nonce and print the Tenant", generateTenantCommand},
	{"verify tenant", "--nonce NONCE [flags] FILE|-",
		"Check a Tenant against a nonce, offline", verifyTenantCommand},
	{"apply tenant", "FILE|- [flags]",
		"Provider: store a consumer's Tenant", applyTenantCommand},
	{"generate identity", "--remote-cluster-id CONSUMER [-f FILE|-] [flags]",
		"Provider: accept a consumer's Tenant and print its Identity", generateIdentityCommand},
	{"apply identity", "--remote-cluster-id PROVIDER FILE|- [flags]",
		"Consumer: store the provider's Identity and write the kubeconfig Secret", applyIdentityCommand},
	{"generate key", "--out FILE [--algorithm ALG]",
		"Write a new cluster key file (PKCS#8 PEM), for Tenants signed offline", generateKeyCommand},
	{"serve", "[--listen ADDR] [--tls-secret NAME | --hosts HOSTS] [flags]",
		"Provider: run the token authentication server (Liqo v0.4-v0.10 API)", serveCommand},
	{"get token", "[--rotate] [flags]",
		"Provider: print the shared authentication token, creating it when missing", getTokenCommand},
	{"create serviceaccount-identity", "--remote-cluster-id CONSUMER [--expiration D] [--out FILE] [flags]",
		"Provider: issue a ServiceAccount identity with an expiring token, and print its kubeconfig Secret", createServiceAccountIdentityCommand},
	{"revoke serviceaccount-identity", "--remote-cluster-id CONSUMER [flags]",
		"Provider: delete a consumer's ServiceAccount identity; its tokens stop working", revokeServiceAccountIdentityCommand},
	{"apply serviceaccount-identity", "FILE|- [flags]",
		"Consumer: store the kubeconfig Secret of a ServiceAccount identity", applyServiceAccountIdentityCommand},
	{"refresh serviceaccount-identity", "--remote-cluster-id PROVIDER [--watch] [flags]",
		"Consumer: replace the token of a ServiceAccount identity before it expires", refreshServiceAccountIdentityCommand},
	{"create resourceslice", "NAME --remote-cluster-id PROVIDER [--class C] [--resource cpu=2,...] [flags]",
		"Consumer: ask the provider for a ResourceSlice and its identity", createResourceSliceCommand},
	{"get resourceslice", "[NAME] --remote-cluster-id PROVIDER [flags]",
		"Consumer: print ResourceSlices, their conditions and Identities", getResourceSliceCommand},
	{"delete resourceslice", "NAME --remote-cluster-id PROVIDER [flags]",
		"Consumer: delete a ResourceSlice, its identity and its copy on the provider", deleteResourceSliceCommand},
	{"cordon tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: accept no new ResourceSlice of a consumer (only from Active)", cordonTenantCommand},
	{"uncordon tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: make a cordoned Tenant Active again", uncordonTenantCommand},
	{"drain tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: delete a consumer's bindings and ResourceSlices, revoking its certificates", drainTenantCommand},
	{"readmit tenant", "--remote-cluster-id CONSUMER [flags]",
		"Provider: let a drained or forgotten consumer be bound again before its certificates expire", readmitTenantCommand},
}

// run runs the command named by args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	if args[0] == "help" && len(args) > 1 { // "help generate tenant"
		args = append(args[1:], "-h")
	}
	if isHelp(args[0]) || args[0] == "help" {
		printUsage(stdout)
		return exitOK
	}
	c, rest, err := lookup(args)
	if err != nil {
		fmt.Fprintf(stderr, "kubepact: %v\nRun 'kubepact -h' for the list of commands.\n", err)
		return exitUsage
	}

	f := newFlags(c.name)
	runCmd := c.setup(f)
	positional, err := f.parse(rest)
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(stdout, c, f)
		return exitOK
	}
	if err == nil {
		err = runCmd(ctx, e, positional)
	}
	return report(e, c, err)
}

// report prints err, if any, and returns the exit code it stands for.
func report(e *env, c *command, err error) int {
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(e.stderr, "kubepact: %s: %s\nRun 'kubepact %s -h' for help.\n", c.name, usage.msg, c.name)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "kubepact: %s\n", strings.TrimPrefix(err.Error(), "kubepact: "))
	if hint := advice(err, e.consumerID); hint != "" {
		fmt.Fprintf(e.stderr, "  %s\n", hint)
	}
	return exitError
}

// lookup finds the command named by the first words of args.
func lookup(args []string) (*command, []string, error) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &commands[i], args[len(words):], nil
		}
	}
	var resources []string
	for _, c := range commands {
		if verb, resource, ok := strings.Cut(c.name, " "); ok && verb == args[0] {
			resources = append(resources, resource)
		}
	}
	switch {
	case len(resources) == 0:
		return nil, nil, fmt.Errorf("unknown command %q", args[0])
	case len(args) == 1:
		return nil, nil, fmt.Errorf("%s what? One of: %s", args[0], strings.Join(resources, ", "))
	}
	return nil, nil, fmt.Errorf("%s: unknown resource %q; one of: %s", args[0], args[1], strings.Join(resources, ", "))
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

func printUsage(w io.Writer) {
	fmt.Fprint(w, `kubepact gives one Kubernetes cluster (the consumer) a narrowly scoped identity
on another (the provider), speaking Liqo's authentication.liqo.io/v1beta1.

Usage:
  kubepact COMMAND [RESOURCE] [flags] [FILE]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Online, both clusters reachable:
  kubepact authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

Offline, files moved by hand:
  provider$ kubepact create nonce --remote-cluster-id CONSUMER > nonce.txt
  consumer$ kubepact generate tenant --remote-cluster-id PROVIDER --nonce "$(cat nonce.txt)" > tenant.yaml
  provider$ kubepact generate identity --remote-cluster-id CONSUMER -f tenant.yaml > identity.yaml
  consumer$ kubepact apply identity --remote-cluster-id PROVIDER identity.yaml

Run 'kubepact COMMAND [RESOURCE] -h' for a command's flags.
`)
}

func printCommandUsage(w io.Writer, c *command, f *flags) {
	fmt.Fprintf(w, "%s.\n\nUsage:\n  kubepact %s %s\n\nFlags:\n", c.summary, c.name, c.synopsis)
	f.printDefaults(w)
}

// usageError reports a command line that cannot be run as written.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// flags is a flag.FlagSet whose flags may have a one-letter alias, such as
// -n for --namespace, and whose usage is printed kubectl-style.
type flags struct {
	*flag.FlagSet
	short map[string]string // long name → one-letter alias
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, usage by printCommandUsage
	fs.Usage = func() {}
	return &flags{FlagSet: fs, short: map[string]string{}}
}

// alias makes -short another name of the flag long.
func (f *flags) alias(short, long string) {
	f.Var(f.Lookup(long).Value, short, "")
	f.short[long] = short
}

// parse parses args, flags and positional arguments in any order, as
// kubectl does; everything after "--" is positional.
func (f *flags) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		rest := f.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// printDefaults prints every flag with its alias, type, usage and default.
func (f *flags) printDefaults(w io.Writer) {
	aliases := map[string]bool{}
	for _, s := range f.short {
		aliases[s] = true
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	f.VisitAll(func(fl *flag.Flag) {
		if aliases[fl.Name] {
			return
		}
		name := "    --" + fl.Name
		if s, ok := f.short[fl.Name]; ok {
			name = "-" + s + ", --" + fl.Name
		}
		typ, usage := flag.UnquoteUsage(fl)
		if typ == "value" { // a flag.Value of this package: all take one word
			typ = "string"
		}
		switch {
		case fl.DefValue == "" || fl.DefValue == "false":
		case typ == "string":
			usage += fmt.Sprintf(" (default %q)", fl.DefValue)
		default:
			usage += fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(tw, "  %s %s\t%s\n", name, typ, usage)
	})
	tw.Flush()
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

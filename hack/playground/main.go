//go:build linux

// Command playground runs two local Kubernetes control planes, a provider and a consumer, with
// kubepact installed in both and each cluster's kubepact-controller running as its
// ServiceAccount, to try kubepact by hand. hack/playground.sh runs it from the repository root:
//
//	hack/playground.sh up      # start everything; print the commands to peer, inspect and unpeer
//	hack/playground.sh status  # what runs, and the commands again
//	hack/playground.sh down    # stop everything and remove the state directory
//
// The clusters are internal/testcluster's: etcd, kube-apiserver and kube-controller-manager on
// 127.0.0.1, built once by hack/controlplane.sh into ~/.cache/kubepact/controlplane. They run no
// kubelet, so no Pod ever runs: the installed Deployment stays unready, and the controllers run
// here instead, as processes with the Deployment's args, env and ServiceAccount (a token from the
// TokenRequest API, valid 24 hours), plus --api-server-url, as these clusters publish no
// kube-public/cluster-info.
// kubepact is installed from charts/kubepact with `helm template` when helm is on the PATH, else
// from config/ with `kubectl kustomize`; kubectl must be on the PATH.
//
// Everything the playground starts outlives `up`, each process in a session of its own. The
// state directory (--state-dir, else $KUBEPACT_PLAYGROUND_DIR, else
// $XDG_STATE_HOME/kubepact-playground, else ~/.local/state/kubepact-playground) holds the
// process IDs, the kubeconfigs, the logs, a copy of the built binaries and the clusters' data;
// `down` stops the processes and removes it. The binaries are built into
// ~/.cache/kubepact/playground/bin ($XDG_CACHE_HOME), so that the next up links them again only
// when the code changed. Linux only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

const usage = `usage: playground [--state-dir DIR] up|status|down

  up      start a provider and a consumer cluster with kubepact and its controllers
  status  say what runs, and print the commands to peer, inspect and unpeer
  down    stop everything up started and remove the state directory
`

func main() {
	fs := flag.NewFlagSet("playground", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	dir := fs.String("state-dir", defaultStateDir(), "where the playground keeps its state (env KUBEPACT_PLAYGROUND_DIR)")
	// The command comes first or last: up --state-dir DIR, or --state-dir DIR up.
	args, command := os.Args[1:], ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		command, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if command == "" && fs.NArg() == 1 {
		command = fs.Arg(0)
	} else if fs.NArg() != 0 {
		command = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch command {
	case "up":
		err = up(ctx, *dir)
	case "status":
		err = status(*dir)
	case "down":
		err = down(*dir)
	default:
		fs.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}

// defaultStateDir is $KUBEPACT_PLAYGROUND_DIR, else kubepact-playground in $XDG_STATE_HOME or
// ~/.local/state.
func defaultStateDir() string {
	if dir := os.Getenv("KUBEPACT_PLAYGROUND_DIR"); dir != "" {
		return dir
	}
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "kubepact-playground")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "kubepact-playground")
	}
	return filepath.Join(home, ".local", "state", "kubepact-playground")
}

// status prints what runs and the commands, and fails when the playground is not (wholly) up.
func status(dir string) error {
	st, err := load(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("not up (no state in %s)", dir)
	}
	if err != nil {
		return err
	}
	var gone int
	for _, p := range st.processes() {
		mark := "running"
		if !p.alive() {
			mark, gone = "GONE", gone+1
		}
		fmt.Printf("%-8s %-33s pid %-7d log %s\n", mark, p.Cluster+"/"+p.Name, p.PID, p.Log)
	}
	if !st.Up {
		return fmt.Errorf("not up: an up is starting it, or one left it half-started (then run down)")
	}
	if gone > 0 {
		return fmt.Errorf("partly down: %d processes are gone; run down, then up", gone)
	}
	st.printCommands()
	return nil
}

// down stops every process the state records and removes the state directory.
func down(dir string) error {
	st, err := load(dir)
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat(dir); statErr == nil {
			return fmt.Errorf("%s holds no playground state; remove it yourself if it is a leftover", dir)
		}
		fmt.Println("not up: nothing to do")
		return nil
	}
	if err != nil {
		return err
	}
	stopAll(st.processes())
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Printf("down: every process stopped, %s removed\n", dir)
	return nil
}

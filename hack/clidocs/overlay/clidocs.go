//go:build kubepact_clidocs

// This file is not a package of its own: hack/clidocs builds cmd/kubepact
// with it overlaid as one more file of that package main (go build -overlay,
// -tags kubepact_clidocs), so that cobra's doc package, and go-md2man which
// it needs, are dependencies of the module hack/clidocs only, never of
// kubepact's go.mod, and cmd/kubepact exports nothing for the generator.

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"
)

// init writes the Markdown reference of the command tree that kubepact runs
// into the directory os.Args[1], then exits: in this build, main never runs.
func init() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clidocs-kubepact DIR")
		os.Exit(2)
	}
	root := newRootCommand(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	root.DisableAutoGenTag = true // no date: the output is reproducible
	if err := doc.GenMarkdownTree(root, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "clidocs:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

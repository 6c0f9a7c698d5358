// Command clidocs writes the CLI reference, one Markdown file per command of
// kubepact's cobra tree, with cobra's doc package:
//
//	go run . DIR    # from hack/clidocs; hack/clidocs.sh runs it into docs/cli
//
// It removes the pages DIR holds (kubepact*.md, as cobra names them), so
// that a command renamed or removed leaves no page behind, then builds and runs cmd/kubepact with
// overlay/clidocs.go as one more file of its package main. The command tree's
// constructor stays unexported in cmd/kubepact, and cobra/doc and go-md2man
// stay out of kubepact's go.mod: they are this module's dependencies.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clidocs DIR")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "clidocs:", err)
		os.Exit(1)
	}
}

// generate writes the reference into out, replacing the pages it held.
func generate(out string) error {
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	list, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/kubepact/kubepact/cmd/kubepact").Output()
	if err != nil {
		return fmt.Errorf("go list cmd/kubepact: %w", err)
	}
	cmdDir := strings.TrimSpace(string(list))
	src, err := filepath.Abs(filepath.Join("overlay", "clidocs.go"))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "clidocs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(cmdDir, "zz_clidocs.go"): src},
	})
	if err != nil {
		return err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(out, "kubepact*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	// The binary is named kubepact, as the pages name the command.
	bin := filepath.Join(tmp, "kubepact")
	build := exec.Command("go", "build", "-tags", "kubepact_clidocs", "-overlay", overlayFile, "-o", bin,
		"github.com/kubepact/kubepact/cmd/kubepact")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build cmd/kubepact with overlay/clidocs.go: %w", err)
	}
	gen := exec.Command(bin, out)
	gen.Stdout, gen.Stderr = os.Stderr, os.Stderr
	// Defaults read from the environment print the same on every machine:
	// cli-runtime's --cache-dir default is $KUBECACHEDIR, else under $HOME.
	gen.Env = []string{"HOME=~", "PATH=" + os.Getenv("PATH")}
	if err := gen.Run(); err != nil {
		return fmt.Errorf("kubepact with overlay/clidocs.go: %w", err)
	}
	return nil
}

// Package kustomize renders the project's kustomizations for tests, as
// kubectl apply -k renders them: with kubectl kustomize, which must be on
// the PATH, run in an environment of its own (see internal/testenv).
package kustomize

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/internal/testenv"
)

// Render returns the objects kubectl kustomize renders from dir, in order.
func Render(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	home, err := os.MkdirTemp("", "kustomize-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	env, err := testenv.Build(testenv.Options{Home: home, Programs: []string{"kubectl"}})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "kubectl", "kustomize", dir)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, exit.Stderr)
		}
		return nil, fmt.Errorf("kubectl kustomize %s (kubectl must be on PATH): %w", dir, err)
	}
	var objects []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objects = append(objects, u)
		}
	}
}

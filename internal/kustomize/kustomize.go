// Package kustomize renders the project's kustomizations for tests, as
// kubectl apply -k renders them: with kubectl kustomize, which must be on
// the PATH.
package kustomize

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Render returns the objects kubectl kustomize renders from dir, in order.
func Render(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	out, err := exec.CommandContext(ctx, "kubectl", "kustomize", dir).Output()
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

// Package decode reads authentication.liqo.io objects from YAML or JSON
// strictly, with a size bound checked before parsing.
package decode

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// Strict decodes data, at most max bytes of YAML or JSON, into obj, which
// must then declare apiVersion authentication.liqo.io/v1beta1 and kind.
// Unknown fields and []byte fields that are not base64 are errors.
func Strict(data []byte, max int, obj any, meta *metav1.TypeMeta, kind string) error {
	if len(data) > max {
		return fmt.Errorf("%d bytes exceeds %d", len(data), max)
	}
	if len(data) == 0 {
		return fmt.Errorf("empty document")
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return err
	}
	if meta.APIVersion != authv1beta1.SchemeGroupVersion.String() || meta.Kind != kind {
		return fmt.Errorf("apiVersion %q kind %q, want %s %s", meta.APIVersion, meta.Kind, authv1beta1.SchemeGroupVersion, kind)
	}
	return nil
}

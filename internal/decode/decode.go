// Package decode reads authentication.liqo.io objects from YAML or JSON
// strictly, with a size bound checked before parsing.
package decode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// Strict decodes data, at most max bytes of YAML or JSON, into obj, which
// must then declare apiVersion authentication.liqo.io/v1beta1 and kind. It
// reads JSON as the API server does (see apiServerJSON). Unknown,
// duplicate and miscased fields, []byte fields that are not base64 and a stream of several
// YAML documents (which kubectl would apply one by one, while only the first
// would be decoded here) are errors.
func Strict(data []byte, max int, obj any, meta *metav1.TypeMeta, kind string) error {
	if len(data) > max {
		return fmt.Errorf("%d bytes exceeds %d", len(data), max)
	}
	if len(data) == 0 {
		return fmt.Errorf("empty document")
	}
	data, err := onlyDocument(data)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, &apiServerJSON{obj}); err != nil {
		return err
	}
	if meta.APIVersion != authv1beta1.SchemeGroupVersion.String() || meta.Kind != kind {
		return fmt.Errorf("apiVersion %q kind %q, want %s %s", meta.APIVersion, meta.Kind, authv1beta1.SchemeGroupVersion, kind)
	}
	return nil
}

// onlyDocument returns the one YAML document in data that is not empty,
// splitting the stream as kubectl does; it fails when there are several.
// With no such document it returns data, for the decoder to refuse.
func onlyDocument(data []byte) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found []byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err == nil && v == nil {
			continue // only comments or whitespace, as kubectl skips them
		}
		if found != nil {
			return nil, fmt.Errorf("more than one YAML document")
		}
		found = doc
	}
	if found == nil {
		return data, nil
	}
	return found, nil
}

// apiServerJSON decodes its JSON into obj as the API server does, with
// sigs.k8s.io/json: case-sensitive field names, and unknown and duplicate
// fields as errors. Being a json.Unmarshaler, it also makes sigs.k8s.io/yaml
// convert YAML to JSON without consulting obj's field types, as kubectl
// does, so a YAML number is not quietly turned into a string.
type apiServerJSON struct{ obj any }

func (a *apiServerJSON) UnmarshalJSON(data []byte) error {
	strict, err := kjson.UnmarshalStrict(data, a.obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

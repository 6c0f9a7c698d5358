package identity

import (
	"errors"
	"fmt"

	kjson "sigs.k8s.io/json"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/decode"
)

// MaxObjectSize bounds the encoded size of an Identity accepted by Decode,
// checked before parsing.
const MaxObjectSize = 64 << 10

// Decode reads an Identity from YAML or JSON, as a provider sends it or
// kubectl prints it, strictly and as the API server reads it: field names
// match case-sensitively (clusterId is not clusterID), and unknown or
// repeated fields are refused rather than ignored or merged. Failures wrap
// ErrMalformed. It checks only the encoding: Verify checks the content.
func Decode(data []byte) (*authv1beta1.Identity, error) {
	var id authv1beta1.Identity
	if err := decode.Strict(data, MaxObjectSize, (*apiServerIdentity)(&id), &id.TypeMeta, authv1beta1.IdentityKind); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &id, nil
}

// apiServerIdentity is an Identity that decodes its JSON as the API server
// does, with sigs.k8s.io/json: case-sensitive field names, and unknown and
// duplicate fields as errors. Being a json.Unmarshaler, it also makes
// sigs.k8s.io/yaml convert YAML to JSON without consulting the Identity's
// field types, as kubectl does, so a YAML number is not quietly turned into
// a string.
type apiServerIdentity authv1beta1.Identity

func (id *apiServerIdentity) UnmarshalJSON(data []byte) error {
	strict, err := kjson.UnmarshalStrict(data, (*authv1beta1.Identity)(id))
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

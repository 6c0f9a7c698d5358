package identity

import (
	"fmt"

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
	if err := decode.Strict(data, MaxObjectSize, &id, &id.TypeMeta, authv1beta1.IdentityKind); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &id, nil
}

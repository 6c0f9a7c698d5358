package tenant

import (
	"errors"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/decode"
)

// MaxObjectSize bounds the encoded size of a Tenant accepted by Decode,
// checked before parsing.
const MaxObjectSize = 64 << 10

// ErrMalformed reports bytes that are not one Tenant in YAML or JSON:
// oversized, truncated, of another kind, with unknown, duplicate or
// miscased fields, with a value of the wrong type, or with a []byte field
// that is not base64.
var ErrMalformed = errors.New("malformed tenant")

// Decode reads a Tenant from YAML or JSON, as a consumer sends it or kubectl
// prints it, strictly and as the API server reads it: field names match
// case-sensitively (clusterId is not clusterID), and unknown or repeated
// fields are refused rather than ignored or merged, so each field Decode
// returns is the one the API server would store. It checks only the
// encoding: Validate and Verify check the content.
func Decode(data []byte) (*authv1beta1.Tenant, error) {
	var t authv1beta1.Tenant
	if err := decode.Strict(data, MaxObjectSize, &t, &t.TypeMeta, authv1beta1.TenantKind); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &t, nil
}

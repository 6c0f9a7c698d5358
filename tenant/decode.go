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
// oversized, truncated, of another kind, with unknown fields, or with a
// []byte field that is not base64.
var ErrMalformed = errors.New("malformed tenant")

// Decode reads a Tenant from YAML or JSON, as a consumer sends it or kubectl
// prints it, strictly. It checks only the encoding: Validate and Verify
// check the content.
func Decode(data []byte) (*authv1beta1.Tenant, error) {
	var t authv1beta1.Tenant
	if err := decode.Strict(data, MaxObjectSize, &t, &t.TypeMeta, authv1beta1.TenantKind); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &t, nil
}

package saidentity

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ErrMalformedToken reports a token that is not a ServiceAccount JWT, or
// whose claims do not fit what the API server said of it.
var ErrMalformedToken = errors.New("malformed serviceaccount token")

// maxTokenSize bounds the tokens ParseToken reads.
const maxTokenSize = 16 << 10

// Token is a ServiceAccount token from the TokenRequest API. It prints only
// whose it is and when it expires. It comes only from ParseToken.
type Token struct {
	value     string
	expiry    time.Time
	issuedAt  time.Time
	namespace string
	name      string
	uid       types.UID
}

// claims are the parts of a ServiceAccount JWT kubepact reads.
type claims struct {
	Exp        int64 `json:"exp"`
	Iat        int64 `json:"iat"`
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// ParseToken reads the claims of value, a ServiceAccount JWT, without
// verifying its signature (only the API server that issued it can; see
// identity.Reviewer): the ServiceAccount's namespace, name and UID, when it
// was issued and when it expires. expiry, when not zero, is the expiry the
// TokenRequest status reported, and must equal the token's exp claim to the
// second. Errors wrap ErrMalformedToken and never quote value.
func ParseToken(value string, expiry time.Time) (*Token, error) {
	if len(value) == 0 || len(value) > maxTokenSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformedToken, len(value))
	}
	parts := strings.Split(value, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a JWT", ErrMalformedToken)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64url", ErrMalformedToken)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: payload is not JSON claims", ErrMalformedToken)
	}
	k := c.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" {
		return nil, fmt.Errorf("%w: no serviceaccount claims", ErrMalformedToken)
	}
	if c.Exp <= 0 || c.Iat <= 0 || c.Exp <= c.Iat {
		return nil, fmt.Errorf("%w: bad exp or iat claim", ErrMalformedToken)
	}
	t := &Token{
		value:     value,
		expiry:    time.Unix(c.Exp, 0).UTC(),
		issuedAt:  time.Unix(c.Iat, 0).UTC(),
		namespace: k.Namespace,
		name:      k.ServiceAccount.Name,
		uid:       types.UID(k.ServiceAccount.UID),
	}
	if !expiry.IsZero() && expiry.Unix() != c.Exp {
		return nil, fmt.Errorf("%w: exp claim %s differs from the reported expiry %s", ErrMalformedToken,
			t.expiry.Format(time.RFC3339), expiry.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// Expiry returns when the token stops working.
func (t *Token) Expiry() time.Time { return t.expiry }

// IssuedAt returns when the token was issued.
func (t *Token) IssuedAt() time.Time { return t.issuedAt }

// Lifetime returns how long the token was issued for.
func (t *Token) Lifetime() time.Duration { return t.expiry.Sub(t.issuedAt) }

// ServiceAccount returns the namespace, name and UID of the ServiceAccount
// the token is bound to.
func (t *Token) ServiceAccount() (namespace, name string, uid types.UID) {
	return t.namespace, t.name, t.uid
}

// Equal reports, in constant time, whether t and u are the same token.
func (t *Token) Equal(u *Token) bool {
	if t == nil || u == nil {
		return t == u
	}
	return subtle.ConstantTimeCompare([]byte(t.value), []byte(u.value)) == 1
}

// String prints the ServiceAccount and the expiry, never the token.
func (t *Token) String() string {
	if t == nil {
		return "saidentity.Token(<nil>)"
	}
	return fmt.Sprintf("saidentity.Token(%s/%s expires=%s)", t.namespace, t.name, t.expiry.Format(time.RFC3339))
}

// GoString is String.
func (t *Token) GoString() string { return t.String() }

// Format makes every fmt verb print String.
func (t *Token) Format(f fmt.State, _ rune) { io.WriteString(f, t.String()) }

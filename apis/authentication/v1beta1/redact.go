package v1beta1

import (
	"fmt"
	"io"
)

// String prints the AWS user, access key ID, region and cluster name, and of
// the secret access key only whether there is one. The JSON encoding, which
// is what the API server stores, still carries the key.
func (c AwsConfig) String() string {
	secret := "<none>"
	if c.AwsSecretAccessKey != "" {
		secret = "<redacted>"
	}
	return fmt.Sprintf("v1beta1.AwsConfig(userArn=%s accessKeyID=%s secretAccessKey=%s region=%s cluster=%s)",
		c.AwsUserArn, c.AwsAccessKeyID, secret, c.AwsRegion, c.AwsClusterName)
}

// GoString is String.
func (c AwsConfig) GoString() string { return c.String() }

// Format makes every fmt verb print String, also where an AuthParams,
// Identity, Tenant or ResourceSlice holding c is printed: fmt calls Format
// on every exported field it reaches.
func (c AwsConfig) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

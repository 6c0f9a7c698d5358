package v1beta1_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// TestAwsConfigPrintsRedacted prints every type that can hold an AwsConfig,
// directly and nested, with every verb, and looks for the secret access key
// as text and as hex.
func TestAwsConfigPrintsRedacted(t *testing.T) {
	t.Parallel()
	params := fullAuthParams()
	secret := params.AwsConfig.AwsSecretAccessKey
	tn, id, slice := fullTenant(), fullIdentity(), fullResourceSlice()
	slice.Status.AuthParams = fullAuthParams()
	values := map[string]any{
		"AwsConfig":      *params.AwsConfig,
		"*AwsConfig":     params.AwsConfig,
		"AuthParams":     *params,
		"*AuthParams":    params,
		"Identity":       *id,
		"*Identity":      id,
		"IdentitySpec":   id.Spec,
		"IdentityList":   authv1beta1.IdentityList{Items: []authv1beta1.Identity{*id}},
		"Tenant":         *tn,
		"*Tenant":        tn,
		"TenantStatus":   tn.Status,
		"ResourceSlice":  *slice,
		"*ResourceSlice": slice,
		"[]any":          []any{params, id},
		"map":            map[string]*authv1beta1.AuthParams{"x": params},
	}
	forms := []string{secret, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret)))}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			out := fmt.Sprintf(verb, v)
			for _, form := range forms {
				require.NotContains(t, out, form, "%s printed with %s", name, verb)
			}
		}
		// funcr, like other logr sinks that print by reflection, honours
		// fmt.Stringer on nested values.
		var logged string
		funcr.New(func(prefix, args string) { logged += args }, funcr.Options{}).Info("x", "value", v)
		require.NotContains(t, logged, secret, "%s logged", name)
	}
	require.Equal(t, "<nil>", fmt.Sprint((*authv1beta1.AwsConfig)(nil)))
}

// TestAwsConfigEncodingKeepsTheSecret checks that redaction is for printing
// only: JSON and YAML, which the API server stores, carry the key.
func TestAwsConfigEncodingKeepsTheSecret(t *testing.T) {
	t.Parallel()
	id := fullIdentity()
	for name, marshal := range map[string]func(any) ([]byte, error){"JSON": json.Marshal, "YAML": yaml.Marshal} {
		data, err := marshal(id)
		require.NoError(t, err)
		require.Contains(t, string(data), "awsSecretAccessKey")
		require.Contains(t, string(data), id.Spec.AuthParams.AwsConfig.AwsSecretAccessKey, name)
		var back authv1beta1.Identity
		require.NoError(t, yaml.UnmarshalStrict(data, &back), name)
		require.Equal(t, *id.Spec.AuthParams.AwsConfig, *back.Spec.AuthParams.AwsConfig, name)
	}
}

func ExampleAwsConfig_String() {
	aws := &authv1beta1.AwsConfig{
		AwsUserArn:         "arn:aws:iam::123456789012:user/liqo",
		AwsAccessKeyID:     "AKIAEXAMPLE",
		AwsSecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		AwsRegion:          "eu-west-1",
		AwsClusterName:     "provider",
	}
	fmt.Println(aws)
	fmt.Printf("%+v\n", authv1beta1.AuthParams{APIServer: "https://provider.example:6443", AwsConfig: aws})
	// Output:
	// v1beta1.AwsConfig(userArn=arn:aws:iam::123456789012:user/liqo accessKeyID=AKIAEXAMPLE secretAccessKey=<redacted> region=eu-west-1 cluster=provider)
	// {CA:[] SignedCRT:[] APIServer:https://provider.example:6443 ProxyURL:<nil> AwsConfig:v1beta1.AwsConfig(userArn=arn:aws:iam::123456789012:user/liqo accessKeyID=AKIAEXAMPLE secretAccessKey=<redacted> region=eu-west-1 cluster=provider)}
}

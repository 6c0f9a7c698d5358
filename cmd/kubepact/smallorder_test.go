package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/nonce"
)

// A Tenant with a key of small order, whose every signature is forged
// without a private key, against a nonce its sender never saw: verify
// tenant refuses it under both policies, naming the public key.
func TestVerifyTenantRefusesKeylessForgery(t *testing.T) {
	t.Parallel()
	points, _ := weakkeys.SmallOrder()
	for i, pub := range points {
		for _, raw := range []bool{false, true} {
			for _, policy := range []string{"compatible", "strict"} {
				t.Run(fmt.Sprintf("point%d/raw=%t/%s", i, raw, policy), func(t *testing.T) {
					t.Parallel()
					forged, err := weakkeys.ForgedTenant("cl-consumer", "cl-provider", pub, nonce.Nonce{}, time.Now().Add(time.Minute))
					require.NoError(t, err)
					if raw {
						forged = weakkeys.RawForm(forged, pub)
					}
					data, err := yaml.Marshal(tenantManifest(forged))
					require.NoError(t, err)
					r := cli(t, string(data), "verify", "tenant", "--policy", policy, "--cluster-id", "cl-provider",
						"--nonce", newNonce(t).Text(), "-")
					assert.Equal(t, exitError, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
					assert.Empty(t, r.stdout)
					assert.True(t, strings.HasPrefix(r.stderr, `kubepact: tenant "cl-consumer" rejected: spec.publicKey: `), r.stderr)
					assert.Contains(t, r.stderr, "weak Ed25519 public key")
				})
			}
		}
	}
}

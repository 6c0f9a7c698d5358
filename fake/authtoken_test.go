package fake_test

import (
	"testing"

	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/authtoken/authtokentest"
	"github.com/kubepact/kubepact/fake"
)

func TestTokenStoreConformance(t *testing.T) {
	authtokentest.RunStore(t, func(*testing.T) authtoken.Store { return &fake.TokenStore{} })
}

func TestSecretsConformance(t *testing.T) {
	authtokentest.RunSecrets(t, func(*testing.T) (authtoken.Secrets, string) { return &fake.Secrets{}, "liqo" })
}

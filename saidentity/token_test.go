package saidentity_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/saidentity"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("signature-bytes"))
}

const goodClaims = `{"exp":1700003600,"iat":1700000000,"kubernetes.io":{"namespace":"liqo-tenant-c","serviceaccount":{"name":"remote-c","uid":"u-1"}}}`

func TestParseToken(t *testing.T) {
	t.Parallel()
	tok, err := saidentity.ParseToken(jwt(goodClaims), time.Unix(1700003600, 0))
	if err != nil {
		t.Fatal(err)
	}
	ns, name, uid := tok.ServiceAccount()
	if ns != "liqo-tenant-c" || name != "remote-c" || uid != "u-1" || tok.Lifetime() != time.Hour ||
		!tok.Expiry().Equal(time.Unix(1700003600, 0)) || !tok.IssuedAt().Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("parsed %v: %s/%s %s lifetime %s", tok, ns, name, uid, tok.Lifetime())
	}
	again, err := saidentity.ParseToken(jwt(goodClaims), time.Time{})
	if err != nil || !again.Equal(tok) {
		t.Fatalf("same token: %v, equal=%v", err, again.Equal(tok))
	}
	other, _ := saidentity.ParseToken(jwt(strings.Replace(goodClaims, "u-1", "u-2", 1)), time.Time{})
	if other.Equal(tok) || tok.Equal(nil) {
		t.Fatal("different tokens are Equal")
	}
}

func TestParseTokenRejects(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		value  string
		expiry time.Time
	}{
		"empty":                 {"", time.Time{}},
		"too long":              {strings.Repeat("a", 17<<10), time.Time{}},
		"two parts":             {"a.b", time.Time{}},
		"payload not base64":    {"a.!!!.c", time.Time{}},
		"payload not JSON":      {jwt("not json"), time.Time{}},
		"no namespace":          {jwt(`{"exp":2,"iat":1,"kubernetes.io":{"serviceaccount":{"name":"n","uid":"u"}}}`), time.Time{}},
		"no uid":                {jwt(`{"exp":2,"iat":1,"kubernetes.io":{"namespace":"ns","serviceaccount":{"name":"n"}}}`), time.Time{}},
		"no exp":                {jwt(`{"iat":1,"kubernetes.io":{"namespace":"ns","serviceaccount":{"name":"n","uid":"u"}}}`), time.Time{}},
		"exp equals iat":        {jwt(`{"exp":1,"iat":1,"kubernetes.io":{"namespace":"ns","serviceaccount":{"name":"n","uid":"u"}}}`), time.Time{}},
		"status expiry differs": {jwt(goodClaims), time.Unix(1700007200, 0)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := saidentity.ParseToken(tc.value, tc.expiry)
			if !errors.Is(err, saidentity.ErrMalformedToken) {
				t.Fatalf("ParseToken: %v, want ErrMalformedToken", err)
			}
			if tc.value != "" && len(tc.value) < 1000 && strings.Contains(err.Error(), tc.value) {
				t.Fatal("the error quotes the token")
			}
		})
	}
}

// TestSecretsArePrintedRedacted prints a token, an Identity and the
// kubeconfig params with every verb and finds no part of the token.
func TestSecretsArePrintedRedacted(t *testing.T) {
	t.Parallel()
	value := jwt(goodClaims)
	tok, err := saidentity.ParseToken(value, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := saidentity.Kubeconfig(saidentity.Endpoint{Server: "https://user:pw@provider:6443"}, "c", "p", tok)
	if err != nil {
		t.Fatal(err)
	}
	id := &saidentity.Identity{ConsumerID: "c", Token: tok, Kubeconfig: cfg}
	params := kubeconfig.TokenParams{Name: "p", Server: "https://provider", Token: value}
	sig := strings.Split(value, ".")[2]
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for what, v := range map[string]any{"token": tok, "identity": id, "kubeconfig": cfg, "params": params, "*params": &params} {
			s := fmt.Sprintf(verb, v)
			if strings.Contains(s, value) || strings.Contains(s, sig) || strings.Contains(s, "pw") {
				t.Errorf("%s printed with %s shows a secret: %s", what, verb, s)
			}
		}
	}
	if cfg.BearerToken() != value {
		t.Fatal("the kubeconfig does not hold the token")
	}
}

func TestBuildGrantsIsLeastPrivilege(t *testing.T) {
	t.Parallel()
	g, err := saidentity.BuildGrants("c1")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range append(g.Role.Rules, g.ClusterRole.Rules...) {
		if len(r.ResourceNames) != 1 {
			t.Errorf("rule %d names %v, want exactly one object", i, r.ResourceNames)
		}
		for _, v := range r.Verbs {
			if v == "*" || v == "list" || v == "watch" || v == "create" && r.Resources[0] != "serviceaccounts/token" {
				t.Errorf("rule %d grants %q on %v", i, v, r.Resources)
			}
		}
	}
	if s := g.RoleBinding.Subjects; len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != "remote-c1" || s[0].Namespace != "liqo-tenant-c1" {
		t.Errorf("RoleBinding subjects %v", s)
	}
	if _, err := saidentity.BuildGrants("-bad"); err == nil {
		t.Error("BuildGrants accepted an invalid ID")
	}
}

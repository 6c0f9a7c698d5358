package kubeconfig_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kubepact/kubepact/kubeconfig"
)

func TestBuildTokenRoundTrip(t *testing.T) {
	t.Parallel()
	p := kubeconfig.TokenParams{Name: "p", Server: "https://provider:6443", CA: []byte("ca"), Token: "secret-token", Namespace: "liqo-tenant-c", ProxyURL: "http://proxy:3128"}
	cfg, err := kubeconfig.BuildToken(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := kubeconfig.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.BearerToken() != "secret-token" || back.Server() != p.Server || back.Namespace() != p.Namespace || back.ProxyURL() != p.ProxyURL {
		t.Fatalf("round trip gave %v", back)
	}
	next, err := back.WithBearerToken("new-token")
	if err != nil {
		t.Fatal(err)
	}
	if next.BearerToken() != "new-token" || back.BearerToken() != "secret-token" || next.Server() != p.Server {
		t.Fatal("WithBearerToken changed the original or lost the server")
	}
	if _, err := back.WithBearerToken(""); !errors.Is(err, kubeconfig.ErrInvalid) {
		t.Fatalf("WithBearerToken(\"\"): %v", err)
	}
	rc, err := next.RESTConfig()
	if err != nil || rc.BearerToken != "new-token" {
		t.Fatalf("RESTConfig: %v", err)
	}
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%#v", p), fmt.Sprint(cfg), fmt.Sprintf("%+v", next)} {
		if strings.Contains(s, "token") {
			t.Errorf("printed a token: %s", s)
		}
	}
}

func TestBuildTokenRejects(t *testing.T) {
	t.Parallel()
	good := kubeconfig.TokenParams{Name: "p", Server: "https://provider:6443", Token: "t"}
	for name, mod := range map[string]func(*kubeconfig.TokenParams){
		"no name":   func(p *kubeconfig.TokenParams) { p.Name = "" },
		"no server": func(p *kubeconfig.TokenParams) { p.Server = "" },
		"no token":  func(p *kubeconfig.TokenParams) { p.Token = "" },
		"bad proxy": func(p *kubeconfig.TokenParams) { p.ProxyURL = "ftp://proxy" },
		"host-less": func(p *kubeconfig.TokenParams) { p.ProxyURL = "user:pw@" },
	} {
		p := good
		mod(&p)
		_, err := kubeconfig.BuildToken(p)
		if !errors.Is(err, kubeconfig.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: the error quotes a password: %v", name, err)
		}
	}
}

package authtoken_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/fake"
)

func ExampleEnsure() {
	ctx := context.Background()
	store := &fake.TokenStore{} // kube.NewTokenStore(client, "liqo") on a cluster
	random := bytes.NewReader(bytes.Repeat([]byte{7}, authtoken.Size))

	tok, err := authtoken.Ensure(ctx, store, random)
	if err != nil {
		panic(err)
	}
	fmt.Println(tok)
	fmt.Println(len(tok.Reveal()), tok.Reveal()[:8])
	// Output:
	// authtoken.Token(<redacted>)
	// 128 07070707
}

func ExampleParse() {
	_, err := authtoken.Parse("not a token")
	fmt.Println(err)
	// Output: malformed authentication token: 11 characters, want 128
}

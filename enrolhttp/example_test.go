package enrolhttp_test

import (
	"context"
	"crypto"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
)

// ExampleCheckURL: what a TrustedProvider's endpoint may be.
func ExampleCheckURL() {
	for _, raw := range []string{
		"https://enrolment.provider.example:8443",
		"http://enrolment.provider.example",
		"https://169.254.169.254/latest/meta-data",
		"https://metadata.google.internal",
	} {
		_, err := enrolhttp.CheckURL(raw)
		fmt.Println(raw, errors.Is(err, enrolhttp.ErrForbiddenURL))
	}
	// Output:
	// https://enrolment.provider.example:8443 false
	// http://enrolment.provider.example true
	// https://169.254.169.254/latest/meta-data true
	// https://metadata.google.internal true
}

// ExampleClient_Fetch serves a grant from a Handler over TLS with a
// certificate of the enrolment key, and fetches it as a consumer does.
func ExampleClient_Fetch() {
	enrolmentKey, _ := keys.Generate(nil, keys.Ed25519)
	clusterKey, _ := keys.Generate(nil, keys.Ed25519)
	identityKey, _ := keys.Generate(nil, keys.Ed25519)
	req, _ := enrol.NewRequest(nil, "provider-1", "consumer-1", clusterKey, identityKey)
	grant, _ := enrol.NewGrant(nil, enrolmentKey, req, &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		Namespace: ptr.To("liqo-tenant-consumer-1"), AuthParams: authv1beta1.AuthParams{APIServer: "https://provider.example:6443"},
	}})

	// The provider's endpoint: grants by consumer ID, from a cache.
	grants := func(consumerID string) *peeringv1alpha1.Grant {
		if consumerID == "consumer-1" {
			return grant
		}
		return nil
	}
	srv := httptest.NewUnstartedServer(enrolhttp.NewHandler(grants, enrolhttp.Limits{}))
	servingKey, _ := keys.Generate(nil, keys.Ed25519)
	certPEM, _ := enrol.ServingCertificate(nil, enrolmentKey, "provider-1", servingKey.Public(), nil, time.Now(), time.Hour)
	block, _ := pem.Decode(certPEM)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{block.Bytes}, PrivateKey: servingKey}}}
	srv.StartTLS()
	defer srv.Close()

	// The consumer, which committed the enrolment key.
	c := &enrolhttp.Client{EnrolmentKeys: []crypto.PublicKey{enrolmentKey.Public()}}
	got, err := c.Fetch(context.Background(), srv.URL, req)
	fmt.Println(err == nil && got.ConsumerID == "consumer-1")

	other, _ := enrol.NewRequest(nil, "provider-1", "consumer-2", clusterKey, identityKey)
	_, err = c.Fetch(context.Background(), srv.URL, other)
	fmt.Println(errors.Is(err, enrolhttp.ErrNotAuthorized))
	// Output:
	// true
	// true
}

package enrol_test

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// Example walks the exchange from Git: the consumer's request, committed
// on the provider; the provider's grant, signed with its enrolment key;
// the consumer's check of the grant against what it committed.
func Example() {
	// The consumer: its cluster key, a key for this identity, its request.
	clusterKey, _ := keys.Generate(nil, keys.Ed25519)
	identityKey, _ := keys.Generate(nil, keys.Ed25519)
	req, err := enrol.NewRequest(nil, "provider-1", "consumer-1", clusterKey, identityKey)
	if err != nil {
		panic(err)
	}

	// The provider's administrator commits it, with the consumer's public
	// key: an AuthorizedConsumer.
	pub, _ := keys.MarshalPublicKey(clusterKey.Public())
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer-1"},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{
			ClusterID: "consumer-1", PublicKeys: []string{string(pub)}, Request: req.API(),
		},
	}
	c, err := enrol.FromAuthorizedConsumer(ac)
	if err != nil {
		panic(err)
	}
	if _, err := c.Verify("provider-1"); err != nil {
		panic(err)
	}
	fmt.Println("the provider verified the committed request")

	// The provider accepts it (not shown: its Accept signs the CSR) and
	// signs the Identity with its enrolment key.
	enrolmentKey, _ := keys.Generate(nil, keys.Ed25519)
	ca, _, _ := csr.GenerateCA(nil, "provider CA", time.Now(), time.Hour)
	grant, err := enrol.NewGrant(nil, enrolmentKey, req, &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		Namespace:  ptr.To(clusterid.TenantNamespace("consumer-1")),
		AuthParams: authv1beta1.AuthParams{CA: ca, SignedCRT: []byte("..."), APIServer: "https://provider.example:6443"},
	}})
	if err != nil {
		panic(err)
	}

	// The consumer committed the provider's enrolment key and CA pin (a
	// TrustedProvider), and checks the grant against them.
	pin, _ := enrol.CAPin(ca)
	trust := enrol.Trust{
		ProviderID: "provider-1", ConsumerID: "consumer-1",
		EnrolmentKeys: []crypto.PublicKey{enrolmentKey.Public()}, CASHA256: pin, Request: req,
	}
	id, err := enrol.VerifyGrant(grant, trust)
	if err != nil {
		panic(err)
	}
	fmt.Println("identity for", id.Spec.ClusterID, "in", *id.Spec.Namespace)

	// A grant signed by any other key is refused.
	impostor, _ := keys.Generate(nil, keys.Ed25519)
	forged, _ := enrol.NewGrant(nil, impostor, req, &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{
		Namespace:  ptr.To(clusterid.TenantNamespace("consumer-1")),
		AuthParams: authv1beta1.AuthParams{CA: ca, APIServer: "https://attacker.example:6443"},
	}})
	_, err = enrol.VerifyGrant(forged, trust)
	fmt.Println("forged grant refused:", errors.Is(err, enrol.ErrBadGrant))
	// Output:
	// the provider verified the committed request
	// identity for provider-1 in liqo-tenant-consumer-1
	// forged grant refused: true
}

// ExampleServingCertificate issues the enrolment endpoint's TLS
// certificate with the enrolment key, and checks it as a consumer does.
func ExampleServingCertificate() {
	enrolmentKey, _ := keys.Generate(nil, keys.Ed25519)
	servingKey, _ := keys.Generate(nil, keys.Ed25519)
	now := time.Now()
	certPEM, err := enrol.ServingCertificate(nil, enrolmentKey, "provider-1", servingKey.Public(),
		[]string{"enrolment.provider.example"}, now, 24*time.Hour)
	if err != nil {
		panic(err)
	}
	der, _ := pemDecode(certPEM)
	committed := []crypto.PublicKey{enrolmentKey.Public()}
	fmt.Println("valid now:", enrol.VerifyServingCertificate(der, committed, now) == nil)
	err = enrol.VerifyServingCertificate(der, committed, now.Add(25*time.Hour))
	fmt.Println("expired:", errors.Is(err, enrol.ErrEndpointCertificate))
	// Output:
	// valid now: true
	// expired: true
}

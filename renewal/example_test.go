package renewal_test

import (
	"crypto/x509"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/renewal"
)

func ExampleProviderDeadline() {
	issued := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: issued, NotAfter: issued.Add(7 * 24 * time.Hour)}
	at := renewal.ProviderDeadline(cert)
	// From half the lifetime (3.5 days in) to two thirds (4 days and 16
	// hours in), at a point drawn from the certificate: the same each time.
	fmt.Println(!at.Before(issued.Add(84*time.Hour)), at.Before(issued.Add(112*time.Hour)), at.Equal(renewal.ProviderDeadline(cert)))
	// Output: true true true
}

func ExampleDeadline() {
	issued := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: issued, NotAfter: issued.Add(100 * time.Hour)}
	// Randomness that draws the earliest point of the window: 70 %.
	at, err := renewal.Deadline(cert, constant(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(at.Sub(issued))
	// Output: 70h0m0s
}

func ExampleCheck() {
	r := &authv1beta1.Renew{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-provider", Namespace: "liqo-tenant-cl-consumer"},
		// Written by cl-consumer, claiming to be cl-other.
		Spec: authv1beta1.RenewSpec{ConsumerClusterID: "cl-other", IdentityType: authv1beta1.ControlPlaneIdentityType},
	}
	_, err := renewal.Check(r, "cl-provider")
	fmt.Println(err)
	// Output: renew is not the consumer's own: Renew liqo-tenant-cl-consumer/controlplane-cl-provider names consumer "cl-other", its namespace is consumer "cl-consumer"'s
}

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
	fmt.Println(renewal.ProviderDeadline(cert).Format(time.RFC3339))
	// Output: 2026-11-05T16:00:00Z
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

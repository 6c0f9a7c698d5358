package resourceslice_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

// A slice that holds a week-long certificate issued an hour ago asks for one
// for a new CSR: under the default bounds, not before half that week.
func ExampleBounds_Admit() {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "pool-a", Namespace: "liqo-tenant-cl-consumer"}}
	held := &x509.Certificate{NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7*24*time.Hour - time.Hour)}

	err := resourceslice.Bounds{}.Admit(resourceslice.Signing{Slice: s, Held: held, Now: now})
	var b *resourceslice.BoundError
	fmt.Println(errors.Is(err, resourceslice.ErrRekeyTooSoon), errors.As(err, &b))
	fmt.Println(b.Until)
	fmt.Println(resourceslice.Bounds{}.Admit(resourceslice.Signing{Slice: s, Held: held, Now: b.Until}))
	// Output:
	// true true
	// 2026-12-01 21:00:00 +0000 UTC
	// <nil>
}

package csr_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
)

func ExampleCheckIssued() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	caPEM, caKey, _ := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	ca, _ := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})

	key, _ := keys.Generate(nil, keys.Ed25519)
	pemCSR, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	checked, _ := csr.Check(pemCSR, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	req := csr.Request{CSR: checked, Lifetime: 30 * 24 * time.Hour}
	cert, _ := ca.Sign(context.Background(), req)

	leaf, err := csr.CheckIssued(cert, req, now)
	fmt.Println(leaf.Subject.CommonName, leaf.NotAfter.Sub(now), err)

	// A certificate for thirty days is not the one asked for a day.
	_, err = csr.CheckIssued(cert, csr.Request{CSR: checked, Lifetime: 24 * time.Hour}, now)
	fmt.Println(errors.Is(err, csr.ErrBadCertificate))
	// Output:
	// cl-consumer 720h0m0s <nil>
	// true
}

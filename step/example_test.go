package step_test

import (
	"errors"
	"fmt"

	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/step"
)

// A caller learns which step failed with errors.As, and why with errors.Is.
func ExampleError() {
	var err error = &step.Error{Step: step.TenantApplied, Err: fmt.Errorf("tenant %q rejected: %w", "cl-consumer", nonce.ErrExpired)}

	var failed *step.Error
	if errors.As(err, &failed) {
		fmt.Println("failed step:", failed.Step)
	}
	fmt.Println("nonce expired:", errors.Is(err, nonce.ErrExpired))
	fmt.Println(err)
	// Output:
	// failed step: Tenant correctly applied on provider cluster
	// nonce expired: true
	// kubepact: applying the Tenant on the provider: tenant "cl-consumer" rejected: nonce expired
}

// A step's Name is liqoctl's message for it done; its Action names it under
// way or failed.
func ExampleName_Action() {
	fmt.Println(step.NonceSigned)
	fmt.Println(step.NonceSigned.Action())
	// Output:
	// Nonce signed
	// signing the nonce
}

package fake

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kubepact/kubepact/saidentity"
)

var _ saidentity.Admission = (*Admission)(nil)

// Admission is an in-memory saidentity.Admission: it stores the policies
// and bindings applied, and enforces nothing (it evaluates no CEL). It is
// safe for concurrent use.
type Admission struct {
	Policies objects[*admissionregistrationv1.ValidatingAdmissionPolicy]
	Bindings objects[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]
}

// ApplyPolicy stores p and b.
func (a *Admission) ApplyPolicy(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.Policies.applyOwned(p, nil)
	a.Bindings.applyOwned(b, nil)
	return nil
}

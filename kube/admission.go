package kube

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/saidentity"
)

// Admission is a saidentity.Admission over the API server. Its client
// needs get and patch on validatingadmissionpolicies and
// validatingadmissionpolicybindings of admissionregistration.k8s.io.
type Admission struct{ client kubernetes.Interface }

var _ saidentity.Admission = (*Admission)(nil)

// NewAdmission returns an Admission using client.
func NewAdmission(client kubernetes.Interface) *Admission { return &Admission{client: client} }

// ApplyPolicy applies p, then b, with server-side apply as FieldManager.
func (a *Admission) ApplyPolicy(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	api := a.client.AdmissionregistrationV1()
	spec := admissionregistrationv1ac.ValidatingAdmissionPolicySpec()
	if p.Spec.FailurePolicy != nil {
		spec.WithFailurePolicy(*p.Spec.FailurePolicy)
	}
	if m := p.Spec.MatchConstraints; m != nil {
		mr := admissionregistrationv1ac.MatchResources()
		for _, r := range m.ResourceRules {
			mr.WithResourceRules(admissionregistrationv1ac.NamedRuleWithOperations().
				WithOperations(r.Operations...).WithAPIGroups(r.APIGroups...).WithAPIVersions(r.APIVersions...).WithResources(r.Resources...))
		}
		spec.WithMatchConstraints(mr)
	}
	for _, c := range p.Spec.MatchConditions {
		spec.WithMatchConditions(admissionregistrationv1ac.MatchCondition().WithName(c.Name).WithExpression(c.Expression))
	}
	for _, v := range p.Spec.Validations {
		va := admissionregistrationv1ac.Validation().WithExpression(v.Expression).WithMessage(v.Message)
		if v.Reason != nil {
			va.WithReason(*v.Reason)
		}
		spec.WithValidations(va)
	}
	pac := admissionregistrationv1ac.ValidatingAdmissionPolicy(p.Name).WithLabels(p.Labels).WithSpec(spec)
	if _, err := api.ValidatingAdmissionPolicies().Apply(ctx, pac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ValidatingAdmissionPolicy", "", p.Name)
	}
	bspec := admissionregistrationv1ac.ValidatingAdmissionPolicyBindingSpec().WithPolicyName(b.Spec.PolicyName).
		WithValidationActions(b.Spec.ValidationActions...)
	bac := admissionregistrationv1ac.ValidatingAdmissionPolicyBinding(b.Name).WithLabels(b.Labels).WithSpec(bspec)
	if _, err := api.ValidatingAdmissionPolicyBindings().Apply(ctx, bac, applyOptions(true)); err != nil {
		return wrap(err, "applying", "ValidatingAdmissionPolicyBinding", "", b.Name)
	}
	return nil
}

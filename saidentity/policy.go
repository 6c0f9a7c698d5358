package saidentity

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
)

// TokenPolicyName names the ValidatingAdmissionPolicy that bounds the
// lifetime of the tokens requested for ServiceAccount identities, and its
// binding.
const TokenPolicyName = "kubepact-serviceaccount-identity-token-lifetime"

// Admission installs admission policies on the provider.
//
// ApplyPolicy applies p and b, in that order, with server-side apply under
// field manager "kubepact", taking over the fields it sets; it succeeds
// without writing when nothing changes. The API server enforces a policy
// shortly after it is written, once its admission plugin has seen it.
// Implementations are safe for concurrent use.
type Admission interface {
	ApplyPolicy(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error
}

// TokenPolicy returns the ValidatingAdmissionPolicy, and its binding, that
// refuse a TokenRequest for a ServiceAccount identity ("remote-*" in a
// "liqo-tenant-*" namespace) asking for more than MaxExpiration. Without
// it, a consumer allowed to refresh its token could ask the API server for
// one that lives as long as the server allows (by default, without a
// bound). A TokenRequest that asks for no lifetime gets the API server's
// default of one hour.
func TokenPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	max := int64(MaxExpiration / time.Second)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: TokenPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"serviceaccounts/token"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "serviceaccount-identity",
				Expression: fmt.Sprintf("request.namespace.startsWith(%q) && request.name.startsWith(%q)",
					clusterid.TenantNamespacePrefix, NamePrefix),
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("has(object.spec.expirationSeconds) && object.spec.expirationSeconds <= %d", max),
				Message:    fmt.Sprintf("a ServiceAccount identity's token may live at most %d seconds", max),
				Reason:     ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: TokenPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        TokenPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

func ptr[T any](v T) *T { return &v }

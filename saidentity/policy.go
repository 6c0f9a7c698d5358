package saidentity

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
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
// keep every token of a ServiceAccount identity ("remote-*" in a
// "liqo-tenant-*" namespace) bounded in lifetime:
//
//   - a TokenRequest for it asking for more than MaxExpiration is refused.
//     Without that, a consumer allowed to refresh its token could ask the
//     API server for one that lives as long as the server allows (by
//     default, without a bound). A TokenRequest that asks for no lifetime
//     gets the API server's default of one hour.
//   - a Secret of type kubernetes.io/service-account-token naming it
//     (annotation kubernetes.io/service-account.name) is refused, on create
//     and on update. Kubernetes' token controller fills such a Secret with
//     a token that never expires, so anyone allowed to create Secrets in
//     the tenant namespace could otherwise mint one for the identity.
//
// Tokens and token Secrets of any other ServiceAccount are not its
// business.
func TokenPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	max := int64(MaxExpiration / time.Second)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: TokenPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					rule("serviceaccounts/token", admissionregistrationv1.Create),
					rule("secrets", admissionregistrationv1.Create, admissionregistrationv1.Update),
				},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{
					Name:       "tenant-namespace",
					Expression: fmt.Sprintf("request.namespace.startsWith(%q)", clusterid.TenantNamespacePrefix),
				},
				{
					Name: "serviceaccount-identity",
					Expression: fmt.Sprintf(`request.resource.resource == "serviceaccounts" ? request.name.startsWith(%[1]q) : `+
						`(has(object.type) && object.type == %[2]q && has(object.metadata.annotations) && `+
						`%[3]q in object.metadata.annotations && object.metadata.annotations[%[3]q].startsWith(%[1]q))`,
						NamePrefix, corev1.SecretTypeServiceAccountToken, corev1.ServiceAccountNameKey),
				},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: fmt.Sprintf(`request.resource.resource != "serviceaccounts" || (has(object.spec.expirationSeconds) && object.spec.expirationSeconds <= %d)`, max),
					Message:    fmt.Sprintf("a ServiceAccount identity's token may live at most %d seconds", max),
					Reason:     ptr(metav1.StatusReasonForbidden),
				},
				{
					Expression: `request.resource.resource != "secrets"`,
					Message:    "a ServiceAccount identity's tokens come from the TokenRequest API only: no service-account-token Secret may name it",
					Reason:     ptr(metav1.StatusReasonForbidden),
				},
			},
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

// rule matches resource (of the core API group, v1) on ops.
func rule(resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

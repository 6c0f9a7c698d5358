package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// kstate is where a peering object stands, in kstatus's terms.
type kstate uint8

const (
	// kReady: what the object asks is in force.
	kReady kstate = iota + 1
	// kReconciling: the controller works towards it, or waits for the
	// other side.
	kReconciling
	// kStalled: it cannot get there until the object (or the other side's)
	// changes.
	kStalled
	// kRevoked: what the object asks is done, and it is not a peering in
	// force: neither Ready, nor under way, nor stalled.
	kRevoked
)

// maxConditionMessage bounds a condition's message, an error's text.
const maxConditionMessage = 1024

// setState sets the three kstatus conditions of a peering object of
// generation gen to state, with reason and message on each, and its
// observedGeneration.
func setState(conditions *[]metav1.Condition, observed *int64, gen int64, state kstate, reason, message string) {
	status := func(on bool) metav1.ConditionStatus {
		if on {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	if len(message) > maxConditionMessage {
		message = message[:maxConditionMessage] + "…"
	}
	for _, c := range []struct {
		kind string
		on   bool
	}{
		{peeringv1alpha1.ConditionReady, state == kReady},
		{peeringv1alpha1.ConditionReconciling, state == kReconciling},
		{peeringv1alpha1.ConditionStalled, state == kStalled},
	} {
		meta.SetStatusCondition(conditions, metav1.Condition{Type: c.kind, Status: status(c.on), Reason: reason, Message: message, ObservedGeneration: gen})
	}
	*observed = gen
}

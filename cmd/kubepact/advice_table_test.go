package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubepact/kubepact/controllers/contract"
)

// TestAdviceTableReasons checks that the advice table keys refusals by
// reasons that end a wait as refusals, and blockers by blocking reasons, so
// that no advice waits for an Event that never reaches it.
func TestAdviceTableReasons(t *testing.T) {
	t.Parallel()
	for _, r := range remedies {
		assert.NotEmpty(t, r.text)
		assert.True(t, len(r.errs) > 0 || r.as != nil, "remedy %q matches no error", r.text)
		for _, reason := range r.reasons {
			assert.True(t, isRefusal(reason), "%s is not a refusal", reason)
			assert.Equal(t, r.text, refusalAdvice(reason, consumerPlaceholder), "%s keys one remedy", reason)
		}
	}
	for reason := range blockerAdvice {
		assert.True(t, contract.Blocking(reason), "%s is not a blocker", reason)
	}
}

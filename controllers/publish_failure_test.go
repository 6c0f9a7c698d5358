package controllers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubepact/kubepact/controllers/contract"
)

// TestPublishFailure: a write of the public-key record the API server
// forbids (the admission policy, or RBAC) is PublishRefused, which blocks
// a waiting tool and names the ServiceAccount fix; any other failure is
// SigningNonceFailed, retried, and ends no wait.
func TestPublishFailure(t *testing.T) {
	t.Parallel()
	configMaps := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name     string
		err      error
		reason   string
		blocking bool
	}{
		{"admission policy", fmt.Errorf("applying ConfigMap liqo/kubepact-cluster-public-key: %w",
			apierrors.NewForbidden(configMaps, "kubepact-cluster-public-key", errors.New("denied request"))), contract.ReasonPublishRefused, true},
		{"unavailable", apierrors.NewServiceUnavailable("etcd"), contract.ReasonSigningNonceFailed, false},
		{"conflict", apierrors.NewConflict(configMaps, "kubepact-cluster-public-key", errors.New("changed")), contract.ReasonSigningNonceFailed, false},
	} {
		reason, fix := publishFailure(tc.err)
		assert.Equal(t, tc.reason, reason, tc.name)
		assert.Equal(t, tc.blocking, contract.Blocking(reason), tc.name)
		assert.False(t, contract.Final(reason), tc.name)
		if tc.blocking {
			assert.Contains(t, fix, "kubectl create token kubepact-controller -n kubepact-system", tc.name)
		} else {
			assert.Empty(t, fix, tc.name)
		}
	}
}

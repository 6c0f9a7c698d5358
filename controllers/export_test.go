package controllers

import (
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact/nonce"
)

// NewProviderNonceStore returns the nonce store of the provider's
// reconcilers, over cs and cache, for tests.
func NewProviderNonceStore(cs kubernetes.Interface, cache client.Reader) nonce.Store {
	return newEmptyNonceStore(cs, cache)
}

// The reporting controllers of the Events of the Tenant and renewal
// reconcilers, for tests.
const (
	TenantControllerName  = tenantControllerName
	RenewalControllerName = renewalControllerName
)

package kubepact_test

import (
	"context"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/resourceslice"
)

// A slice after the handshake: the consumer builds it, the replicator
// (here: a copy) carries its spec to the provider's tenant namespace for
// the consumer, the provider judges it, and the consumer turns the status
// into the slice's Identity.
func ExampleProvider_AcceptSlice() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()
	if _, err := kubepact.Authenticate(ctx, consumer, provider, nil); err != nil {
		fmt.Println(err)
		return
	}
	local, err := consumer.Slice(ctx, "cl-provider", "slice-a", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	remote := local.DeepCopy()
	remote.Namespace, remote.Labels = clusterid.TenantNamespace("cl-consumer"), resourceslice.ProviderLabels("cl-consumer")

	status, err := provider.AcceptSlice(ctx, remote)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range status.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	local.Status = *status
	done, err := consumer.ApplySliceIdentity(ctx, local, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("identity:", done.Identity.Name, done.Identity.Spec.Type)
	fmt.Println("secret:  ", done.Secret.Name)
	fmt.Println("user:    ", done.Kubeconfig.User())
	// Output:
	// Authentication Accepted ResourceSliceAuthenticationAccepted
	// Resources Accepted ResourceSliceResourcesAccepted
	// identity: resourceslice-slice-a ResourceSlice
	// secret:   kubeconfig-resourceslice-slice-a
	// user:     slice-a-573ffa690333
}

package clusterid_test

import (
	"errors"
	"fmt"

	"github.com/kubepact/kubepact/clusterid"
)

func ExampleValidate() {
	for _, id := range []string{"cl-consumer", "Cluster_A", ""} {
		err := clusterid.Validate(id)
		fmt.Printf("%q valid=%t invalid=%t\n", id, err == nil, errors.Is(err, clusterid.ErrInvalid))
	}
	// Output:
	// "cl-consumer" valid=true invalid=false
	// "Cluster_A" valid=false invalid=true
	// "" valid=false invalid=true
}

func ExampleTenantNamespace() {
	fmt.Println(clusterid.TenantNamespace("cl-consumer"))
	// Output: liqo-tenant-cl-consumer
}

package controllers_test

import (
	"context"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
)

// A controller binary running both roles of cluster cl-a: it answers the
// nonce and Tenant objects consumers' liqoctl writes on it, and the
// signed-nonce and Identity objects it writes here to consume others.
func Example() {
	ctx := ctrl.SetupSignalHandler()
	if err := runController(ctx); err != nil {
		os.Exit(1)
	}
}

func runController(ctx context.Context) error {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{Scheme: scheme, Cache: controllers.CacheOptions()})
	if err != nil {
		return err
	}
	ca, err := os.ReadFile("/etc/kubepact/apiserver-ca.crt")
	if err != nil {
		return err
	}
	if err := controllers.SetupProvider(mgr, controllers.ProviderConfig{
		ClusterID: "cl-a",
		Endpoint:  provider.Endpoint{Server: "https://cl-a.example.com:6443", CA: ca},
		Policy:    tenant.Strict,
	}); err != nil {
		return err
	}
	if err := controllers.SetupConsumer(mgr, controllers.ConsumerConfig{ClusterID: "cl-a"}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

package intercept

import (
	"context"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/lifecycle"
)

// interceptLifecycle returns lifecycle ports that call f around every call
// of p's.
func interceptLifecycle(p lifecycle.Ports, f *Faults) lifecycle.Ports {
	return lifecycle.Ports{
		Conditions:  conditionsHook{p.Conditions, f},
		Slices:      lifecycleSlicesHook{p.Slices, f},
		Bindings:    bindingsHook{p.Bindings, f},
		Revocations: revocationsHook{p.Revocations, f},
	}
}

type conditionsHook struct {
	next lifecycle.Conditions
	f    *Faults
}

func (h conditionsHook) SetCondition(ctx context.Context, t *authv1beta1.Tenant, c authv1beta1.TenantCondition) error {
	return call(ctx, h.f, "Conditions.SetCondition", func() error { return h.next.SetCondition(ctx, t, c) })
}

type lifecycleSlicesHook struct {
	next lifecycle.Slices
	f    *Faults
}

func (h lifecycleSlicesHook) SetCordoned(ctx context.Context, namespace string, cordoned bool) error {
	return call(ctx, h.f, "Slices.SetCordoned", func() error { return h.next.SetCordoned(ctx, namespace, cordoned) })
}

func (h lifecycleSlicesHook) DeleteAll(ctx context.Context, namespace string) error {
	return call(ctx, h.f, "Slices.DeleteAll", func() error { return h.next.DeleteAll(ctx, namespace) })
}

type bindingsHook struct {
	next lifecycle.Bindings
	f    *Faults
}

func (h bindingsHook) ListBindings(ctx context.Context, consumerID string) ([]lifecycle.Binding, error) {
	return call1(ctx, h.f, "Bindings.ListBindings", func() ([]lifecycle.Binding, error) { return h.next.ListBindings(ctx, consumerID) })
}

func (h bindingsHook) DeleteBinding(ctx context.Context, b lifecycle.Binding) error {
	return call(ctx, h.f, "Bindings.DeleteBinding", func() error { return h.next.DeleteBinding(ctx, b) })
}

type revocationsHook struct {
	next lifecycle.Revocations
	f    *Faults
}

func (h revocationsHook) Get(ctx context.Context, consumerID string) (lifecycle.Revocation, error) {
	return call1(ctx, h.f, "Revocations.Get", func() (lifecycle.Revocation, error) { return h.next.Get(ctx, consumerID) })
}

func (h revocationsHook) Put(ctx context.Context, r lifecycle.Revocation) error {
	return call(ctx, h.f, "Revocations.Put", func() error { return h.next.Put(ctx, r) })
}

func (h revocationsHook) Delete(ctx context.Context, consumerID string) error {
	return call(ctx, h.f, "Revocations.Delete", func() error { return h.next.Delete(ctx, consumerID) })
}

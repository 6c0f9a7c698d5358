package saidentity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/saidentity"
)

// TestIssueAnswersToTheLifecycle: with the Lifecycle port, a consumer whose
// Tenant is drained, or whose revocation record is in force, gets no
// ServiceAccount identity, and nothing is written; once readmitted it does.
func TestIssueAnswersToTheLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, tenants *fake.TenantStore, records *fake.Revocations, now time.Time)
		check func(error) bool
		lift  func(t *testing.T, tenants *fake.TenantStore, records *fake.Revocations)
	}{
		{"drained", func(t *testing.T, tenants *fake.TenantStore, _ *fake.Revocations, _ time.Time) {
			_, err := tenants.Apply(ctx, &authv1beta1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: "consumer-1", Namespace: clusterid.TenantNamespace("consumer-1")},
				Spec:       authv1beta1.TenantSpec{ClusterID: "consumer-1", TenantCondition: authv1beta1.TenantConditionDrained},
			})
			if err != nil {
				t.Fatal(err)
			}
		}, func(err error) bool { return errors.Is(err, lifecycle.ErrDrained) },
			func(t *testing.T, tenants *fake.TenantStore, _ *fake.Revocations) {
				if err := tenants.Delete(ctx, clusterid.TenantNamespace("consumer-1"), "consumer-1"); err != nil {
					t.Fatal(err)
				}
			}},
		{"revoked", func(t *testing.T, _ *fake.TenantStore, records *fake.Revocations, now time.Time) {
			if err := records.Put(ctx, lifecycle.Revocation{ConsumerID: "consumer-1", Until: now.Add(time.Hour), Reason: lifecycle.ReasonDrained}); err != nil {
				t.Fatal(err)
			}
		}, func(err error) bool {
			var revoked *lifecycle.RevokedError
			return errors.As(err, &revoked) && revoked.ConsumerID == "consumer-1"
		}, func(t *testing.T, _ *fake.TenantStore, records *fake.Revocations) {
			if err := records.Delete(ctx, "consumer-1"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMemProvider()
			tenants, records := &fake.TenantStore{}, &fake.Revocations{}
			tc.setup(t, tenants, records, m.clock.Now())
			ports := m.ports()
			ports.Lifecycle = lifecycle.Gate{Tenants: tenants, Revocations: records, Clock: m.clock}
			_, err := saidentity.Issue(ctx, ports, saidentity.Endpoint{Server: "https://provider.example:6443"}, "consumer-1", nil)
			if !tc.check(err) {
				t.Fatalf("Issue: %v", err)
			}
			if _, ok := m.sas.Get(clusterid.TenantNamespace("consumer-1"), saidentity.Name("consumer-1")); ok {
				t.Fatal("a ServiceAccount was made for a refused consumer")
			}
			if _, ok := m.ns.Get(clusterid.TenantNamespace("consumer-1")); ok {
				t.Fatal("a namespace was made for a refused consumer")
			}
			tc.lift(t, tenants, records)
			if _, err := saidentity.Issue(ctx, ports, saidentity.Endpoint{Server: "https://provider.example:6443"}, "consumer-1", nil); err != nil {
				t.Fatalf("once lifted: %v", err)
			}
		})
	}
}

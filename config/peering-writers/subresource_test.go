package peeringwriters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// TestStatusSubresource: the admission policy matches the objects, not
// their status, which RBAC grants the controller alone. Through the status
// subresource nothing but the status changes: a user whom RBAC lets update
// only the status of both kinds sends a new spec, a label and a finalizer
// with it, and the API server keeps the old ones. She cannot write the
// object itself, and the shipped kubepact-peering-admin cannot write the
// status.
func TestStatusSubresource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := cluster(t)
	cleanup(t, e)

	const eve, alice = "status-eve", "status-alice"
	e.clusterRole(ctx, t, "test-peering-status", rbacv1.PolicyRule{
		APIGroups: []string{peeringv1alpha1.GroupName},
		Resources: []string{"authorizedconsumers/status", "trustedproviders/status"},
		Verbs:     []string{"update", "patch"},
	}, rbacv1.PolicyRule{
		APIGroups: []string{peeringv1alpha1.GroupName},
		Resources: []string{"authorizedconsumers", "trustedproviders"},
		Verbs:     []string{"get"},
	})
	e.bindCluster(ctx, t, "test-peering-status", "test-peering-status", user(eve))
	e.bindCluster(ctx, t, "test-status-peering-admin", "kubepact-peering-admin", user(alice))
	status, _ := e.as(t, eve)
	admin, _ := e.as(t, alice, "kubepact:peering-admins")

	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			o := k.new("status-" + lower(k.name))
			require.NoError(t, e.objects.Create(ctx, o))
			want := k.new("")
			require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(o), want))

			forged := want.DeepCopyObject().(client.Object)
			forgeSpec(forged)
			forged.SetLabels(map[string]string{testLabel: "true", "forged": "true"})
			forged.SetFinalizers([]string{"example.com/hold"})
			setReady(forged)
			require.NoError(t, status.Status().Update(ctx, forged), "a status update is the status writer's")

			got := k.new("")
			require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(o), got))
			require.Equal(t, specOf(want), specOf(got), "the spec, as it was")
			require.Equal(t, want.GetLabels(), got.GetLabels(), "the labels, as they were")
			require.Empty(t, got.GetFinalizers(), "no finalizer")
			require.Equal(t, want.GetGeneration(), got.GetGeneration())
			require.Len(t, conditionsOf(got), 1, "the status was written")

			// Neither the object itself (RBAC), nor, for a peering
			// admin, the status.
			err := status.Update(ctx, forged)
			require.True(t, apierrors.IsForbidden(err), "the status writer updates the object: %v", err)
			require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(o), got))
			setReady(got)
			err = admin.Status().Update(ctx, got)
			require.True(t, apierrors.IsForbidden(err), "kubepact-peering-admin writes the status: %v", err)
		})
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// forgeSpec changes what an attacker would: the keys committed, and the
// URL the controller contacts.
func forgeSpec(o client.Object) {
	switch o := o.(type) {
	case *peeringv1alpha1.AuthorizedConsumer:
		o.Spec.PublicKeys = []string{"attacker's key"}
	case *peeringv1alpha1.TrustedProvider:
		o.Spec.Endpoint = "https://169.254.169.254/"
		o.Spec.EnrolmentKeys = []string{"attacker's key"}
	}
}

func specOf(o client.Object) any {
	switch o := o.(type) {
	case *peeringv1alpha1.AuthorizedConsumer:
		return o.Spec
	case *peeringv1alpha1.TrustedProvider:
		return o.Spec
	}
	return nil
}

func conditionsOf(o client.Object) any {
	switch o := o.(type) {
	case *peeringv1alpha1.AuthorizedConsumer:
		return o.Status.Conditions
	case *peeringv1alpha1.TrustedProvider:
		return o.Status.Conditions
	}
	return nil
}

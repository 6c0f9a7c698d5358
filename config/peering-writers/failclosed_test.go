package peeringwriters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// TestPeeringWritersWithoutList: a missing list never opens the peering
// kinds. With the ConfigMap kubepact-peering-writers deleted (by a
// system:masters administrator, whom its guard admits), every write of
// either kind is refused, a system:masters administrator's and the
// controller's finalizer removal included (parameterNotFoundAction: Deny);
// put back, the same writes pass again.
func TestPeeringWritersWithoutList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := cluster(t)
	cleanup(t, e)
	controller, _ := e.as(t, controllerUser, "system:serviceaccounts", "system:serviceaccounts:"+namespace)

	held := kinds[0].new("without-list").(*peeringv1alpha1.AuthorizedConsumer)
	require.Eventually(t, func() bool { return e.objects.Create(ctx, held) == nil }, time.Minute, 200*time.Millisecond)
	held.Finalizers = []string{peeringv1alpha1.Finalizer}
	require.NoError(t, controller.Update(ctx, held))

	shipped, err := e.admin.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, e.admin.CoreV1().ConfigMaps(namespace).Delete(ctx, writersList, metav1.DeleteOptions{}))
	restore := func() {
		shipped.ResourceVersion, shipped.UID, shipped.CreationTimestamp, shipped.ManagedFields = "", "", metav1.Time{}, nil
		_, err := e.admin.CoreV1().ConfigMaps(namespace).Create(context.Background(), shipped, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "the shipped list, put back")
		}
	}
	t.Cleanup(restore)

	// The API server answers a binding whose parameter is missing as a
	// configuration error: Invalid (422), not the policy's Forbidden.
	require.Eventually(t, func() bool {
		err := e.objects.Create(ctx, kinds[1].new("without-list"))
		if err == nil {
			require.NoError(t, e.objects.Delete(ctx, kinds[1].new("without-list")))
		}
		return apierrors.IsInvalid(err)
	}, time.Minute, 200*time.Millisecond, "without the list, a system:masters administrator's create is refused")
	err = e.objects.Create(ctx, kinds[0].new("without-list-2"))
	require.True(t, apierrors.IsInvalid(err), "a system:masters administrator creates without the list: %v", err)
	require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(held), held))
	held.Finalizers = nil
	err = controller.Update(ctx, held)
	require.True(t, apierrors.IsInvalid(err), "the controller removes its finalizer without the list: %v", err)

	// Put back, the list admits them again.
	restore()
	require.Eventually(t, func() bool {
		if e.objects.Get(ctx, client.ObjectKeyFromObject(held), held) != nil {
			return false
		}
		held.Finalizers = nil
		return controller.Update(ctx, held) == nil
	}, time.Minute, 200*time.Millisecond, "the controller removes its finalizer once the list is back")
}

package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// noApprover approves nothing: the object stays pending.
type noApprover struct{}

func (noApprover) Approve(context.Context, string, *csr.Checked) error { return nil }

// A CSRSigner with NoWait submits and approves, returns csr.ErrPending
// instead of waiting, and a later Sign, by the same or a new signer, picks
// the same object up and returns its certificate once issued.
func TestCSRSignerNoWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const consumerID = "cl-nowait"
	r := csr.Request{CSR: checkedCSR(t, consumerID), Lifetime: time.Hour}
	selector := kube.CSRHashLabel + "=" + kubepactObject(r).Labels[kube.CSRHashLabel]

	// Not approved: pending, and pending again, on the one object.
	held := kube.NewCSRSignerWithOptions(providerEnv.client, noApprover{}, &kube.CSRSignerOptions{NoWait: true})
	for range 2 {
		start := time.Now()
		cert, err := held.Sign(ctx, r)
		require.ErrorIs(t, err, csr.ErrPending)
		require.NotErrorIs(t, err, csr.ErrFailed)
		require.Nil(t, cert)
		require.Less(t, time.Since(start), 10*time.Second, "Sign does not wait")
	}
	list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	obj := list.Items[0]
	require.Equal(t, consumerID, obj.Labels[clusterid.Label], "the object names its consumer")
	require.Equal(t, "true", obj.Labels[kube.CSRLabel])
	requireUntouched(t, obj.Name)

	// A new signer (a restarted controller) approves the same object and
	// returns its certificate once issued.
	signer := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{NoWait: true})
	cert := signUntilIssued(ctx, t, signer, r)
	list, err = csrAPI().List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "no second object")
	require.Equal(t, obj.UID, list.Items[0].UID)

	// The blocking signer finds the issued object too.
	again, err := kube.NewCSRSigner(providerEnv.client, kube.NewApprover(providerEnv.client)).Sign(ctx, r)
	require.NoError(t, err)
	require.Equal(t, cert, again)
}

// signUntilIssued calls signer.Sign, a NoWait signer, until it returns a
// certificate, and checks it against r.
func signUntilIssued(ctx context.Context, t *testing.T, signer *kube.CSRSigner, r csr.Request) []byte {
	t.Helper()
	var cert []byte
	require.Eventually(t, func() bool {
		var err error
		cert, err = signer.Sign(ctx, r)
		if err != nil {
			require.ErrorIs(t, err, csr.ErrPending)
			return false
		}
		return true
	}, 30*time.Second, 50*time.Millisecond)
	_, err := csr.CheckIssued(cert, r, time.Now())
	require.NoError(t, err)
	return cert
}

// A ResourceSlice request names its consumer by its organization.
func TestCSRSignerLabelsSliceConsumer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const consumerID = "cl-nowait-slice"
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ResourceSliceSubject(consumerID, "slice-a"))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ResourceSlicePolicy(consumerID, "slice-a", key.Public()))
	require.NoError(t, err)
	r := csr.Request{CSR: checked, Lifetime: time.Hour}
	_, err = kube.NewCSRSignerWithOptions(providerEnv.client, noApprover{}, &kube.CSRSignerOptions{NoWait: true}).Sign(ctx, r)
	require.ErrorIs(t, err, csr.ErrPending)
	list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRHashLabel + "=" + kubepactObject(r).Labels[kube.CSRHashLabel]})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Equal(t, consumerID, list.Items[0].Labels[clusterid.Label])
	require.Equal(t, certificatesv1.KubeAPIServerClientSignerName, list.Items[0].Spec.SignerName)
}

// The object a CSRSigner remembers for a request, replaced by someone else's
// of the same name, spec and labels, is neither approved nor re-used: the
// next Sign of the same signer creates its own object.
func TestCSRSignerForgetsAReplacedObject(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := csr.Request{CSR: checkedCSR(t, "cl-replaced"), Lifetime: time.Hour}
	selector := kube.CSRHashLabel + "=" + kubepactObject(r).Labels[kube.CSRHashLabel]
	signer := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{NoWait: true})
	_, err := signer.Sign(ctx, r)
	require.ErrorIs(t, err, csr.ErrPending)
	list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	ours := list.Items[0]

	require.NoError(t, csrAPI().Delete(ctx, ours.Name, metav1.DeleteOptions{}))
	planted := kubepactObject(r)
	planted.GenerateName, planted.Name = "", ours.Name
	planted, err = planterClient(t).CertificatesV1().CertificateSigningRequests().Create(ctx, planted, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, planter, planted.Spec.Username)

	// Approved, the replacement would be issued to whoever planted it.
	signUntilIssued(ctx, t, signer, r)
	requireUntouched(t, planted.Name)
	list, err = csrAPI().List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, list.Items, 2, "Sign made its own object")
}

// A CSRSigner with NoWait and a Wait returns the certificate in the same
// Sign when the API server's signer issues it within the Wait, and
// csr.ErrPending after the Wait when it does not.
func TestCSRSignerWaitsBriefly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	held := kube.NewCSRSignerWithOptions(providerEnv.client, noApprover{}, &kube.CSRSignerOptions{NoWait: true, Wait: 500 * time.Millisecond})
	start := time.Now()
	_, err := held.Sign(ctx, csr.Request{CSR: checkedCSR(t, "cl-wait-held"), Lifetime: time.Hour})
	require.ErrorIs(t, err, csr.ErrPending)
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "Sign waited")

	signer := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{NoWait: true, Wait: 30 * time.Second})
	cert, err := signer.Sign(ctx, csr.Request{CSR: checkedCSR(t, "cl-wait-issued"), Lifetime: time.Hour})
	require.NoError(t, err, "issued within the Wait: no second Sign")
	require.NotEmpty(t, cert)
}

// Awaited names the objects a Sign returned csr.ErrPending for, until a
// Sign returns their outcome; an object whose certificate a Sign waited for
// and returned is never awaited, so a controller need not requeue it.
func TestCSRSignerAwaited(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := func(r csr.Request) string {
		list, err := csrAPI().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRHashLabel + "=" + kubepactObject(r).Labels[kube.CSRHashLabel]})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		return list.Items[0].Name
	}

	for _, wait := range []time.Duration{0, 300 * time.Millisecond} {
		r := csr.Request{CSR: checkedCSR(t, fmt.Sprintf("cl-awaited-%d", wait.Milliseconds())), Lifetime: time.Hour}
		held := kube.NewCSRSignerWithOptions(providerEnv.client, noApprover{}, &kube.CSRSignerOptions{NoWait: true, Wait: wait})
		_, err := held.Sign(ctx, r)
		require.ErrorIs(t, err, csr.ErrPending)
		obj := name(r)
		require.True(t, held.Awaited(obj), "pending after a wait of %v", wait)
		require.False(t, held.Awaited("liqo-identity-other"))

		// The same signer, approving now, returns the certificate: the
		// object is no longer awaited.
		approving := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{NoWait: true})
		signUntilIssued(ctx, t, approving, r)
		_, err = held.Sign(ctx, r)
		require.NoError(t, err)
		require.False(t, held.Awaited(obj), "settled by a Sign")
	}

	r := csr.Request{CSR: checkedCSR(t, "cl-awaited-never"), Lifetime: time.Hour}
	signer := kube.NewCSRSignerWithOptions(providerEnv.client, kube.NewApprover(providerEnv.client), &kube.CSRSignerOptions{NoWait: true, Wait: 30 * time.Second})
	_, err := signer.Sign(ctx, r)
	require.NoError(t, err)
	require.False(t, signer.Awaited(name(r)), "issued within the Wait")
}

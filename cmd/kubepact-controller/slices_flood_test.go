package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// The bound on a consumer's live slices that the shipped controller
// applies (resourceslice.DefaultMaxSlices; config/ sets no flag for it),
// and the Event reasons that name the bounds. Written out, as an operator
// reads them.
const (
	shippedMaxSlices      = 64
	reasonSliceLimit      = "SliceLimitReached"
	reasonRekeyTooSoon    = "RekeyTooSoon"
	reasonCertificateRate = "CertificateRateLimited"
	floodExtraSlices      = 6
	floodRekeys           = 5
	floodCreateConcurrent = 8
)

// TestSliceFloodAsShipped is issue #36's attack 4, against the controller
// as shipped (config/ applied, the Deployment's args, as its
// ServiceAccount): a consumer, with the ControlPlane kubeconfig the
// provider issued it, creates ResourceSlices in its tenant namespace as
// fast as it can, each with a CSR for a fresh key, then gives one of them
// CSR after CSR. The provider signs certificates for the 64 oldest slices
// only, records a SliceLimitReached Event on the others, signs nothing for
// the new CSRs of a slice that holds a certificate, records RekeyTooSoon on
// it, and the slice keeps the certificate it holds. When the peer deletes
// a slice that holds a certificate, the oldest waiting slice gets one.
func TestSliceFloodAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-flood-provider", "cl-flood-consumer"
	p := peer{side: providerEnv, id: providerID}
	startCurrent(ctx, t, p)
	peerClient := floodPeer(ctx, t, providerID, consumerID)
	tenantNS := clusterid.TenantNamespace(consumerID)

	// The flood: 70 slices, 8 at a time.
	names := make(chan string)
	var wg sync.WaitGroup
	errs := make(chan error, shippedMaxSlices+floodExtraSlices)
	for range floodCreateConcurrent {
		wg.Go(func() {
			for name := range names {
				errs <- peerClient.Create(ctx, floodSlice(t, providerID, consumerID, name))
			}
		})
	}
	for i := range shippedMaxSlices + floodExtraSlices {
		names <- fmt.Sprintf("flood-%03d", i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "the peer creates slices in its tenant namespace")
	}

	// The 64 oldest get certificates; the others wait, each with a
	// SliceLimitReached Event.
	var list authv1beta1.ResourceSliceList
	signed := func() int {
		require.NoError(t, providerEnv.typed.List(ctx, &list, client.InNamespace(tenantNS)))
		n := 0
		for _, s := range list.Items {
			if s.Status.AuthParams != nil && len(s.Status.AuthParams.SignedCRT) > 0 {
				n++
			}
		}
		return n
	}
	eventually(t, "the 64 oldest slices signed", func() bool { return signed() >= shippedMaxSlices })
	slices.SortFunc(list.Items, func(a, b authv1beta1.ResourceSlice) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	oldest := list.Items[0].DeepCopy()

	t.Run("flood", func(t *testing.T) {
		time.Sleep(5 * time.Second) // what the workers might still sign
		require.Equal(t, shippedMaxSlices, signedSliceCSRs(ctx, t, consumerID), "CertificateSigningRequests signed for the slices")
		require.Equal(t, shippedMaxSlices, signed(), "slices holding certificates")
		for _, s := range list.Items[:shippedMaxSlices] {
			require.NotNil(t, s.Status.AuthParams, "%s is among the 64 oldest", s.Name)
		}
		for _, s := range list.Items[shippedMaxSlices:] {
			require.Nil(t, s.Status.AuthParams, "%s waits", s.Name)
			eventually(t, "a SliceLimitReached Event on "+s.Name, func() bool { return hasEvent(ctx, t, tenantNS, s.Name, reasonSliceLimit) })
		}
	})

	// One slice, CSR after CSR for fresh keys.
	t.Run("rekey", func(t *testing.T) {
		before := signedSliceCSRs(ctx, t, consumerID)
		target := oldest.DeepCopy()
		held := target.Status.AuthParams.SignedCRT
		for range floodRekeys {
			require.NoError(t, peerClient.Get(ctx, client.ObjectKeyFromObject(target), target))
			target.Spec.CSR = floodCSR(t, consumerID, target.Name)
			require.NoError(t, peerClient.Update(ctx, target), "the peer writes its slice's spec")
		}
		time.Sleep(5 * time.Second) // what the workers might sign
		require.Equal(t, before, signedSliceCSRs(ctx, t, consumerID), "nothing signed for the new CSRs")
		require.NoError(t, providerEnv.typed.Get(ctx, client.ObjectKeyFromObject(target), target))
		require.Equal(t, held, target.Status.AuthParams.SignedCRT, "the slice keeps the certificate it holds")
		eventually(t, "a RekeyTooSoon Event on "+target.Name, func() bool { return hasEvent(ctx, t, tenantNS, target.Name, reasonRekeyTooSoon) })
	})

	// The peer deletes one of its slices that hold certificates: the
	// oldest waiting slice takes its place, at once, and no other.
	t.Run("a slice goes", func(t *testing.T) {
		gone, next := list.Items[1], list.Items[shippedMaxSlices]
		require.NoError(t, peerClient.Delete(ctx, &gone))
		eventually(t, next.Name+" signed", func() bool {
			var s authv1beta1.ResourceSlice
			require.NoError(t, providerEnv.typed.Get(ctx, client.ObjectKeyFromObject(&next), &s))
			return s.Status.AuthParams != nil
		})
		time.Sleep(5 * time.Second)
		require.Equal(t, shippedMaxSlices, signed(), "slices holding certificates")
	})
}

// TestSliceCertificateRateAsShipped: the controller as shipped, with the
// flag that lowers the rate (--slice-certificates-per-hour=5): a consumer
// that makes slices, deletes them to make room and makes more gets five
// certificates in the hour and no more, and a CertificateRateLimited Event
// on each slice refused.
func TestSliceCertificateRateAsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const providerID, consumerID, rate = "cl-rate-provider", "cl-rate-consumer", 5
	startCurrent(ctx, t, peer{side: providerEnv, id: providerID}, fmt.Sprintf("--slice-certificates-per-hour=%d", rate))
	peerClient := floodPeer(ctx, t, providerID, consumerID)
	tenantNS := clusterid.TenantNamespace(consumerID)

	first := make([]*authv1beta1.ResourceSlice, rate)
	for i := range first {
		first[i] = floodSlice(t, providerID, consumerID, fmt.Sprintf("rate-%d", i))
		require.NoError(t, peerClient.Create(ctx, first[i]))
	}
	eventually(t, "the first five slices signed", func() bool { return signedSliceCSRs(ctx, t, consumerID) == rate })
	for _, s := range first {
		require.NoError(t, peerClient.Delete(ctx, s))
	}
	eventually(t, "the first five slices gone", func() bool {
		var list authv1beta1.ResourceSliceList
		require.NoError(t, providerEnv.typed.List(ctx, &list, client.InNamespace(tenantNS)))
		return len(list.Items) == 0
	})
	for i := range 3 {
		s := floodSlice(t, providerID, consumerID, fmt.Sprintf("rate-more-%d", i))
		require.NoError(t, peerClient.Create(ctx, s))
		eventually(t, "a CertificateRateLimited Event on "+s.Name, func() bool { return hasEvent(ctx, t, tenantNS, s.Name, reasonCertificateRate) })
	}
	time.Sleep(5 * time.Second)
	require.Equal(t, rate, signedSliceCSRs(ctx, t, consumerID), "five certificates in the hour")
}

// floodPeer makes consumerID a consumer of the provider cluster's
// controller, through the declarative handshake written by hand as a
// Strict kubepact consumer writes it (a Tenant whose ControlPlane CSR is
// for a key of its own, so every slice needs a fresh key), and returns a
// client that uses the ControlPlane kubeconfig the provider issued.
func floodPeer(ctx context.Context, t *testing.T, providerID, consumerID string) client.Client {
	t.Helper()
	ns := clusterid.TenantNamespace(consumerID)
	_, err := providerEnv.admin.CoreV1().Namespaces().Create(ctx, tenant.Namespace(consumerID), metav1.CreateOptions{})
	require.NoError(t, err)
	n := requestNonce(ctx, t, consumerID)
	clusterKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	cpKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	tn, err := tenant.Build(consumerID, clusterKey, n, &tenant.BuildOptions{ProviderID: providerID, Expiry: time.Now().Add(5 * time.Minute), IdentityKey: cpKey})
	require.NoError(t, err)
	tenants := kube.NewTenantStore(providerEnv.typed)
	_, err = tenants.Apply(ctx, tn)
	require.NoError(t, err)
	eventually(t, "the Tenant's status", func() bool {
		tn, err = tenants.Get(ctx, ns, consumerID)
		return err == nil && tn.Status.AuthParams != nil
	})
	id, err := identity.Build(providerID, *tn.Status.AuthParams, &identity.BuildOptions{TenantNamespace: tn.Status.TenantNamespace})
	require.NoError(t, err)
	cfg, err := kubeconfig.FromIdentity(id, cpKey)
	require.NoError(t, err)
	require.Equal(t, consumerID, cfg.User())
	c, err := kube.NewClient(restConfigOf(t, cfg), nil)
	require.NoError(t, err)
	return c
}

// floodSlice is a ResourceSlice as a consumer's replicator writes it on the
// provider, with a CSR for a fresh key.
func floodSlice(t *testing.T, providerID, consumerID, name string) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterid.TenantNamespace(consumerID), Labels: resourceslice.ProviderLabels(consumerID)},
		Spec: authv1beta1.ResourceSliceSpec{
			ConsumerClusterID: ptr.To(consumerID),
			ProviderClusterID: ptr.To(providerID),
			CSR:               floodCSR(t, consumerID, name),
		},
	}
}

// floodCSR is a CSR of slice name of consumerID for a fresh key.
func floodCSR(t *testing.T, consumerID, name string) []byte {
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(rand.Reader, key, csr.ResourceSliceSubject(consumerID, name))
	require.NoError(t, err)
	return req
}

// hasEvent reports whether an Event with reason is recorded on the
// ResourceSlice name in namespace, with a message that holds no PEM.
func hasEvent(ctx context.Context, t *testing.T, namespace, name, reason string) bool {
	t.Helper()
	events, err := providerEnv.admin.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		if e.Regarding.Kind == authv1beta1.ResourceSliceKind && e.Regarding.Name == name && e.Reason == reason {
			require.NotContains(t, e.Note, "-----BEGIN", "no key material in the Event")
			return true
		}
	}
	return false
}

// signedSliceCSRs counts the CertificateSigningRequests of consumerID's
// slices that were signed: those of its consumer, but not its ControlPlane
// identity's.
func signedSliceCSRs(ctx context.Context, t *testing.T, consumerID string) int {
	t.Helper()
	list, err := providerEnv.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + consumerID})
	require.NoError(t, err)
	n := 0
	for _, c := range list.Items {
		block, _ := pem.Decode(c.Spec.Request)
		require.NotNil(t, block, c.Name)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		require.NoError(t, err, c.Name)
		if req.Subject.CommonName == consumerID {
			continue // the ControlPlane's
		}
		if len(c.Status.Certificate) > 0 {
			n++
		}
	}
	return n
}

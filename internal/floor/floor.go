// Package floor measures, on a real API server, what a kubepact handshake
// cannot go below: its writes one after another and its one round through
// the CSR API, as the benchmarks of package kube and package controllers
// compare themselves to it in the same run.
package floor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Writes and CSRRounds are the bare chain of a handshake: the nonce, the
// Tenant, the binding, the Tenant's status, the Identity and the kubeconfig
// Secret, and the certificate signed through the CSR API.
const (
	Writes    = 6
	CSRRounds = 1
)

// ErrNoRounds is Measure's error for fewer than one round.
var ErrNoRounds = errors.New("floor: no rounds to measure")

// Floor is what Measure found: the medians of one write and of one CSR
// round, and Handshake, Writes of the one and CSRRounds of the other.
type Floor struct {
	Write, CSRRound, Handshake time.Duration
}

// Measure makes rounds writes (ConfigMaps created in namespace, then
// deleted) and rounds CSR rounds (a CertificateSigningRequest created,
// approved and watched until the API server's signer issues it, then
// deleted), one after another through cs, and returns their medians. cs
// needs create and delete on configmaps in namespace, and create, approve
// (for the kubernetes.io/kube-apiserver-client signer), watch and delete on
// certificatesigningrequests.
func Measure(ctx context.Context, cs kubernetes.Interface, namespace string, rounds int) (Floor, error) {
	if rounds < 1 {
		return Floor{}, fmt.Errorf("%w: %d", ErrNoRounds, rounds)
	}
	writes := make([]time.Duration, 0, rounds)
	csrs := make([]time.Duration, 0, rounds)
	run := time.Now().UnixNano()
	for i := range rounds {
		name := fmt.Sprintf("kubepact-floor-%d-%d", run, i)
		start := time.Now()
		if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return Floor{}, fmt.Errorf("floor: a write: %w", err)
		}
		writes = append(writes, time.Since(start))
		if err := cs.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return Floor{}, fmt.Errorf("floor: %w", err)
		}

		d, err := csrRound(ctx, cs, name)
		if err != nil {
			return Floor{}, err
		}
		csrs = append(csrs, d)
	}
	f := Floor{Write: median(writes), CSRRound: median(csrs)}
	f.Handshake = Writes*f.Write + CSRRounds*f.CSRRound
	return f, nil
}

// csrRound creates, approves and waits for one CertificateSigningRequest,
// and returns how long that took.
func csrRound(ctx context.Context, cs kubernetes.Interface, name string) (time.Duration, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return 0, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name, Organization: []string{"kubepact-floor"}},
	}, key)
	if err != nil {
		return 0, err
	}
	api := cs.CertificatesV1().CertificateSigningRequests()
	obj := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](600),
		},
	}
	start := time.Now()
	created, err := api.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("floor: a CSR: %w", err)
	}
	defer func() { _ = api.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}) }()
	w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: created.ResourceVersion})
	if err != nil {
		return 0, fmt.Errorf("floor: watching a CSR: %w", err)
	}
	defer w.Stop()
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubepactFloor", Message: "measuring the floor",
	})
	if _, err := api.UpdateApproval(ctx, name, created, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("floor: approving a CSR: %w", err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("floor: the watch of CSR %s ended", name)
			}
			if o, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest); isCSR && ev.Type != watch.Deleted && len(o.Status.Certificate) > 0 {
				return time.Since(start), nil
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("floor: waiting for CSR %s: %w", name, ctx.Err())
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

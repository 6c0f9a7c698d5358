package kube

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubepact/kubepact/csr"
)

const (
	// CSRGenerateName prefixes the names of the CSR objects kubepact creates.
	CSRGenerateName = "liqo-identity-"
	// CSRLabel marks the CSR objects of tenant identities.
	CSRLabel = "liqo.io/remote-tenant-csr"
	// CSRHashLabel carries a digest of the request, to find an existing
	// object for the same CSR.
	CSRHashLabel = "kubepact.io/request-sha256"
	// MinExpirationSeconds is the shortest lifetime the CSR API accepts.
	MinExpirationSeconds = 600
)

// CSRSigner is a csr.Signer over the certificates.k8s.io/v1 API, for the
// signer kubernetes.io/kube-apiserver-client.
type CSRSigner struct {
	client   kubernetes.Interface
	approver csr.Approver
}

var _ csr.Signer = (*CSRSigner)(nil)

// NewCSRSigner returns a CSRSigner that approves its requests through
// approver (usually NewApprover over the same client).
func NewCSRSigner(client kubernetes.Interface, approver csr.Approver) *CSRSigner {
	return &CSRSigner{client: client, approver: approver}
}

// Sign creates (or re-uses) a CertificateSigningRequest for r, approves it,
// and waits for the certificate until ctx ends.
func (s *CSRSigner) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", csr.ErrFailed)
	}
	obj, err := s.ensure(ctx, r)
	if err != nil {
		return nil, err
	}
	if cert, done, err := outcomeOf(obj); done {
		return cert, err
	}
	if !hasCondition(obj, certificatesv1.CertificateApproved) {
		if err := s.approver.Approve(ctx, obj.Name, r.CSR); err != nil {
			return nil, err
		}
	}
	return s.wait(ctx, obj)
}

// ensure returns the existing CSR object for r's request, or creates one.
func (s *CSRSigner) ensure(ctx context.Context, r csr.Request) (*certificatesv1.CertificateSigningRequest, error) {
	request := r.CSR.PEM()
	sum := sha256.Sum256(request)
	digest := hex.EncodeToString(sum[:16])
	api := s.client.CertificatesV1().CertificateSigningRequests()
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: CSRLabel + "=true," + CSRHashLabel + "=" + digest})
	if err != nil {
		return nil, fmt.Errorf("listing CertificateSigningRequests: %w", err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		if bytes.Equal(obj.Spec.Request, request) && obj.DeletionTimestamp == nil &&
			!hasCondition(obj, certificatesv1.CertificateDenied) && !hasCondition(obj, certificatesv1.CertificateFailed) {
			return obj, nil
		}
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, ok := r.CSR.PublicKey().(*rsa.PublicKey); ok {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	obj := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: CSRGenerateName,
			Labels:       map[string]string{CSRLabel: "true", CSRHashLabel: digest},
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    request,
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     usages,
		},
	}
	if r.Lifetime > 0 {
		secs := max(int32(min(r.Lifetime/time.Second, 1<<31-1)), MinExpirationSeconds)
		obj.Spec.ExpirationSeconds = &secs
	}
	created, err := api.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating CertificateSigningRequest: %w", err)
	}
	return created, nil
}

// wait watches obj, from the resourceVersion it was read at, until it is
// issued, denied, failed or deleted.
func (s *CSRSigner) wait(ctx context.Context, obj *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	api := s.client.CertificatesV1().CertificateSigningRequests()
	selector := fields.OneTermEqualSelector("metadata.name", obj.Name).String()
	watcher := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return api.Watch(ctx, o)
	}}
	var (
		cert    []byte
		outcome error
	)
	_, err := watchtools.Until(ctx, obj.ResourceVersion, watcher, func(ev watch.Event) (bool, error) {
		cur, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok || cur.UID != obj.UID {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			outcome = fmt.Errorf("%w: CertificateSigningRequest %s was deleted before it was issued", csr.ErrFailed, obj.Name)
			return true, nil
		}
		var done bool
		cert, done, outcome = outcomeOf(cur)
		return done, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for CertificateSigningRequest %s to be issued: %w", obj.Name, ctx.Err())
		}
		return nil, fmt.Errorf("waiting for CertificateSigningRequest %s: %w", obj.Name, err)
	}
	return cert, outcome
}

// outcomeOf reports whether obj is settled: issued (with its certificate),
// denied (*csr.DeniedError) or failed (csr.ErrFailed).
func outcomeOf(obj *certificatesv1.CertificateSigningRequest) ([]byte, bool, error) {
	for _, c := range obj.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, &csr.DeniedError{Name: obj.Name, Reason: c.Reason, Message: c.Message}
		case certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("%w: CertificateSigningRequest %s: %s: %s", csr.ErrFailed, obj.Name, c.Reason, c.Message)
		}
	}
	if len(obj.Status.Certificate) > 0 {
		return obj.Status.Certificate, true, nil
	}
	return nil, false, nil
}

func hasCondition(obj *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range obj.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Approver is a csr.Approver that approves CertificateSigningRequests
// through the API server's approval subresource.
type Approver struct {
	client kubernetes.Interface
}

var _ csr.Approver = (*Approver)(nil)

// NewApprover returns an Approver using client.
func NewApprover(client kubernetes.Interface) *Approver { return &Approver{client: client} }

// Approve marks the CertificateSigningRequest name as approved.
func (a *Approver) Approve(ctx context.Context, name string, _ *csr.Checked) error {
	api := a.client.CertificatesV1().CertificateSigningRequests()
	err := retryOnConflict(ctx, func() error {
		obj, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasCondition(obj, certificatesv1.CertificateApproved) {
			return nil
		}
		if hasCondition(obj, certificatesv1.CertificateDenied) {
			_, _, err := outcomeOf(obj)
			return err
		}
		obj.Status.Conditions = append(obj.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateApproved,
			Status:         corev1.ConditionTrue,
			Reason:         "KubepactApprove",
			Message:        "Tenant verified by kubepact",
			LastUpdateTime: metav1.Now(),
		})
		_, err = api.UpdateApproval(ctx, name, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: approving CertificateSigningRequest %s: %w", csr.ErrFailed, name, err)
		}
		return fmt.Errorf("approving CertificateSigningRequest %s: %w", name, err)
	}
	return nil
}

package identity

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"slices"

	"github.com/kubepact/kubepact/kubeconfig"
)

// ConfirmSubject is Confirm for any identity: it asks r who cfg's
// credentials authenticate as and requires user subject.CommonName with
// every one of subject.Organization among its groups (for a ResourceSlice
// identity, csr.ResourceSliceSubject). Errors are Confirm's.
func ConfirmSubject(ctx context.Context, r Reviewer, cfg *kubeconfig.Config, subject pkix.Name) error {
	if r == nil || cfg == nil {
		return fmt.Errorf("%w: confirming needs a reviewer and a kubeconfig", ErrMalformed)
	}
	user, groups, err := r.Review(ctx, cfg)
	if err != nil {
		return fmt.Errorf("reviewing the credentials of %v: %w", cfg, err)
	}
	if user != subject.CommonName || slices.ContainsFunc(subject.Organization, func(o string) bool { return !slices.Contains(groups, o) }) {
		return fmt.Errorf("%w: the provider takes the credentials of %v for user %q in groups %q, want user %q in groups %q",
			ErrWrongUser, cfg, user, groups, subject.CommonName, subject.Organization)
	}
	return nil
}

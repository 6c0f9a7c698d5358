package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kubeconfig"
)

var (
	// ErrRejected reports credentials the provider's API server refuses
	// (401 Unauthorized or 403 Forbidden): it does not trust the
	// certificate, or no longer does.
	ErrRejected = errors.New("the provider refuses the identity's credentials")
	// ErrWrongUser reports credentials the provider takes for another user,
	// or for a user without the expected groups.
	ErrWrongUser = errors.New("the provider takes the identity's credentials for another user")
)

// Reviewer asks a provider's API server who a kubeconfig authenticates as.
//
// Review sends one request to cfg's server with cfg's credentials (a
// SelfSubjectReview, authentication.k8s.io/v1) and returns the user name
// and groups the server took them for. It returns an error wrapping
// ErrRejected when the server refuses the credentials (401 Unauthorized or
// 403 Forbidden); any other failure (the server unreachable, its serving
// certificate untrusted) is returned as it is, never as ErrRejected. Errors
// carry no credentials. Implementations are safe for concurrent use.
type Reviewer interface {
	Review(ctx context.Context, cfg *kubeconfig.Config) (user string, groups []string, err error)
}

// Confirm proves, online, that cfg's credentials work on the provider: it
// asks r who they authenticate as and requires the ControlPlane user of
// consumer consumerID, CN and O of csr.ControlPlaneSubject: the user name
// consumerID, with the group csr.ControlPlaneOrganization among its groups.
// It wraps ErrRejected (from r) when the provider refuses the credentials,
// ErrWrongUser when it takes them for another user or without that group,
// and returns r's other errors as they are.
func Confirm(ctx context.Context, r Reviewer, cfg *kubeconfig.Config, consumerID string) error {
	if r == nil || cfg == nil {
		return fmt.Errorf("%w: confirming needs a reviewer and a kubeconfig", ErrMalformed)
	}
	user, groups, err := r.Review(ctx, cfg)
	if err != nil {
		return fmt.Errorf("reviewing the credentials of %v: %w", cfg, err)
	}
	if user != consumerID || !slices.Contains(groups, csr.ControlPlaneOrganization) {
		return fmt.Errorf("%w: the provider takes the credentials of %v for user %q in groups %q, want user %q in group %q",
			ErrWrongUser, cfg, user, groups, consumerID, csr.ControlPlaneOrganization)
	}
	return nil
}

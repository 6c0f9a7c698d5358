package testcluster

import (
	"context"
	"errors"
	"fmt"
)

// StartAll builds the binaries if they are missing, then starts one cluster
// per name, concurrently. If any cluster fails to start, it stops those that
// did and returns every error.
func StartAll(ctx context.Context, names ...string) ([]*Cluster, error) {
	return StartAllWith(ctx, Options{}, names...)
}

// StartAllWith is StartAll with opts for every cluster, but for its BinDir,
// which StartAllWith sets, and its Name, one of names.
func StartAllWith(ctx context.Context, opts Options, names ...string) ([]*Cluster, error) {
	binDir, err := EnsureBinaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("building control-plane binaries: %w", err)
	}
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	done := make(chan struct{})
	for i, name := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			o := opts
			o.BinDir, o.Name = binDir, name
			clusters[i], errs[i] = Start(ctx, o)
		}()
	}
	for range names {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, StopAll(clusters))
	}
	return clusters, nil
}

// StopAll stops every cluster that is not nil.
func StopAll(clusters []*Cluster) error {
	var errs []error
	for _, c := range clusters {
		if c != nil {
			errs = append(errs, c.Stop())
		}
	}
	return errors.Join(errs...)
}

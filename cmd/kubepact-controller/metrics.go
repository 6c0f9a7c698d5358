package main

import (
	"crypto/tls"
	"github.com/spf13/pflag"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubepact/kubepact/controllers"
)

// The metrics endpoint, as kubebuilder v4 scaffolds it: HTTPS on
// --metrics-bind-address (default :8443; 0 disables it), where every
// request is authenticated with a TokenReview and authorized with a
// SubjectAccessReview for "get" on the non-resource URL /metrics
// (filters.WithAuthenticationAndAuthorization). The controller's
// ServiceAccount needs create on tokenreviews and subjectaccessreviews
// (config/controller/rbac/cluster_role.yaml); a scraper needs the
// kubepact-controller-metrics-reader ClusterRole
// (config/controller/rbac/metrics_reader_role.yaml).
//
// Flags besides --metrics-bind-address:
//
//	--metrics-secure=false   serve plain HTTP with neither authentication nor authorization
//	--metrics-cert-dir DIR   tls.crt and tls.key of the serving certificate, reloaded when they
//	                         change; default: a self-signed certificate made at startup
//
// HTTP/2 is off, as in kubebuilder's scaffold (CVE-2023-44487,
// CVE-2023-39325).

// metricsFlags are the flags of the metrics endpoint besides its address.
type metricsFlags struct {
	secure  bool
	certDir string
}

func (f *metricsFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.secure, "metrics-secure", true, "serve metrics over HTTPS to authenticated and authorized clients; false serves plain HTTP to anyone")
	fs.StringVar(&f.certDir, "metrics-cert-dir", "", "directory of tls.crt and tls.key for the metrics endpoint; default: a self-signed certificate")
}

// metricsServer returns the metrics server's options for the command line,
// and sets kubepact_build_info to this binary's version.
func (o *options) metricsServer() metricsserver.Options {
	controllers.SetBuildInfo(Version())
	if !o.metrics.secure {
		return metricsserver.Options{BindAddress: o.metricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    o.metricsAddr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        o.metrics.certDir,
		TLSOpts:        []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	buildversion "github.com/kubepact/kubepact/internal/version"
)

// version is the CLI's version when set at link time, which wins over
// every other source:
//
//	go build -ldflags "-X main.version=v0.2.0" ./cmd/kubepact
//
// Without it, the CLI reports the module version go install recorded when
// it is a release, else VERSION with -dev and the revision built, as
// kubepact-controller does (package internal/version gives the order).
var version string

// cliVersion returns the CLI's version.
func cliVersion() string { return buildversion.Get(version) }

// versionKind is the kind of what version -o json|yaml prints, of
// apiVersion statusAPIVersion: fields are only ever added to it.
const versionKind = "Version"

// versionReport is what version -o json|yaml prints.
type versionReport struct {
	APIVersion string `json:"apiVersion"` // cli.kubepact.io/v1
	Kind       string `json:"kind"`       // Version
	// ClientVersion is the CLI's version.
	ClientVersion string `json:"clientVersion"`
	// Cluster is what the cluster runs; absent with --client or when the
	// cluster cannot be reached.
	Cluster *clusterVersion `json:"cluster,omitempty"`
}

// clusterVersion is what version tells of a cluster.
type clusterVersion struct {
	// Server is the URL of the cluster's API server.
	Server string `json:"server"`
	// Controller is the controller that holds its leader election Lease:
	// kubepact-controller or liqo-controller-manager; absent when none
	// does.
	Controller string `json:"controller,omitempty"`
	// ControllerVersion is the version of that controller: the one
	// kubepact-controller's leader writes into its Lease, or Liqo's
	// Deployment's app.kubernetes.io/version (Liqo writes none into its
	// Lease); "unknown" when neither tells. Absent when no controller runs.
	ControllerVersion string `json:"controllerVersion,omitempty"`
	// Lease is the namespace/name of the Lease the controller holds.
	Lease string `json:"lease,omitempty"`
}

// versionHelp is version's help beyond its summary.
const versionHelp = `The controller's version is what the controller that runs says: the leader of
kubepact-controller's replicas writes its version into its leader election Lease
(annotation ` + buildversion.LeaseAnnotation + `), read while the Lease is held. No Lease held
(absent, released or expired) is "no controller running". For Liqo's controller
manager, which writes no version, its Deployment's app.kubernetes.io/version.

Exit status: 0 when the cluster answered, also when it runs no controller;
1 when the cluster cannot be reached or its Leases cannot be read (as kubectl
version does), after printing the CLI's version; 2 on a usage error.`

func versionCommand(f *flags) runFunc {
	cf := localFlags(f, "local")
	clientOnly := f.Bool("client", false, "print the CLI's version only; do not contact the cluster")
	timeout := f.Duration("timeout", 10*time.Second, "give up on the cluster after this long")
	out := newOutput("")
	f.Var(out, "output", "output format: json, yaml (default text); the schema is apiVersion "+statusAPIVersion+", kind "+versionKind)
	f.alias("o", "output")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if out.format != "" && out.format != "json" && out.format != "yaml" {
			return usagef("-o %s: version prints json or yaml", out.format)
		}
		report := &versionReport{APIVersion: statusAPIVersion, Kind: versionKind, ClientVersion: cliVersion()}
		var err error
		if !*clientOnly {
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			report.Cluster, err = readClusterVersion(ctx, cf)
		}
		if perr := printVersion(e.stdout, out, report); perr != nil {
			return perr
		}
		return err
	}
}

// readClusterVersion connects to the cluster and reads what it runs.
func readClusterVersion(ctx context.Context, cf *clusterFlags) (*clusterVersion, error) {
	cl, err := cf.connect("local")
	if err != nil {
		return nil, err
	}
	cv, err := runningController(ctx, cl.client, cl.namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the controller's version: %w", err)
	}
	cv.Server = cl.config.Host
	return cv, nil
}

// runningController tells which controller holds its leader election
// Lease, judged by the API server's time: kubepact-controller's (in any
// namespace), else Liqo's. A clusterVersion with no Controller when none
// does. Its errors are the API server's or the transport's.
func runningController(ctx context.Context, client kubernetes.Interface, liqoNamespace string) (*clusterVersion, error) {
	for _, name := range []string{kubepactLease, liqoLease} {
		leases, err := client.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		})
		if err != nil {
			return nil, fmt.Errorf("looking for the Lease %s: %w", name, err)
		}
		for _, listed := range leases.Items {
			l, now, err := readLease(ctx, client, listed.Namespace, listed.Name)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, err
			case !held(l, now):
				continue
			}
			cv := &clusterVersion{Lease: l.Namespace + "/" + l.Name}
			if name == kubepactLease {
				cv.Controller, cv.ControllerVersion = kubepactApp, leaseVersion(l)
				return cv, nil
			}
			cv.Controller, cv.ControllerVersion = liqoDeployment, "unknown"
			if d, err := client.AppsV1().Deployments(liqoNamespace).Get(ctx, liqoDeployment, metav1.GetOptions{}); err == nil {
				cv.ControllerVersion = deploymentVersion(d)
			}
			return cv, nil
		}
	}
	return &clusterVersion{}, nil
}

// leaseVersion is the version kubepact-controller's holder of l wrote into
// it, "unknown" when the holder wrote none (a version before it did): the
// annotations left by an earlier holder are not its.
func leaseVersion(l *coordinationv1.Lease) string {
	v := l.Annotations[buildversion.LeaseAnnotation]
	if v == "" || l.Spec.HolderIdentity == nil || l.Annotations[buildversion.LeaseHolderAnnotation] != *l.Spec.HolderIdentity {
		return "unknown"
	}
	return v
}

// printVersion prints report as text, or in out's format.
func printVersion(w io.Writer, out *output, report *versionReport) error {
	if out.format != "" {
		return printDocument(w, out, report)
	}
	fmt.Fprintf(w, "Client Version: %s\n", report.ClientVersion)
	switch c := report.Cluster; {
	case c == nil:
	case c.Controller == "":
		fmt.Fprintf(w, "Controller Version: no controller running\n")
	default:
		fmt.Fprintf(w, "Controller Version: %s (%s, Lease %s)\n", c.ControllerVersion, c.Controller, c.Lease)
	}
	return nil
}

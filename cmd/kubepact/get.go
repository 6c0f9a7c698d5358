package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
)

// errNoKubeconfig reports a peering whose kubeconfig Secret is not (yet)
// there.
var errNoKubeconfig = errors.New("no kubeconfig")

func getTenantCommand(f *flags) runFunc {
	cf := localFlags(f, providerRole)
	timeout := timeoutFlag(f)
	out := tableOutputFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		consumerID, err := maxOneArg(args, "the consumer's cluster ID")
		if err != nil {
			return err
		}
		if consumerID != "" {
			if err := clusterid.Validate(consumerID); err != nil {
				return usagef("consumer: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(providerRole)
		if err != nil {
			return err
		}
		var tenants []authv1beta1.Tenant
		if consumerID != "" {
			var t authv1beta1.Tenant
			key := client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}
			if err := cl.typed.Get(ctx, key, &t); err != nil {
				return fmt.Errorf("reading Tenant %s: %w", key, err)
			}
			tenants = append(tenants, t)
		} else {
			var l authv1beta1.TenantList
			if err := cl.typed.List(ctx, &l); err != nil {
				return fmt.Errorf("listing Tenants: %w", err)
			}
			tenants = l.Items
		}
		if out.format != "" {
			objs := make([]runtime.Object, len(tenants))
			for i := range tenants {
				objs[i] = &tenants[i]
			}
			return out.printObjects(e.stdout, objs, consumerID == "")
		}
		rows := make([][]any, 0, len(tenants))
		for _, t := range tenants {
			rows = append(rows, []any{t.Name, t.Namespace, tenantCondition(&t), tenantExpiry(&t), age(t.CreationTimestamp)})
		}
		return printTable(e.stdout, []string{"NAME", "NAMESPACE", "CONDITION", "CERTIFICATE EXPIRES", "AGE"}, rows)
	}
}

func getIdentityCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	out := tableOutputFlag(f)
	showSecrets := f.Bool("show-secrets", false, "print the AWS secret access key an Identity may carry (left out otherwise)")
	return func(ctx context.Context, e *env, args []string) error {
		providerID, err := maxOneArg(args, "the provider's cluster ID")
		if err != nil {
			return err
		}
		if providerID != "" {
			if err := clusterid.Validate(providerID); err != nil {
				return usagef("provider: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(consumerRole)
		if err != nil {
			return err
		}
		var l authv1beta1.IdentityList
		var opts []client.ListOption
		if providerID != "" {
			opts = append(opts, client.InNamespace(clusterid.TenantNamespace(providerID)))
		}
		if err := cl.typed.List(ctx, &l, opts...); err != nil {
			return fmt.Errorf("listing Identities: %w", err)
		}
		if out.format != "" {
			objs := make([]runtime.Object, len(l.Items))
			for i := range l.Items {
				id := &l.Items[i]
				if aws := id.Spec.AuthParams.AwsConfig; aws != nil && !*showSecrets && aws.AwsSecretAccessKey != "" {
					aws.AwsSecretAccessKey = "<redacted>"
				}
				objs[i] = id
			}
			return out.printObjects(e.stdout, objs, true)
		}
		rows := make([][]any, 0, len(l.Items))
		for _, id := range l.Items {
			secret := "-"
			if id.Status.KubeconfigSecretRef != nil {
				secret = id.Status.KubeconfigSecretRef.Name
			}
			rows = append(rows, []any{id.Name, id.Namespace, id.Spec.ClusterID, string(id.Spec.Type), secret,
				certificateExpiry(id.Spec.AuthParams.SignedCRT), age(id.CreationTimestamp)})
		}
		return printTable(e.stdout, []string{"NAME", "NAMESPACE", "PROVIDER", "TYPE", "KUBECONFIG SECRET", "CERTIFICATE EXPIRES", "AGE"}, rows)
	}
}

func getKubeconfigCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	providerID := f.String("remote-cluster-id", "", "ID of the provider the kubeconfig is for (required)")
	slice := f.String("resourceslice", "", "the kubeconfig of this ResourceSlice's identity instead of the ControlPlane's")
	file := f.String("output-file", "", "write the kubeconfig to this file (mode 0600) instead of standard output")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := required("remote-cluster-id", *providerID); err != nil {
			return err
		}
		if err := clusterid.Validate(*providerID); err != nil {
			return usagef("--remote-cluster-id: %v", err)
		}
		name := identity.ControlPlaneName(*providerID)
		if *slice != "" {
			name = identity.ResourceSliceName(*slice)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(consumerRole)
		if err != nil {
			return err
		}
		ns := clusterid.TenantNamespace(*providerID)
		var id authv1beta1.Identity
		if err := cl.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &id); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%w: no Identity %s/%s: authenticate with provider %s first", errNoKubeconfig, ns, name, *providerID)
			}
			return fmt.Errorf("reading Identity %s/%s: %w", ns, name, err)
		}
		if id.Status.KubeconfigSecretRef == nil {
			return fmt.Errorf("%w: Identity %s/%s has no kubeconfig Secret yet: is the consumer's controller running?", errNoKubeconfig, ns, name)
		}
		secretName := id.Status.KubeconfigSecretRef.Name
		sec, err := cl.client.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading Secret %s/%s: %w", ns, secretName, err)
		}
		data := sec.Data[kubeconfig.SecretKey]
		if len(data) == 0 {
			return fmt.Errorf("%w: Secret %s/%s has no %s", errNoKubeconfig, ns, secretName, kubeconfig.SecretKey)
		}
		if *file == "" {
			_, err := e.stdout.Write(data)
			return err
		}
		if err := writePrivateFile(*file, data); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, " INFO  Kubeconfig of Identity %s/%s written to %s\n", ns, name, *file)
		return nil
	}
}

// writePrivateFile writes data to path, readable by its owner only.
func writePrivateFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isMissingKind reports an error listing a kind the cluster does not serve.
func isMissingKind(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// tenantCondition is a Tenant's condition, Pending until it is accepted.
func tenantCondition(t *authv1beta1.Tenant) string {
	if t.Status.AuthParams == nil {
		return "Pending"
	}
	if t.Spec.TenantCondition == "" {
		return string(authv1beta1.TenantConditionActive)
	}
	return string(t.Spec.TenantCondition)
}

func tenantExpiry(t *authv1beta1.Tenant) string {
	if t.Status.AuthParams == nil {
		return "-"
	}
	return certificateExpiry(t.Status.AuthParams.SignedCRT)
}

// certificateExpiry returns the NotAfter of a PEM certificate, "-" when
// there is none.
func certificateExpiry(pem []byte) string {
	if len(pem) == 0 {
		return "-"
	}
	cert, err := csr.ParseCertificate(pem)
	if err != nil {
		return "invalid"
	}
	return cert.NotAfter.UTC().Format(time.RFC3339)
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

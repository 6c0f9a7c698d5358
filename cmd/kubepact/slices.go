package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/resourceslice"
)

// sliceFlags are the flags of the resourceslice commands, which run on the
// consumer.
type sliceFlags struct {
	cluster    *clusterFlags
	providerID *string
	timeout    *time.Duration
}

func addSliceFlags(f *flags) *sliceFlags {
	return &sliceFlags{
		cluster:    localFlags(f, consumerRole),
		providerID: f.String("remote-cluster-id", "", "ID of the provider cluster (required)"),
		timeout:    timeoutFlag(f),
	}
}

// connect checks the flags, connects to the consumer cluster and returns
// ctx bounded by --timeout, with its cancel.
func (s *sliceFlags) connect(ctx context.Context) (*cluster, context.Context, context.CancelFunc, error) {
	if err := required("remote-cluster-id", *s.providerID); err != nil {
		return nil, nil, nil, err
	}
	if err := clusterid.Validate(*s.providerID); err != nil {
		return nil, nil, nil, usagef("--remote-cluster-id: %v", err)
	}
	cl, err := s.cluster.connect(consumerRole)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *s.timeout)
	return cl, ctx, cancel, nil
}

// resourcesFlag parses "cpu=2,memory=4Gi".
type resourcesFlag struct{ list corev1.ResourceList }

func (r *resourcesFlag) String() string {
	var parts []string
	for k, v := range r.list {
		parts = append(parts, string(k)+"="+v.String())
	}
	return strings.Join(parts, ",")
}

func (r *resourcesFlag) Type() string { return "string" }

func (r *resourcesFlag) Set(s string) error {
	if r.list == nil {
		r.list = corev1.ResourceList{}
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want NAME=QUANTITY", kv)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%q: %w", kv, err)
		}
		r.list[corev1.ResourceName(k)] = q
	}
	return nil
}

func createResourceSliceCommand(f *flags) runFunc {
	sf := addSliceFlags(f)
	class := f.String("class", string(authv1beta1.DefaultResourceSliceClass), "class of the slice")
	var res resourcesFlag
	f.Var(&res, "resource", "resources asked for, as NAME=QUANTITY[,NAME=QUANTITY...], such as cpu=2,memory=4Gi (repeatable)")
	strict := f.Bool("strict", false, "give the slice identity a fresh TLS key instead of the cluster key (only kubepact providers accept it)")
	return func(ctx context.Context, e *env, args []string) error {
		name, err := oneArg(args, "the slice name")
		if err != nil {
			return err
		}
		cl, ctx, cancel, err := sf.connect(ctx)
		if err != nil {
			return err
		}
		defer cancel()
		id, err := cl.clusterID(ctx)
		if err != nil {
			return err
		}
		e.consumerID = id
		if err := cl.ensureCRDs(ctx, false, authv1beta1.ResourceSliceResource); err != nil {
			return err
		}
		c, err := cl.consumer(id, nil, &consumer.Options{Strict: *strict, OnStep: printSteps(e.stderr)})
		if err != nil {
			return err
		}
		s, err := c.Slice(ctx, *sf.providerID, name, &consumer.SliceOptions{Class: authv1beta1.ResourceSliceClass(*class), Resources: res.list})
		if err != nil {
			return err
		}
		if err := cl.typed.Create(ctx, s, client.FieldOwner(kube.FieldManager)); err != nil {
			return fmt.Errorf("creating ResourceSlice %s/%s: %w", s.Namespace, s.Name, err)
		}
		fmt.Fprintf(e.stdout, "ResourceSlice %s/%s created for provider %s; the consumer's controller replicates it and makes Identity %s once the provider accepts it\n",
			s.Namespace, s.Name, *sf.providerID, identity.ResourceSliceName(s.Name))
		return nil
	}
}

func getResourceSliceCommand(f *flags) runFunc {
	sf := addSliceFlags(f)
	out := tableOutputFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 1 {
			return usagef("unexpected argument %q", args[1])
		}
		cl, ctx, cancel, err := sf.connect(ctx)
		if err != nil {
			return err
		}
		defer cancel()
		ns := clusterid.TenantNamespace(*sf.providerID)
		slices, err := listSlices(ctx, cl.typed, ns, args)
		if err != nil {
			return err
		}
		if out.format != "" {
			objs := make([]runtime.Object, len(slices))
			for i := range slices {
				objs[i] = &slices[i]
			}
			return out.printObjects(e.stdout, objs, len(args) == 0)
		}
		ids, err := kube.NewIdentityStore(cl.typed).List(ctx, ns)
		if err != nil {
			return err
		}
		secrets := map[string]string{}
		for _, id := range ids {
			if id.Spec.Type == authv1beta1.ResourceSliceIdentityType && id.Status.KubeconfigSecretRef != nil {
				secrets[id.Name] = id.Status.KubeconfigSecretRef.Name
			}
		}
		var rows [][]any
		for _, s := range slices {
			name := identity.ResourceSliceName(s.Name)
			secret, idName := secrets[name], name
			if secret == "" {
				secret, idName = "-", "-"
			}
			rows = append(rows, []any{s.Name,
				conditionStatus(&s, authv1beta1.ResourceSliceConditionTypeAuthentication),
				conditionStatus(&s, authv1beta1.ResourceSliceConditionTypeResources),
				idName, secret, conditionMessage(&s)})
		}
		return printTable(e.stdout, []string{"NAME", "AUTHENTICATION", "RESOURCES", "IDENTITY", "KUBECONFIG SECRET", "MESSAGE"}, rows)
	}
}

// listSlices returns the slice named in args, or every slice in ns.
func listSlices(ctx context.Context, c client.Client, ns string, args []string) ([]authv1beta1.ResourceSlice, error) {
	if len(args) == 1 {
		var s authv1beta1.ResourceSlice
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, &s); err != nil {
			return nil, fmt.Errorf("reading ResourceSlice %s/%s: %w", ns, args[0], err)
		}
		return []authv1beta1.ResourceSlice{s}, nil
	}
	var l authv1beta1.ResourceSliceList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing ResourceSlices in %s: %w", ns, err)
	}
	return l.Items, nil
}

func conditionStatus(s *authv1beta1.ResourceSlice, typ authv1beta1.ResourceSliceConditionType) string {
	if c := resourceslice.Condition(&s.Status, typ); c != nil {
		return string(c.Status)
	}
	return "Pending"
}

// conditionMessage returns the message of the first Denied condition.
func conditionMessage(s *authv1beta1.ResourceSlice) string {
	for _, c := range s.Status.Conditions {
		if c.Status == authv1beta1.ResourceSliceConditionDenied {
			msg := strings.ReplaceAll(c.Message, "\n", " ")
			if len(msg) > 120 {
				msg = msg[:120] + "…"
			}
			return c.Reason + ": " + msg
		}
	}
	return ""
}

func deleteResourceSliceCommand(f *flags) runFunc {
	sf := addSliceFlags(f)
	return func(ctx context.Context, e *env, args []string) error {
		name, err := oneArg(args, "the slice name")
		if err != nil {
			return err
		}
		cl, ctx, cancel, err := sf.connect(ctx)
		if err != nil {
			return err
		}
		defer cancel()
		ns := clusterid.TenantNamespace(*sf.providerID)
		err = cl.typed.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ResourceSlice %s/%s: %w", ns, name, errNoSuchSlice)
		}
		if err != nil {
			return fmt.Errorf("deleting ResourceSlice %s/%s: %w", ns, name, err)
		}
		fmt.Fprintf(e.stdout, "ResourceSlice %s/%s deleted; the consumer's controller removes its copy on the provider, its Identity and kubeconfig Secret\n", ns, name)
		return nil
	}
}

var errNoSuchSlice = errors.New("no such ResourceSlice")

// forceUnauthenticate removes, on the consumer only, what it holds for a
// provider gone for good (Consumer.ForgetForce).
func forceUnauthenticate(ctx context.Context, e *env, pf *pairFlags) error {
	if pf.provider.clusterID == "" {
		return usagef("--force needs --remote-cluster-id: the provider is not contacted")
	}
	if err := clusterid.Validate(pf.provider.clusterID); err != nil {
		return usagef("--remote-cluster-id: %v", err)
	}
	cl, err := pf.consumer.connect(consumerRole)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
	defer cancel()
	id, err := cl.clusterID(ctx)
	if err != nil {
		return err
	}
	e.consumerID = id
	if holds, err := holdsPeer(ctx, cl, pf.provider.clusterID); err != nil {
		return err
	} else if !holds {
		return fmt.Errorf("%w: consumer %s holds no Identity, ResourceSlice or signed nonce of provider %s: nothing was changed", errNotPeered, id, pf.provider.clusterID)
	}
	c, err := cl.consumer(id, nil, &consumer.Options{OnStep: printSteps(e.stderr)})
	if err != nil {
		return err
	}
	f, err := c.ForgetForce(ctx, pf.provider.clusterID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, " WARN  the provider %s was NOT contacted: only objects on the consumer were removed; "+
		"its Tenant, bindings and the certificates it issued remain on the provider until its administrator removes them\n", pf.provider.clusterID)
	fmt.Fprintf(e.stdout, "Removed on consumer %s for provider %s:\n  slices:     %s\n  identities: %s\n  secrets:    %s\n  keys:       %s\n",
		id, pf.provider.clusterID, list(f.Slices), list(f.Identities), list(f.Secrets), list(f.Keys))
	return nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// holdsPeer reports whether the consumer cluster holds anything of a
// provider in its tenant namespace: an Identity, a ResourceSlice or the
// signed nonce.
func holdsPeer(ctx context.Context, cl *cluster, providerID string) (bool, error) {
	ns := clusterid.TenantNamespace(providerID)
	ids, err := kube.NewIdentityStore(cl.typed).List(ctx, ns)
	if err != nil || len(ids) > 0 {
		return len(ids) > 0, err
	}
	held, err := kube.NewSliceStore(cl.typed).List(ctx, ns)
	if err != nil || len(held) > 0 {
		return len(held) > 0, err
	}
	_, err = cl.client.CoreV1().Secrets(ns).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading Secret %s/%s: %w", ns, nonce.SignedSecretName, err)
}

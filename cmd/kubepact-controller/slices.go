package main

import (
	"fmt"
	"github.com/spf13/pflag"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/resourceslice"
)

// sliceOffer holds the flags of what the provider offers the
// ResourceSlices it accepts, named as the liqo-controller-manager's.
type sliceOffer struct {
	resources     resourceMap
	enableStorage bool
	storageClass  string
	ingress       classList
	loadBalancer  classList
	labels        labelMap
}

// bindFlags adds the offer's flags to fs, with Liqo's Helm chart's
// defaults.
func (s *sliceOffer) bindFlags(fs *pflag.FlagSet) {
	s.resources = resourceMap{list: resourceslice.DefaultResources()}
	fs.Var(&s.resources, "default-node-resources",
		"provider: quantities a ResourceSlice is granted of the resources its spec leaves out, as name=quantity,... (empty: none)")
	fs.BoolVar(&s.enableStorage, "enable-storage", true,
		"provider: offer ResourceSlices the cluster's StorageClasses")
	fs.StringVar(&s.storageClass, "real-storage-class-name", "",
		"provider: the StorageClass offered as the default; default: the one annotated storageclass.kubernetes.io/is-default-class")
	fs.Var(&s.ingress, "ingress-classes",
		`provider: ingress classes offered to ResourceSlices, as name[;default],... (e.g. "nginx;default,traefik")`)
	fs.Var(&s.loadBalancer, "load-balancer-classes",
		`provider: load-balancer classes offered to ResourceSlices, as name[;default],... (e.g. "metallb;default")`)
	fs.Var(&s.labels, "cluster-labels",
		"provider: labels of the virtual node a consumer makes for a ResourceSlice, as key=value,...")
}

// configure sets the offer in pc.
func (s *sliceOffer) configure(pc *controllers.ProviderConfig) {
	offer := &resourceslice.Offer{
		DefaultResources:  s.resources.list.DeepCopy(),
		LocalStorageClass: s.storageClass,
		NodeLabels:        maps.Clone(s.labels.m),
	}
	for _, c := range s.ingress.classes {
		offer.IngressClasses = append(offer.IngressClasses, authv1beta1.IngressType{IngressClassName: c.name, Default: c.def})
	}
	for _, c := range s.loadBalancer.classes {
		offer.LoadBalancerClasses = append(offer.LoadBalancerClasses, authv1beta1.LoadBalancerType{LoadBalancerClassName: c.name, Default: c.def})
	}
	pc.SliceOffer = offer
	pc.DisableStorage = !s.enableStorage
}

// resourceMap is a pflag.Value of name=quantity pairs. The first Set
// replaces the default; later ones add to it.
type resourceMap struct {
	list corev1.ResourceList
	set  bool
}

func (r *resourceMap) String() string {
	if r == nil {
		return ""
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.list)) {
		q := r.list[name]
		out = append(out, string(name)+"="+q.String())
	}
	return strings.Join(out, ",")
}

// Type names the value in --help.
func (r *resourceMap) Type() string { return "name=quantity,..." }

func (r *resourceMap) Set(v string) error {
	if !r.set {
		r.list, r.set = corev1.ResourceList{}, true
	}
	for chunk := range strings.SplitSeq(v, ",") {
		if chunk == "" {
			continue
		}
		name, value, ok := strings.Cut(chunk, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q is not name=quantity", chunk)
		}
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
			return fmt.Errorf("resource name %q: %s", name, strings.Join(msgs, "; "))
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("%s: %s is negative", name, value)
		}
		r.list[corev1.ResourceName(name)] = q
	}
	return nil
}

// className is one class of a classList.
type className struct {
	name string
	def  bool
}

// classList is a pflag.Value of classes, as name[;default],..., as Liqo's
// ClassNameList parses them; repeated flags add to it.
type classList struct{ classes []className }

func (c *classList) String() string {
	if c == nil {
		return ""
	}
	out := make([]string, len(c.classes))
	for i, cl := range c.classes {
		out[i] = cl.name
		if cl.def {
			out[i] += ";default"
		}
	}
	return strings.Join(out, ",")
}

// Type names the value in --help.
func (c *classList) Type() string { return "name[;default],..." }

func (c *classList) Set(v string) error {
	for chunk := range strings.SplitSeq(v, ",") {
		if chunk == "" {
			continue
		}
		name, mark, def := strings.Cut(chunk, ";")
		if def && mark != "default" {
			return fmt.Errorf("%q: only \";default\" may follow a class name", chunk)
		}
		// An IngressClass is named as an object; a load-balancer class is
		// a label-style name, prefixed or not.
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 && len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("class %q: %s", name, strings.Join(msgs, "; "))
		}
		c.classes = append(c.classes, className{name: name, def: def})
	}
	return nil
}

// labelMap is a pflag.Value of key=value labels; repeated flags add to it.
type labelMap struct{ m map[string]string }

func (l *labelMap) String() string {
	if l == nil {
		return ""
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l.m)) {
		out = append(out, k+"="+l.m[k])
	}
	return strings.Join(out, ",")
}

// Type names the value in --help.
func (l *labelMap) Type() string { return "key=value,..." }

func (l *labelMap) Set(v string) error {
	if l.m == nil {
		l.m = map[string]string{}
	}
	for chunk := range strings.SplitSeq(v, ",") {
		if chunk == "" {
			continue
		}
		k, val, ok := strings.Cut(chunk, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", chunk)
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, val, strings.Join(msgs, "; "))
		}
		l.m[k] = val
	}
	return nil
}

// sliceBounds holds the flags of the per-consumer bounds on ResourceSlice
// certificates (resourceslice.Bounds).
type sliceBounds struct {
	maxSlices, perHour int
	rekey              time.Duration
}

// bindFlags adds the bounds' flags to fs, with resourceslice.Bounds'
// defaults.
func (b *sliceBounds) bindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&b.maxSlices, "max-slices-per-consumer", resourceslice.DefaultMaxSlices,
		"provider: live ResourceSlices of one consumer that get certificates, the oldest first (-1: no bound)")
	fs.DurationVar(&b.rekey, "slice-rekey-interval", 0,
		"provider: shortest time from a ResourceSlice's certificate to one for another CSR of it; 0: half the lifetime of the certificate it holds; negative: no bound")
	fs.IntVar(&b.perHour, "slice-certificates-per-hour", resourceslice.DefaultCertificatesPerHour,
		"provider: certificates for new ResourceSlice requests of one consumer signed in any hour (-1: no bound)")
}

// validate refuses a count of 0: resourceslice.Bounds would read it as
// the default, not as what an operator who writes it may mean.
func (b *sliceBounds) validate() error {
	if b.maxSlices == 0 {
		return fmt.Errorf("--max-slices-per-consumer: 0 would refuse every slice: give a positive count, or -1 for no bound")
	}
	if b.perHour == 0 {
		return fmt.Errorf("--slice-certificates-per-hour: 0 would refuse every slice: give a positive count, or -1 for no bound")
	}
	return nil
}

// configure sets the bounds in pc.
func (b *sliceBounds) configure(pc *controllers.ProviderConfig) {
	pc.SliceBounds = resourceslice.Bounds{MaxSlices: b.maxSlices, RekeyInterval: b.rekey, CertificatesPerHour: b.perHour}
}

package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/resourceslice"
)

func TestSliceOfferFlags(t *testing.T) {
	offerOf := func(t *testing.T, args ...string) controllers.ProviderConfig {
		t.Helper()
		o, err := parse(append([]string{"--cluster-id=cl-a"}, args...), io.Discard)
		require.NoError(t, err)
		var pc controllers.ProviderConfig
		o.offer.configure(&pc)
		return pc
	}

	pc := offerOf(t)
	require.False(t, pc.DisableStorage, "storage is offered by default, as Liqo's chart does")
	require.Equal(t, resourceslice.DefaultResources(), pc.SliceOffer.DefaultResources)
	require.Empty(t, pc.SliceOffer.IngressClasses)
	require.Empty(t, pc.SliceOffer.NodeLabels)

	pc = offerOf(t, "--default-node-resources=cpu=2,memory=1Gi", "--default-node-resources=nvidia.com/gpu=1",
		"--enable-storage=false", "--real-storage-class-name=local-path",
		"--ingress-classes=nginx;default,traefik", "--load-balancer-classes=metallb;default",
		"--cluster-labels=topology.kubernetes.io/zone=eu-1,liqo.io/provider=kind")
	require.True(t, pc.DisableStorage)
	require.Len(t, pc.SliceOffer.DefaultResources, 3, "the flag replaces the defaults, repeats add")
	for name, q := range map[corev1.ResourceName]string{"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"} {
		got := pc.SliceOffer.DefaultResources[name]
		require.Zero(t, got.Cmp(resource.MustParse(q)), name)
	}
	require.Equal(t, "local-path", pc.SliceOffer.LocalStorageClass)
	require.Equal(t, []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}, {IngressClassName: "traefik"}}, pc.SliceOffer.IngressClasses)
	require.Equal(t, []authv1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb", Default: true}}, pc.SliceOffer.LoadBalancerClasses)
	require.Equal(t, map[string]string{"topology.kubernetes.io/zone": "eu-1", "liqo.io/provider": "kind"}, pc.SliceOffer.NodeLabels)

	require.Empty(t, offerOf(t, "--default-node-resources=").SliceOffer.DefaultResources, "empty: no default quantities")

	for _, bad := range []string{
		"--default-node-resources=cpu",
		"--default-node-resources=cpu=lots",
		"--default-node-resources=cpu=-1",
		"--ingress-classes=nginx;primary",
		"--load-balancer-classes=Not Valid",
		"--cluster-labels=novalue",
		"--cluster-labels=zone=not valid",
	} {
		err := run(context.Background(), []string{"--cluster-id=cl-a", bad}, &rest.Config{}, io.Discard, io.Discard)
		require.ErrorIs(t, err, errUsage, bad)
	}
}

func TestSliceBoundsFlags(t *testing.T) {
	boundsOf := func(t *testing.T, args ...string) resourceslice.Bounds {
		t.Helper()
		o, err := parse(append([]string{"--cluster-id=cl-a"}, args...), io.Discard)
		require.NoError(t, err)
		var pc controllers.ProviderConfig
		o.bounds.configure(&pc)
		return pc.SliceBounds
	}
	require.Equal(t, resourceslice.Bounds{MaxSlices: resourceslice.DefaultMaxSlices, CertificatesPerHour: resourceslice.DefaultCertificatesPerHour},
		boundsOf(t), "the defaults, stated")
	require.Equal(t, resourceslice.Bounds{MaxSlices: 8, RekeyInterval: 90 * time.Minute, CertificatesPerHour: 20},
		boundsOf(t, "--max-slices-per-consumer=8", "--slice-rekey-interval=90m", "--slice-certificates-per-hour=20"))
	require.Equal(t, resourceslice.Bounds{MaxSlices: -1, RekeyInterval: -1, CertificatesPerHour: -1},
		boundsOf(t, "--max-slices-per-consumer=-1", "--slice-rekey-interval=-1ns", "--slice-certificates-per-hour=-1"))
	for _, bad := range []string{
		"--max-slices-per-consumer=0",
		"--max-slices-per-consumer=many",
		"--slice-certificates-per-hour=0",
		"--slice-rekey-interval=soon",
	} {
		err := run(context.Background(), []string{"--cluster-id=cl-a", bad}, &rest.Config{}, io.Discard, io.Discard)
		require.ErrorIs(t, err, errUsage, bad)
	}
}

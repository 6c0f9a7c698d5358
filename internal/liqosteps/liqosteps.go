// Package liqosteps plays, for tests, the steps liqoctl authenticate takes
// between two clusters whose controllers answer Liqo v1.2's declarative
// handshake (SPEC §7): it writes each object where liqoctl writes it and
// waits for the controllers' answers.
package liqosteps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Cluster is one side of a peering: its ID and an administrator's clients.
type Cluster struct {
	ID    string
	Admin kubernetes.Interface
	Typed client.Client
}

// The keys of the signed-nonce Secret with which kubepact authenticate asks
// the consumer's kubepact-controller for the Tenant and a key of the
// identity's own (contract.TenantKey, contract.TenantOwnKeyKey: the
// wire format, written out so that the modules that use this package do not
// take in the controllers' dependencies).
const (
	tenantKey       = "tenant.yaml"
	tenantOwnKeyKey = "ownKey"
)

// Wait bounds each wait of Handshake for a controller's answer.
const Wait = time.Minute

// Handshake writes the objects liqoctl authenticate writes for consumer c
// of provider p, each on the cluster it writes it to, and waits for the
// answers of the controllers running on both: the nonce, its signature,
// the Tenant's status, and the Identity's kubeconfig Secret, which then
// authenticates on p as c. Namespaces that exist already are kept.
func Handshake(ctx context.Context, p, c Cluster) error {
	return handshake(ctx, p, c, false)
}

// HandshakeOwnKey is Handshake as kubepact authenticate runs it between
// kubepact clusters: the signed-nonce request asks the consumer's
// controller for the Tenant too (tenantKey), with a key of the
// identity's own (contract.TenantOwnKeyKey), and that Tenant is the one
// applied on p.
func HandshakeOwnKey(ctx context.Context, p, c Cluster) error {
	return handshake(ctx, p, c, true)
}

func handshake(ctx context.Context, p, c Cluster, ownKey bool) error {
	pns, cns := clusterid.TenantNamespace(c.ID), clusterid.TenantNamespace(p.ID)
	for _, x := range []struct {
		on Cluster
		ns *corev1.Namespace
	}{{p, tenant.Namespace(c.ID)}, {c, tenant.Namespace(p.ID)}} {
		if _, err := x.on.Admin.CoreV1().Namespaces().Create(ctx, x.ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s on %s: %w", x.ns.Name, x.on.ID, err)
		}
	}
	if _, err := p.Admin.CoreV1().Secrets(pns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: nonce.SecretName, Labels: map[string]string{nonce.SecretLabel: "true", clusterid.Label: c.ID},
	}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("asking %s for a nonce: %w", p.ID, err)
	}
	var n nonce.Nonce
	if err := until(ctx, p.ID+"'s nonce for "+c.ID, func() (bool, error) {
		s, err := p.Admin.CoreV1().Secrets(pns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
		if err != nil || len(s.Data[nonce.SecretKey]) == 0 {
			return false, nil
		}
		n, err = nonce.Parse(string(s.Data[nonce.SecretKey]))
		return err == nil, err
	}); err != nil {
		return err
	}
	request := map[string][]byte{nonce.SecretKey: []byte(n.Text())}
	if ownKey {
		request[tenantOwnKeyKey] = []byte("true")
	}
	if _, err := c.Admin.CoreV1().Secrets(cns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: p.ID}},
		Data:       request,
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("asking %s to sign %s's nonce: %w", c.ID, p.ID, err)
	}
	var answered *corev1.Secret
	if err := until(ctx, c.ID+"'s signature of "+p.ID+"'s nonce", func() (bool, error) {
		s, err := c.Admin.CoreV1().Secrets(cns).Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
		answered = s
		return err == nil && len(s.Data[nonce.SignedSecretKey]) > 0 && (!ownKey || len(s.Data[tenantKey]) > 0), nil
	}); err != nil {
		return err
	}
	var tn *authv1beta1.Tenant
	if ownKey {
		var err error
		if tn, err = tenant.Decode(answered.Data[tenantKey]); err != nil {
			return fmt.Errorf("the Tenant %s's controller built: %w", c.ID, err)
		}
	} else {
		key, err := kube.NewKeyStore(c.Admin, keys.DefaultNamespace).Get(ctx)
		if err != nil {
			return fmt.Errorf("reading %s's cluster key: %w", c.ID, err)
		}
		if tn, err = tenant.Build(c.ID, key, n, nil); err != nil {
			return err
		}
		tn.Spec.Signature = answered.Data[nonce.SignedSecretKey]
	}
	tenants := kube.NewTenantStore(p.Typed)
	if _, err := tenants.Apply(ctx, tn); err != nil {
		return fmt.Errorf("applying %s's Tenant on %s: %w", c.ID, p.ID, err)
	}
	var accepted *authv1beta1.Tenant
	if err := until(ctx, "the status of "+c.ID+"'s Tenant on "+p.ID, func() (bool, error) {
		t, err := tenants.Get(ctx, pns, c.ID)
		accepted = t
		return err == nil && t.Status.AuthParams != nil, nil
	}); err != nil {
		return err
	}
	id, err := identity.Build(p.ID, *accepted.Status.AuthParams, &identity.BuildOptions{TenantNamespace: accepted.Status.TenantNamespace})
	if err != nil {
		return err
	}
	if _, err := kube.NewIdentityStore(c.Typed).Apply(ctx, id); err != nil {
		return fmt.Errorf("applying %s's Identity on %s: %w", p.ID, c.ID, err)
	}
	return until(ctx, c.ID+"'s kubeconfig Secret for "+p.ID, func() (bool, error) {
		_, err := c.Admin.CoreV1().Secrets(cns).Get(ctx, kubeconfig.SecretName(id.Name), metav1.GetOptions{})
		return err == nil, nil
	})
}

// until polls cond every 100ms until it holds, fails, or Wait passes; the
// error then names what was awaited.
func until(ctx context.Context, what string, cond func() (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, Wait, true, func(context.Context) (bool, error) { return cond() }); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Slice creates ResourceSlice name on consumer c for provider p, as Liqo's
// consumer does, and waits for the slice's kubeconfig Secret on c: c's
// controller replicated the slice, p's accepted it and issued its
// certificate.
func Slice(ctx context.Context, p, c Cluster, name string) error {
	ns := clusterid.TenantNamespace(p.ID)
	s := &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: resourceslice.ConsumerLabels(p.ID)},
	}
	if err := c.Typed.Create(ctx, s); err != nil {
		return fmt.Errorf("creating ResourceSlice %s on %s: %w", name, c.ID, err)
	}
	secret := kubeconfig.SecretName(identity.ResourceSliceName(name))
	return until(ctx, c.ID+"'s kubeconfig Secret of ResourceSlice "+name+" on "+p.ID, func() (bool, error) {
		_, err := c.Admin.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
		return err == nil, nil
	})
}

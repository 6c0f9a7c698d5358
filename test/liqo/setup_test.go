package liqo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/wire"
)

// liqoClusterID is the Liqo cluster's ID, as Helm would record it.
const liqoClusterID = "liqo-interop"

// liqoNamespace is where both clusters keep their key and cluster ID.
const liqoNamespace = "liqo"

// peerRoleNames are the app.kubernetes.io/name values of the ClusterRoles
// Liqo's chart installs for its consumers (files/liqo-<name>-ClusterRole.yaml).
var peerRoleNames = []string{"remote-controlplane", "virtual-kubelet-remote", "virtual-kubelet-remote-clusterwide"}

// liqoModuleDir returns where the Go module cache holds Liqo's module.
func liqoModuleDir(ctx context.Context) (string, error) {
	env, err := programEnv(testenv.Options{Go: true})
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/liqotech/liqo")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating Liqo's module: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// peerRoleRules returns the rules of Liqo's chart file for the peer role
// name.
func peerRoleRules(ctx context.Context, name string) ([]rbacv1.PolicyRule, error) {
	dir, err := liqoModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "deployments", "liqo", "files", "liqo-"+name+"-ClusterRole.yaml"))
	if err != nil {
		return nil, err
	}
	var role struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(b, &role); err != nil {
		return nil, fmt.Errorf("Liqo's %s rules: %w", name, err)
	}
	return role.Rules, nil
}

// helmLabels are the labels Liqo's chart puts on its object name of module
// name.
func helmLabels(name string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       name,
		"app.kubernetes.io/instance":   "liqo-" + name,
		"app.kubernetes.io/managed-by": "Helm",
	}
}

// startLiqo installs on s what Liqo's chart would, as far as its
// authentication module needs (its CRDs, peer roles and cluster ID), then
// runs liqo-controller-manager with the chart's args, networking and
// offloading off, and the CRD replicator.
func startLiqo(ctx context.Context, s *side) error {
	s.id = liqoClusterID
	dir, err := liqoModuleDir(ctx)
	if err != nil {
		return err
	}
	crds, err := filepath.Glob(filepath.Join(dir, "deployments", "liqo", "charts", "liqo-crds", "crds", "*.yaml"))
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return errors.New("Liqo's module has no CRDs in deployments/liqo/charts/liqo-crds/crds")
	}
	var names []string
	for _, file := range crds {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		if err := s.client.Patch(ctx, u, client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		names = append(names, u.GetName())
	}
	// Liqo's components map every kind once, when they start: each CRD
	// must be served by then.
	if err := waitEstablished(ctx, s, names); err != nil {
		return err
	}
	if _, err := s.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, name := range peerRoleNames {
		rules, err := peerRoleRules(ctx, name)
		if err != nil {
			return err
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "liqo-" + name, Labels: helmLabels(name)}, Rules: rules}
		if _, err := s.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := s.admin.CoreV1().ConfigMaps(liqoNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Labels: helmLabels("clusterid-configmap")},
		Data:       map[string]string{"CLUSTER_ID": liqoClusterID},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitServed(ctx, s); err != nil {
		return err
	}
	// kubepact's signed-nonce and key policies, next to Liqo: they admit
	// Liqo's controller manager, which signs nonces, creates tenant
	// namespaces and makes the cluster key authentication-keys.
	if err := applyPolicy(ctx, s, "signed-nonce-policy", "liqo-signed-nonce"); err != nil {
		return err
	}
	if err := applyPolicy(ctx, s, "key-policy", "kubepact-key-probe"); err != nil {
		return err
	}

	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	probe, err := freeAddr()
	if err != nil {
		return err
	}
	webhook, err := freeAddr()
	if err != nil {
		return err
	}
	s.metricsURL = "http://" + metrics + "/metrics"
	// Liqo's components authenticate as themselves, so that the API
	// server's audit log tells their requests apart; the controller
	// manager as the ServiceAccount Liqo's chart runs it as, which the
	// signed-nonce policy admits.
	s.auditUser = liqoManagerUser
	managerKubeconfig, err := userKubeconfig(ctx, s, s.auditUser, "system:serviceaccounts", "system:serviceaccounts:"+liqoNamespace)
	if err != nil {
		return err
	}
	replicatorKubeconfig, err := userKubeconfig(ctx, s, "liqo-crd-replicator")
	if err != nil {
		return err
	}
	s.controller = &controllerRun{name: "liqo-controller-manager", bin: bins.controllerManager, probe: probe,
		env: []string{"KUBECONFIG=" + managerKubeconfig}, args: []string{
			"--cluster-id=" + liqoClusterID,
			"--liqo-namespace=" + liqoNamespace,
			"--networking-enabled=false",
			"--authentication-enabled=true",
			"--tls-compatibility-mode=false",
			"--offloading-enabled=false",
			"--default-limits-enforcement=none",
			"--api-server-address-override=" + s.cluster.Host(),
			"--enable-storage=false",
			"--webhook-port=" + port(webhook),
			"--metrics-address=" + metrics,
			"--health-probe-address=" + probe,
		}}
	if err := s.controller.start(s); err != nil {
		return err
	}
	replicatorMetrics, err := freeAddr()
	if err != nil {
		return err
	}
	if _, err := s.start("crd-replicator", bins.crdReplicator, []string{"KUBECONFIG=" + replicatorKubeconfig},
		"--cluster-id="+liqoClusterID, "--metrics-address="+replicatorMetrics); err != nil {
		return err
	}
	return s.controller.proc.waitReady(ctx, probe)
}

// startKubepact applies config/ to s as kubectl apply -k does, publishes
// kube-public/cluster-info as kubeadm does, and runs kubepact-controller
// with the args of the shipped Deployment, listen ports aside, as its
// ServiceAccount, and extra args after them. The controller finds its own
// cluster ID (or takes extra's --cluster-id), records it where liqoctl
// reads it, and s.id is read from there.
func startKubepact(ctx context.Context, s *side, extra ...string) error {
	objects, err := kustomize.Render(ctx, filepath.Join("..", "..", "config"))
	if err != nil {
		return err
	}
	var args []string
	for _, u := range objects {
		if u.GetKind() == "Deployment" && u.GetName() == "kubepact-controller" {
			if args, err = containerArgs(u, "controller"); err != nil {
				return err
			}
		}
		if err := s.client.Patch(ctx, u, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	if args == nil {
		return errors.New("config/ has no kubepact-controller Deployment")
	}
	if err := waitServed(ctx, s); err != nil {
		return err
	}

	info := clientcmdapi.NewConfig()
	info.Clusters[""] = &clientcmdapi.Cluster{Server: s.cluster.Host(), CertificateAuthorityData: s.cluster.CA()}
	b, err := clientcmd.Write(*info)
	if err != nil {
		return err
	}
	if _, err := s.admin.CoreV1().ConfigMaps(wire.ClusterInfoNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: wire.ClusterInfoName, Namespace: wire.ClusterInfoNamespace},
		Data:       map[string]string{wire.ClusterInfoKey: string(b)},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}

	// The controller's ServiceAccount, impersonated, in its namespace.
	cfg, err := clientcmd.Load(s.cluster.AdminKubeconfig())
	if err != nil {
		return err
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:kubepact-system:kubepact-controller"
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kubepact-system", "system:authenticated"}
	}
	for _, c := range cfg.Contexts {
		c.Namespace = "kubepact-system"
	}
	saKubeconfig := filepath.Join(filepath.Dir(s.kubeconfig), "kubepact-controller.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, saKubeconfig); err != nil {
		return err
	}

	var probe string
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			addr, err := freeAddr()
			if err != nil {
				return err
			}
			args[i] = "--metrics-bind-address=" + addr
			s.metricsURL = "https://" + addr + "/metrics"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			if probe, err = freeAddr(); err != nil {
				return err
			}
			args[i] = "--health-probe-bind-address=" + probe
		}
	}
	if probe == "" {
		return errors.New("the shipped args set no --health-probe-bind-address")
	}
	args = append(args, extra...)
	s.auditUser = "system:serviceaccount:kubepact-system:kubepact-controller"
	s.controller = &controllerRun{name: "kubepact-controller", bin: bins.kubepactController, probe: probe,
		env: []string{"KUBECONFIG=" + saKubeconfig}, args: args}
	if err := s.controller.start(s); err != nil {
		return err
	}
	if err := s.controller.proc.waitReady(ctx, probe); err != nil {
		return err
	}
	if s.metricsToken, err = metricsToken(ctx, s); err != nil {
		return err
	}
	cms, err := s.admin.CoreV1().ConfigMaps(liqoNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: clusterid.RecordLabel + "=" + clusterid.RecordLabelValue})
	if err != nil {
		return err
	}
	if len(cms.Items) != 1 {
		return fmt.Errorf("kubepact-controller recorded %d cluster IDs, want 1", len(cms.Items))
	}
	s.id = cms.Items[0].Data[clusterid.RecordKey]
	return clusterid.Validate(s.id)
}

// userKubeconfig writes a kubeconfig of s for user in groups, bound to
// cluster-admin, and returns its path. RBAC authorizes user's requests, as
// it does those of a ServiceAccount a Helm chart binds, and as it does
// kubepact-controller's: a member of system:masters would skip
// authorization.
func userKubeconfig(ctx context.Context, s *side, user string, groups ...string) (string, error) {
	b, err := s.cluster.UserKubeconfig(user, groups...)
	if err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := s.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("binding %s to cluster-admin: %w", user, err)
	}
	path := filepath.Join(filepath.Dir(s.kubeconfig), s.name+"-"+strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	return path, os.WriteFile(path, b, 0o600)
}

// liqoManagerUser is the user of Liqo's controller manager: the
// ServiceAccount liqo-controller-manager that Liqo's chart creates in the
// Liqo namespace and runs it as.
const liqoManagerUser = "system:serviceaccount:" + liqoNamespace + ":liqo-controller-manager"

// applyPolicy applies the admission policy of config/<dir> to s as kubectl
// apply -k does, and waits until the API server enforces it: a user bound to
// cluster-admin, but neither a peering admin nor an admitted controller, is
// refused a Secret probe in the Liqo namespace.
func applyPolicy(ctx context.Context, s *side, dir, probeName string) error {
	objects, err := kustomize.Render(ctx, filepath.Join("..", "..", "config", dir))
	if err != nil {
		return err
	}
	for _, u := range objects {
		if err := s.client.Patch(ctx, u, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	probe, err := userKubeconfig(ctx, s, dir+"-probe")
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", probe)
	if err != nil {
		return err
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: liqoNamespace}}
	return eventually(ctx, time.Minute, func(ctx context.Context) error {
		_, err := as.CoreV1().Secrets(liqoNamespace).Create(ctx, secret, metav1.CreateOptions{})
		switch {
		case apierrors.IsForbidden(err):
			return nil
		case err == nil:
			_ = s.admin.CoreV1().Secrets(liqoNamespace).Delete(ctx, secret.Name, metav1.DeleteOptions{})
			return fmt.Errorf("the policy of config/%s is not enforced yet", dir)
		}
		return err
	})
}

// containerArgs returns the args of the container name of Deployment u.
func containerArgs(u *unstructured.Unstructured, name string) ([]string, error) {
	containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		c, ok := c.(map[string]any)
		if !ok || c["name"] != name {
			continue
		}
		args, _, err := unstructured.NestedStringSlice(c, "args")
		return args, err
	}
	return nil, fmt.Errorf("Deployment %s has no container %s", u.GetName(), name)
}

// waitEstablished waits until every CRD of names is Established.
func waitEstablished(ctx context.Context, s *side, names []string) error {
	return eventually(ctx, time.Minute, func(ctx context.Context) error {
		for _, name := range names {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := s.client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return err
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return fmt.Errorf("CRD %s not established", name)
			}
		}
		return nil
	})
}

// waitServed waits until s serves the authentication.liqo.io resources.
func waitServed(ctx context.Context, s *side) error {
	return eventually(ctx, time.Minute, func(ctx context.Context) error {
		return s.client.List(ctx, &liqoauthv1beta1.TenantList{}, client.Limit(1))
	})
}

// controllerRun is how a side's provider controller runs, so that it can be
// restarted as it first ran: the same program, environment and args.
type controllerRun struct {
	name, bin string
	env, args []string
	// probe is the address of its health probes (/readyz).
	probe string
	// proc is the running process, the last one started.
	proc *proc
	// runs counts the processes started, so that each writes its own log.
	runs int
}

// start starts the controller on s, and returns without waiting for it to
// be ready. A restarted controller's output goes to <name>-<run>.log.
func (c *controllerRun) start(s *side) error {
	name := c.name
	if c.runs > 0 {
		name = fmt.Sprintf("%s-%d", c.name, c.runs+1)
	}
	p, err := s.start(name, c.bin, c.env, c.args...)
	if err != nil {
		return err
	}
	c.proc, c.runs = p, c.runs+1
	return nil
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

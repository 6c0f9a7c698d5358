package peeringwriters_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/internal/testcluster"
)

// root is the repository root, relative to this package.
var root = filepath.Join("..", "..")

const (
	// controllerUser is kubepact-controller's ServiceAccount, as config/
	// installs it.
	controllerUser = "system:serviceaccount:kubepact-system:kubepact-controller"
	// enrolmentUser is the enrolment endpoint's, as config/enrolment
	// installs it.
	enrolmentUser = "system:serviceaccount:kubepact-system:kubepact-enrolment"
	namespace     = "kubepact-system"
)

// env is the package's one cluster, with config/ and config/enrolment
// applied as they ship.
type env struct {
	cluster *testcluster.Cluster
	admin   kubernetes.Interface
	// objects is an administrator's (system:masters) client of the peering
	// kinds.
	objects client.Client
}

var (
	once     sync.Once
	shared   *env
	startErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		_ = shared.cluster.Stop()
	}
	os.Exit(code)
}

// cluster returns the package's cluster, started on the first call.
func cluster(t *testing.T) *env {
	t.Helper()
	once.Do(func() { shared, startErr = start() })
	require.NoError(t, startErr, "starting the package's cluster")
	return shared
}

func start() (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := testcluster.EnsureBinaries(ctx)
	if err != nil {
		return nil, err
	}
	c, err := testcluster.Start(ctx, testcluster.Options{BinDir: bin, Name: "peering-writers"})
	if err != nil {
		return nil, err
	}
	e := &env{cluster: c}
	if err := e.init(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return e, nil
}

func (e *env) init(ctx context.Context) error {
	cfg := e.cluster.AdminConfig()
	var err error
	if e.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.objects, err = newClient(cfg); err != nil {
		return err
	}
	for _, dir := range []string{"config", "config/enrolment"} {
		if err := apply(ctx, cfg, filepath.Join(root, dir)); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	// The CRDs served.
	for {
		err := e.objects.List(ctx, &peeringv1alpha1.AuthorizedConsumerList{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the peering CRDs: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// apply applies the kustomization in dir as kubectl apply -k does:
// kustomize renders it and every object is server-side applied.
func apply(ctx context.Context, cfg *rest.Config, dir string) error {
	objects, err := kustomize.Render(ctx, dir)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(admin.Discovery()))
	for _, u := range objects {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset()
			if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		} else {
			u.SetNamespace("")
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
		if gvk.Kind == "CustomResourceDefinition" {
			mapper.Reset()
		}
	}
	return nil
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := peeringv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// as returns a client of e's cluster acting as user in groups (and
// system:authenticated), with exactly their permissions.
func (e *env) as(t *testing.T, user string, groups ...string) (client.Client, kubernetes.Interface) {
	t.Helper()
	cfg := rest.CopyConfig(e.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := newClient(cfg)
	require.NoError(t, err)
	k, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c, k
}

// serviceAccount is the user name and groups of the ServiceAccount ns/name.
func serviceAccount(ns, name string) (string, []string) {
	return "system:serviceaccount:" + ns + ":" + name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
}

// bindCluster binds the ClusterRole role to subjects until the test ends.
func (e *env) bindCluster(ctx context.Context, t *testing.T, name, role string, subjects ...rbacv1.Subject) {
	t.Helper()
	_, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// clusterRole creates the ClusterRole name with rules until the test ends.
func (e *env) clusterRole(ctx context.Context, t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	_, err := e.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// role creates a Role name in ns with rules, bound to subjects, until the
// test ends.
func (e *env) role(ctx context.Context, t *testing.T, ns, name string, rules []rbacv1.PolicyRule, subjects ...rbacv1.Subject) {
	t.Helper()
	_, err := e.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.admin.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.admin.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
}

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

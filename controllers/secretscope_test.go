package controllers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
)

// scopeReader is the ServiceAccount TestSecretScope's cache runs as: it may
// follow namespaces and bindings, bind kubepact-controller-secrets and
// write Secrets, and read none.
const (
	scopeNamespace = "scope-test"
	scopeReader    = "scope-reader"
)

// TestSecretScope runs a manager whose cache is a SecretScope's, as a
// ServiceAccount that may read no Secret by itself. Secrets are read in a
// tenant namespace present at the start, in one that appears later (its
// Secrets' events reach a handler added before) and in the namespace the
// scope names, each after the cache bound kubepact-controller-secrets
// there to that ServiceAccount alone, and again when it is taken back.
// Outside the scope, a read or a list
// across namespaces fails with ErrSecretOutOfScope and binds nothing; a
// namespace deleted leaves its Secrets not found.
func TestSecretScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := providerEnv
	sa := scopeServiceAccount(ctx, t, e)
	before, after, keys, outside := "liqo-tenant-scope-before", "liqo-tenant-scope-after", "scope-keys", "scope-outside"
	for _, ns := range []string{before, keys, outside} {
		createNamespace(ctx, t, e, ns)
		createLabelledSecret(ctx, t, e, ns, "held")
	}
	_, err := kubernetes.NewForConfigOrDie(sa).CoreV1().Secrets(before).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "the ServiceAccount reads no Secret by itself: %v", err)

	scope, err := controllers.NewSecretScope(ctx, kubernetes.NewForConfigOrDie(sa), keys)
	require.NoError(t, err)
	require.Equal(t, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: scopeNamespace, Name: scopeReader}, scope.Subject)
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	mgr, err := manager.New(sa, manager.Options{
		Scheme: scheme, Logger: logger, Cache: controllers.CacheOptions(), NewCache: scope.NewCache,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	require.NoError(t, err)
	seen := &seenSecrets{}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen.add, DeleteFunc: seen.remove})
	require.NoError(t, err)
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { stop(); <-done })
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))

	read := mgr.GetClient()
	for _, ns := range []string{before, keys} {
		var s corev1.Secret
		require.NoError(t, read.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &s), ns)
		requireOwnBinding(ctx, t, e, ns)
	}
	require.Eventually(t, func() bool { return seen.has(before + "/held") }, 10*time.Second, 50*time.Millisecond, "the handler had the Secrets present at the start")

	var s corev1.Secret
	err = read.Get(ctx, client.ObjectKey{Namespace: outside, Name: "held"}, &s)
	require.ErrorIs(t, err, controllers.ErrSecretOutOfScope)
	var all corev1.SecretList
	require.ErrorIs(t, read.List(ctx, &all), controllers.ErrSecretOutOfScope, "a list across namespaces")
	_, err = e.core.RbacV1().RoleBindings(outside).Get(ctx, controllers.SecretReaderRole, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no binding outside the scope: %v", err)

	createNamespace(ctx, t, e, after)
	createLabelledSecret(ctx, t, e, after, "later")
	require.Eventually(t, func() bool { return seen.has(after + "/later") }, 30*time.Second, 100*time.Millisecond, "the handler hears of a namespace that came after the start")
	require.NoError(t, read.Get(ctx, client.ObjectKey{Namespace: after, Name: "later"}, &s))
	requireOwnBinding(ctx, t, e, after)
	var listed corev1.SecretList
	require.NoError(t, read.List(ctx, &listed, client.InNamespace(after)))
	require.Len(t, listed.Items, 1)

	// A Secret deleted is gone from the cache, and its handler is told.
	require.NoError(t, e.core.CoreV1().Secrets(after).Delete(ctx, "later", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return !seen.has(after + "/later") }, 10*time.Second, 50*time.Millisecond, "the handler hears of the delete")
	err = read.Get(ctx, client.ObjectKey{Namespace: after, Name: "later"}, &s)
	require.True(t, apierrors.IsNotFound(err), "a Secret deleted: %v", err)
	createLabelledSecret(ctx, t, e, after, "later")
	require.Eventually(t, func() bool { return seen.has(after + "/later") }, 10*time.Second, 50*time.Millisecond)

	// A binding taken back is made again.
	require.NoError(t, e.core.RbacV1().RoleBindings(before).Delete(ctx, controllers.SecretReaderRole, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := e.core.RbacV1().RoleBindings(before).Get(ctx, controllers.SecretReaderRole, metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the binding in %s made again", before)
	requireOwnBinding(ctx, t, e, before)

	require.NoError(t, e.core.CoreV1().Namespaces().Delete(ctx, after, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := e.core.CoreV1().Namespaces().Get(ctx, after, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 90*time.Second, 250*time.Millisecond, "namespace %s deleted", after)
	err = read.Get(ctx, client.ObjectKey{Namespace: after, Name: "later"}, &s)
	require.True(t, apierrors.IsNotFound(err), "a Secret of a namespace gone: %v", err)
}

// scopeServiceAccount makes scopeReader with what a SecretScope's cache
// needs, and no read of Secrets, and returns a config that impersonates it.
func scopeServiceAccount(ctx context.Context, t *testing.T, e *env) *rest.Config {
	t.Helper()
	createNamespace(ctx, t, e, scopeNamespace)
	_, err := e.core.CoreV1().ServiceAccounts(scopeNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: scopeReader}}, metav1.CreateOptions{})
	require.NoError(t, err)
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: controllers.SecretReaderRole},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: scopeReader}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings", "clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{controllers.SecretReaderRole}, Verbs: []string{"bind"}},
		}},
	}
	for _, r := range roles {
		if _, err := e.core.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	_, err = e.core.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: scopeReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: scopeReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scopeNamespace, Name: scopeReader}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.core.RbacV1().ClusterRoleBindings().Delete(ctx, scopeReader, metav1.DeleteOptions{})
		_ = e.core.RbacV1().ClusterRoles().Delete(ctx, scopeReader, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(e.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + scopeNamespace + ":" + scopeReader,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + scopeNamespace, "system:authenticated"},
	}
	return cfg
}

// createNamespace creates namespace ns on e, deleted when the test ends.
func createNamespace(ctx context.Context, t *testing.T, e *env, ns string) {
	t.Helper()
	_, err := e.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
}

// createLabelledSecret creates a Secret the manager's cache selects
// (controllers.CacheOptions: labelled clusterid.Label).
func createLabelledSecret(ctx context.Context, t *testing.T, e *env, ns, name string) {
	t.Helper()
	_, err := e.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{clusterid.Label: "cl-scope"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// requireOwnBinding requires that ns holds kubepact-controller-secrets
// bound to scopeReader alone.
func requireOwnBinding(ctx context.Context, t *testing.T, e *env, ns string) {
	t.Helper()
	b, err := e.core.RbacV1().RoleBindings(ns).Get(ctx, controllers.SecretReaderRole, metav1.GetOptions{})
	require.NoError(t, err, ns)
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: controllers.SecretReaderRole}, b.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scopeNamespace, Name: scopeReader}}, b.Subjects)
}

// seenSecrets records the Secrets a handler was told of.
type seenSecrets struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *seenSecrets) add(o any) {
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]bool{}
	}
	s.names[m.GetNamespace()+"/"+m.GetName()] = true
}

func (s *seenSecrets) remove(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.names, m.GetNamespace()+"/"+m.GetName())
}

func (s *seenSecrets) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[key]
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	kustomizepkg "github.com/kubepact/kubepact/internal/kustomize"
	"github.com/kubepact/kubepact/saidentity"
)

// kustomize renders the kustomization in dir as kubectl apply -k does.
func kustomize(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	return kustomizepkg.Render(ctx, dir)
}

// applyConfig applies config/<name> to env as kubectl apply -k does: every
// object kustomize renders, with server-side apply.
func applyConfig(t *testing.T, ctx context.Context, env *testEnv, name string) {
	t.Helper()
	objects, err := kustomize(ctx, filepath.Join("..", "..", "config", name))
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.client.Discovery()))
	for _, u := range objects {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
		var ri dynamic.ResourceInterface = env.dynamic.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = env.dynamic.Resource(m.Resource).Namespace(u.GetNamespace())
		} else {
			u.SetNamespace("") // kustomize may not know a kind is cluster-scoped
		}
		_, err = ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
		require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
	}
}

// serviceAccountUser is the user and groups the API server gives the
// ServiceAccount namespace/name.
func serviceAccountUser(namespace, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// impersonating returns a client of env that acts as who, with exactly
// who's permissions.
func impersonating(t *testing.T, env *testEnv, who rest.ImpersonationConfig) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.cluster.AdminConfig())
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Impersonate = who
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// impersonatingKubeconfig writes a kubeconfig of env that acts as who, for
// the CLI, and returns its path.
func impersonatingKubeconfig(t *testing.T, env *testEnv, who rest.ImpersonationConfig) string {
	t.Helper()
	cfg, err := clientcmd.Load(env.cluster.AdminKubeconfig())
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = who.UserName, who.Groups
	}
	path := filepath.Join(t.TempDir(), "impersonating.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// awaitPolicy waits until write, which RBAC allows and the admission policy
// refuses, is refused: the API server loads a policy a moment after it is
// written.
func awaitPolicy(t *testing.T, write func() error) {
	t.Helper()
	var last error
	require.Eventually(t, func() bool {
		last = write()
		return apierrors.IsForbidden(last)
	}, time.Minute, 200*time.Millisecond, "the admission policy is not in force: last answer %v", last)
}

// TestFlowManifestsFollowServiceAccount renders config/token-server and
// config/serviceaccount-identity with another namespace: the admission
// policy's match condition and the binding's subject name the
// ServiceAccount where it then lives.
func TestFlowManifestsFollowServiceAccount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dir, serviceAccount string }{
		{"token-server", "kubepact-token-server"},
		{"serviceaccount-identity", "kubepact-serviceaccount-issuer"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "config", c.dir))))
			path := filepath.Join(dir, "kustomization.yaml")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b = regexp.MustCompile(`(?m)^namespace: .*$`).ReplaceAll(b, []byte("namespace: team-a"))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			objects, err := kustomize(t.Context(), dir)
			require.NoError(t, err)
			var policies, subjects int
			for _, u := range objects {
				switch {
				case u.GetKind() == "ValidatingAdmissionPolicy" && u.GetName() == c.serviceAccount:
					conds, _, err := unstructured.NestedSlice(u.Object, "spec", "matchConditions")
					require.NoError(t, err)
					require.Len(t, conds, 1)
					require.Equal(t, "request.userInfo.username == 'system:serviceaccount:' + 'team-a' + ':' + '"+c.serviceAccount+"'",
						conds[0].(map[string]any)["expression"])
					policies++
				case u.GetKind() == "ClusterRoleBinding":
					ss, _, err := unstructured.NestedSlice(u.Object, "subjects")
					require.NoError(t, err)
					require.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": c.serviceAccount, "namespace": "team-a"}}, ss)
					subjects++
				}
			}
			require.Equal(t, 1, policies)
			require.Equal(t, 1, subjects)
		})
	}
}

// TestTokenLifetimePolicyManifest: the token lifetime policy that
// config/serviceaccount-identity installs is saidentity.TokenPolicy.
func TestTokenLifetimePolicyManifest(t *testing.T) {
	t.Parallel()
	objects, err := kustomize(t.Context(), filepath.Join("..", "..", "config", "serviceaccount-identity"))
	require.NoError(t, err)
	wantPolicy, wantBinding := saidentity.TokenPolicy()
	var found int
	for _, u := range objects {
		if u.GetName() != saidentity.TokenPolicyName {
			continue
		}
		switch u.GetKind() {
		case "ValidatingAdmissionPolicy":
			var got admissionregistrationv1.ValidatingAdmissionPolicy
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got))
			require.Empty(t, cmp.Diff(wantPolicy.Spec, got.Spec))
		case "ValidatingAdmissionPolicyBinding":
			var got admissionregistrationv1.ValidatingAdmissionPolicyBinding
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got))
			require.Empty(t, cmp.Diff(wantBinding.Spec, got.Spec))
		}
		found++
	}
	require.Equal(t, 2, found)
}

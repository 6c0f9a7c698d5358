package testcluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRestartAPIServer restarts a cluster's API server under a client that stays open: while it is
// stopped the client's requests fail, and once it is back the same client, with the configuration
// it held, reads what was written before, at the same URL; the controller-manager still signs
// certificates. Stopping a stopped API server, and starting a running one, are refused.
func TestRestartAPIServer(t *testing.T) {
	c := StartT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-restart"}, Data: map[string]string{"k": "v"}}
	if _, err := admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	host := c.Host()

	stopping := time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server stopped in %s", time.Since(stopping).Round(time.Millisecond))
	if err := c.StopAPIServer(); !errors.Is(err, ErrAPIServerStopped) {
		t.Fatalf("stopping a stopped API server: got %v, want %v", err, ErrAPIServerStopped)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	_, err = admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(short, cm.Name, metav1.GetOptions{})
	cancelShort()
	if err == nil {
		t.Fatal("a request succeeded while the API server was stopped")
	}
	begin := time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready again in %s", time.Since(begin).Round(time.Millisecond))
	if err := c.StartAPIServer(ctx); !errors.Is(err, ErrAPIServerRunning) {
		t.Fatalf("starting a running API server: got %v, want %v", err, ErrAPIServerRunning)
	}
	if c.Host() != host {
		t.Fatalf("the API server moved from %s to %s", host, c.Host())
	}
	got, err := admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the client held before the restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("the ConfigMap written before the restart has data %v", got.Data)
	}

	took, err := c.RestartAPIServer(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restarted in %s", took.Round(time.Millisecond))
	// The controller-manager, which never stopped, still signs through the restarted server.
	issueThroughCSR(ctx, t, admin, "after-restart")
	// Its start order is kept, so Stop stops it before etcd.
	names := []string{}
	for _, p := range c.running() {
		names = append(names, p.name)
	}
	if want := []string{"etcd", "kube-apiserver", "kube-controller-manager"}; !slices.Equal(names, want) {
		t.Fatalf("components %v, want %v", names, want)
	}
}

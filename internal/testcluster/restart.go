package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

const (
	// apiServer is the component name of the API server.
	apiServer = "kube-apiserver"
	// apiServerStopGrace is how long StopAPIServer waits after SIGTERM before it kills the API
	// server. It stops listening at once, but then drains the watches of its clients for longer
	// than Stop's grace; a restart need not wait for that, as clients are cut off either way.
	apiServerStopGrace = 3 * time.Second
)

var (
	// ErrAPIServerStopped is wrapped by StopAPIServer's error when the API server is already
	// stopped.
	ErrAPIServerStopped = errors.New("the API server is stopped")
	// ErrAPIServerRunning is wrapped by StartAPIServer's error when the API server is already
	// running: a cluster has one.
	ErrAPIServerRunning = errors.New("the API server is running")
)

// StopAPIServer stops the cluster's kube-apiserver as a restart does: SIGTERM, on which it stops
// listening, and SIGKILL if it has not exited 3 seconds later. etcd and the
// controller-manager keep running; clients see their connections refused until StartAPIServer. It
// returns an error wrapping ErrAPIServerStopped when the API server is already stopped, and the
// end of its log when it had exited on its own.
func (c *Cluster) StopAPIServer() error {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	c.mu.Lock()
	i := c.componentIndex(apiServer)
	if i < 0 {
		c.mu.Unlock()
		return fmt.Errorf("test cluster %s: stopping %s: %w", c.name, apiServer, ErrAPIServerStopped)
	}
	p := c.components[i]
	c.components = append(c.components[:i:i], c.components[i+1:]...)
	c.mu.Unlock()
	if err := p.stop(apiServerStopGrace); err != nil {
		return fmt.Errorf("test cluster %s: %w", c.name, err)
	}
	return nil
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, with the same arguments: the
// same etcd, so every object is still there, the same port and the same certificates, so that
// clients reconnect to Host with the configurations they hold. It appends to the same log files,
// the audit log included. It returns once the API server is ready (/readyz), or with an error
// when ctx ends first or the API server exits; it refuses to start a second API server.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	c.mu.Lock()
	running := c.componentIndex(apiServer) >= 0
	c.mu.Unlock()
	if running {
		return fmt.Errorf("test cluster %s: starting %s: %w", c.name, apiServer, ErrAPIServerRunning)
	}
	adminHTTP, err := rest.HTTPClientFor(c.AdminConfig())
	if err != nil {
		return err
	}
	defer adminHTTP.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.start(apiServer, c.apiserverArgs(c.apiPort)); err != nil {
		return fmt.Errorf("test cluster %s: %w", c.name, err)
	}
	c.keepStartOrder()
	if err := c.waitAPIServer(ctx, adminHTTP); err != nil {
		return fmt.Errorf("test cluster %s: %w\n(component logs in %s)", c.name, err, c.dir)
	}
	return nil
}

// RestartAPIServer stops the cluster's kube-apiserver (StopAPIServer), waits for down, and starts
// it again (StartAPIServer). It returns how long the API server was unreachable: from the stop
// to ready again.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) (time.Duration, error) {
	begin := time.Now()
	if err := c.StopAPIServer(); err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return time.Since(begin), ctx.Err()
	case <-time.After(down):
	}
	err := c.StartAPIServer(ctx)
	return time.Since(begin), err
}

// keepStartOrder moves the API server, started last, back before the controller-manager, so that
// Stop stops the components in the reverse of the order they depend on each other.
func (c *Cluster) keepStartOrder() {
	c.mu.Lock()
	defer c.mu.Unlock()
	kcm, api := c.componentIndex("kube-controller-manager"), c.componentIndex(apiServer)
	if kcm < 0 || api < kcm {
		return
	}
	p := c.components[api]
	copy(c.components[kcm+1:api+1], c.components[kcm:api])
	c.components[kcm] = p
}

// componentIndex returns the index in c.components of the named component, -1 when it does not
// run. c.mu must be held.
func (c *Cluster) componentIndex(name string) int {
	for i, p := range c.components {
		if p.name == name {
			return i
		}
	}
	return -1
}

// waitAPIServer waits for the API server to answer /readyz.
func (c *Cluster) waitAPIServer(ctx context.Context, adminHTTP *http.Client) error {
	return c.waitFor(ctx, "API server /readyz", func(ctx context.Context) error {
		return checkHealth(ctx, adminHTTP, c.host+"/readyz")
	})
}

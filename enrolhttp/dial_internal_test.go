package enrolhttp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDialControl: what a name resolves to is checked when it is dialled,
// before any packet leaves: CheckURL alone cannot see it.
func TestDialControl(t *testing.T) {
	t.Parallel()
	d := &net.Dialer{Timeout: time.Second, Control: dialControl}
	for _, addr := range []string{"169.254.169.254:80", "[fe80::1]:443", "0.0.0.0:443", "[::]:443", "100.100.100.200:80", "[fd00:ec2::254]:80"} {
		_, err := d.DialContext(context.Background(), "tcp", addr)
		assert.ErrorIs(t, err, ErrForbiddenURL, addr)
	}
	for _, addr := range []string{"224.0.0.1:5353", "[ff02::fb]:5353"} {
		_, err := d.DialContext(context.Background(), "udp", addr)
		assert.ErrorIs(t, err, ErrForbiddenURL, addr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	c, err := d.DialContext(context.Background(), "tcp", l.Addr().String())
	require.NoError(t, err, "loopback is allowed")
	_ = c.Close()
	// A name: localhost resolves, and each address it resolves to is
	// checked (here, allowed).
	_, port, _ := net.SplitHostPort(l.Addr().String())
	c, err = d.DialContext(context.Background(), "tcp4", net.JoinHostPort("localhost", port))
	require.NoError(t, err)
	_ = c.Close()
}

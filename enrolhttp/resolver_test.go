package enrolhttp_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/enrolhttp"
)

// dnsServer answers every A query with addr and every other query with no
// answer, over UDP on loopback, and counts the A queries.
func dnsServer(t *testing.T, addr netip.Addr) (*net.Resolver, *atomic.Int32) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	queries := new(atomic.Int32)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], addr, queries); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}, queries
}

// dnsAnswer is the response to the DNS query q: addr for an A question,
// nothing for any other.
func dnsAnswer(q []byte, addr netip.Addr, queries *atomic.Int32) []byte {
	if len(q) < 12 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 { // the question's name, label by label
		end += int(q[end]) + 1
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	question := q[12:end]
	qtype := binary.BigEndian.Uint16(q[end-4 : end-2])
	resp := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q[0:2])) // ID
	resp = binary.BigEndian.AppendUint16(resp, 0x8180)                          // a response, recursion available, NOERROR
	answers := uint16(0)
	if qtype == 1 {
		answers = 1
		queries.Add(1)
	}
	for _, n := range []uint16{1, answers, 0, 0} {
		resp = binary.BigEndian.AppendUint16(resp, n)
	}
	resp = append(resp, question...)
	if answers == 1 {
		ip := addr.As4()
		resp = append(resp, 0xc0, 12)                      // the question's name
		resp = append(resp, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4) // A, IN, TTL 60, 4 bytes
		resp = append(resp, ip[:]...)
	}
	return resp
}

// TestClientChecksResolvedAddress: a name that resolves to a metadata
// service's address passes CheckURL, and is refused when it is dialled.
func TestClientChecksResolvedAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	resolver, queries := dnsServer(t, netip.MustParseAddr("169.254.169.254"))
	const url = "https://enrolment.attacker.test:8443"
	_, err := enrolhttp.CheckURL(url)
	require.NoError(t, err, "the name alone is allowed")
	c := client(f)
	c.Resolver = resolver
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = c.Fetch(ctx, url, f.request)
	assert.ErrorIs(t, err, enrolhttp.ErrForbiddenURL)
	assert.Positive(t, queries.Load(), "the name was resolved, then its address refused")

	// The same resolver, answering with the endpoint's loopback address:
	// the name is dialled.
	grants, _ := f.grants()
	endpointURL := endpoint(t, f.enrolment, enrolhttp.NewHandler(grants, unlimited))
	_, port, err := net.SplitHostPort(endpointURL[len("https://"):])
	require.NoError(t, err)
	c.Resolver, _ = dnsServer(t, netip.MustParseAddr("127.0.0.1"))
	g, err := c.Fetch(t.Context(), "https://enrolment.provider.test:"+port, f.request)
	require.NoError(t, err)
	assert.Equal(t, f.grant, g)
}

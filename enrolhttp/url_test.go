package enrolhttp_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/enrolhttp"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://127.0.0.1:8443", true},
		{"https://example.com", true},
		{"https://enrolment.example.com:8443/prefix", true},
		{"https://[2001:db8::1]:8443", true},
		{"https://[::1]:8443", true},

		{"http://example.com", false},
		{"HTTP://example.com", false},
		{"ftp://example.com", false},
		{"example.com", false},
		{"https://", false},
		{"https:///path", false},
		{"https://user@example.com", false},
		{"https://user:password@example.com", false},
		{"https://example.com/?csr=x", false},
		{"https://example.com/#fragment", false},
		{"https://example.com/%zz", false},
		{"https://169.254.169.254", false},
		{"https://169.254.169.254:443/latest/meta-data", false},
		{"https://169.254.169.254./", false},
		{"https://[::ffff:169.254.169.254]", false},
		{"https://[fe80::1]", false},
		{"https://[fe80::1%25eth0]:8443", false},
		{"https://0.0.0.0", false},
		{"https://[::]:8443", false},
		{"https://224.0.0.1", false},
		{"https://239.255.255.250", false},
		{"https://[ff02::1]", false},
		{"https://metadata.google.internal", false},
		{"https://METADATA.GOOGLE.INTERNAL.", false},
		{"https://metadata", false},
		{"https://metadata.azure.com", false},
		{"https://instance-data.ec2.internal", false},
		{"https://100.100.100.200", false},
		{"https://192.0.0.192", false},
		{"https://[fd00:ec2::254]", false},
		{"https://[64:ff9b::169.254.169.254]", false},
		{"https://[64:ff9b::a9fe:a9fe]:443", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			u, err := enrolhttp.CheckURL(tc.url)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "https", u.Scheme)
				return
			}
			assert.ErrorIs(t, err, enrolhttp.ErrForbiddenURL)
			assert.Nil(t, u)
		})
	}
}

// TestCheckURLQuotesNothing: the error never quotes the URL, which may
// carry what its writer did not mean to publish.
func TestCheckURLQuotesNothing(t *testing.T) {
	t.Parallel()
	_, err := enrolhttp.CheckURL("https://user:s3cret@example.com")
	require.ErrorIs(t, err, enrolhttp.ErrForbiddenURL)
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"10.0.0.1", true},
		{"192.0.2.10", true},
		{"2001:db8::1", true},
		{"::1", true},
		{"169.254.169.254", false},
		{"169.254.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"fe80::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"224.0.0.1", false},
		{"ff01::1", false},
		{"ff02::1", false},
		{"ff0e::1", false},
		{"100.100.100.200", false},
		{"192.0.0.192", false},
		{"fd00:ec2::254", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::100.100.100.200", false},
		{"64:ff9b::808:808", true},
		{"fe80::1%eth0", false},
	} {
		err := enrolhttp.CheckAddr(netip.MustParseAddr(tc.addr))
		if tc.ok {
			assert.NoError(t, err, tc.addr)
		} else {
			assert.ErrorIs(t, err, enrolhttp.ErrForbiddenURL, tc.addr)
		}
	}
}

package enrolhttp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrForbiddenURL reports an endpoint URL the client refuses to contact.
var ErrForbiddenURL = errors.New("forbidden enrolment endpoint URL")

// metadataNames are the host names of cloud metadata services, refused
// whatever they resolve to.
var metadataNames = []string{
	"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
	"metadata.azure.com", "metadata.platformequinix.com",
}

// metadataAddrs are metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
}

// CheckURL parses raw, a TrustedProvider's endpoint, and refuses anything
// but an https URL with a host, no user information and no fragment, whose
// host is neither a metadata service's name nor a forbidden address
// (CheckAddr). A name's addresses are checked when it is dialled.
// Loopback addresses are allowed: a consumer may reach the endpoint
// through a local tunnel. The error never quotes raw, which is the
// object's to show.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: not a URL", ErrForbiddenURL)
	case u.Scheme != "https":
		return nil, fmt.Errorf("%w: scheme %q, want https", ErrForbiddenURL, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: no host", ErrForbiddenURL)
	case u.User != nil:
		return nil, fmt.Errorf("%w: it carries user information", ErrForbiddenURL)
	case u.Fragment != "" || u.RawQuery != "":
		return nil, fmt.Errorf("%w: it carries a query or a fragment", ErrForbiddenURL)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, name := range metadataNames {
		if host == name {
			return nil, fmt.Errorf("%w: %s is a cloud metadata service", ErrForbiddenURL, host)
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(ip); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// nat64 is the well-known NAT64 prefix (RFC 6052): on an IPv6-only
// cluster behind NAT64, 64:ff9b::a9fe:a9fe reaches 169.254.169.254.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// CheckAddr refuses an address the client must not dial: unspecified,
// link-local (169.254.0.0/16, where most clouds serve metadata, and
// fe80::/10), multicast, or a metadata service's, including an IPv4
// address of those written as IPv4-mapped IPv6 or in the well-known NAT64
// prefix.
func CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case ip.IsUnspecified():
		return fmt.Errorf("%w: %s is unspecified", ErrForbiddenURL, ip)
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is link-local", ErrForbiddenURL, ip)
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is multicast", ErrForbiddenURL, ip)
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return fmt.Errorf("%w: %s is a cloud metadata service", ErrForbiddenURL, ip)
		}
	}
	return nil
}

// dialControl is a net.Dialer's Control: it refuses a forbidden address
// after resolution, so a name cannot lead the client where a literal
// address could not.
func dialControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrForbiddenURL, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrForbiddenURL, err)
	}
	return CheckAddr(ip)
}

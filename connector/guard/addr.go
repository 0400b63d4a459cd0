package guard

import (
	"fmt"
	"net/netip"
	"syscall"

	"code.dny.dev/ssrf"
)

// guardian holds ssrf's IP deny lists: IANA's special-purpose IPv4 ranges
// (private, loopback, link-local, CGNAT, multicast, documentation...) and
// everything outside IPv6 global unicast, with the IPv4-embedding forms
// inside it (6to4 2002::/16, Teredo 2001::/32) denied. NAT64 (64:ff9b::/96)
// and IPv4-compatible forms fall outside global unicast. Ports are not
// restricted: flows listen on any port, and the danger is the address.
var guardian = ssrf.New(ssrf.WithAnyPort())

// check returns nil when a connection to ip:port, for a URL whose host was
// host, may go ahead: ip is public, or p allows it. Otherwise it returns an
// EURLREFUSED error naming the address. An IPv4 address hidden in an
// IPv4-mapped IPv6 form (::ffff:127.0.0.1) is judged as the IPv4 address it
// is.
func (p Policy) check(host string, ip netip.Addr, port uint16) error {
	plain := ip.Unmap().WithZone("")
	if p.allows(host, plain, port) {
		return nil
	}
	if err := guardian.SafeAddr(plain); err != nil || neverAllowed(plain) {
		return refuse(err, fmt.Sprintf("points to a private or loopback address (%s)", plain))
	}
	return nil
}

// control is the net.Dialer Control of the guarded transport: it sees the
// address actually being dialled, after DNS, on every connection (before
// the connect system call), and host is the name the URL gave.
func (p Policy) control(host, network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return refuse(ssrf.ErrProhibitedNetwork, fmt.Sprintf("uses a network that is not allowed (%s)", network))
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse(err, fmt.Sprintf("leads to an address that cannot be checked (%s)", address))
	}
	return p.check(host, ap.Addr(), ap.Port())
}

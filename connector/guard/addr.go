package guard

import (
	"fmt"
	"net/netip"
	"syscall"

	"code.dny.dev/ssrf"
)

// guardian holds ssrf's IP deny lists (IANA special-purpose IPv4 ranges,
// everything outside IPv6 global unicast). Ports are not restricted: flows
// and test servers listen on any port, and the danger is the address.
var guardian = ssrf.New(ssrf.WithAnyPort())

// CheckAddr returns nil when ip is a public address, and an EURLREFUSED
// error naming it otherwise (loopback, private, link-local such as the
// cloud metadata address 169.254.169.254, unspecified, multicast, shared,
// documentation ranges...). An IPv4 address hidden in an IPv6 form
// (::ffff:127.0.0.1) is judged as the IPv4 address it is.
func CheckAddr(ip netip.Addr) error {
	plain := ip.Unmap().WithZone("")
	if err := guardian.SafeAddr(plain); err != nil {
		return refuse(err, fmt.Sprintf("points to a private or loopback address (%s)", plain))
	}
	return nil
}

// control is the net.Dialer Control of the guarded transport: it sees the
// address actually being dialled, after DNS, on every connection.
func control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return refuse(ssrf.ErrProhibitedNetwork, fmt.Sprintf("uses a network that is not allowed (%s)", network))
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse(err, fmt.Sprintf("leads to an address that cannot be checked (%s)", address))
	}
	return CheckAddr(ap.Addr())
}

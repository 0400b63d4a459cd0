package guard

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Policy is the allow-list of non-public destinations: the addresses and
// host names outgoing requests may reach although the guard would refuse
// them. The zero Policy allows none, which is what production wants; dev
// starts from Loopback. Public addresses are always allowed; unspecified,
// multicast and broadcast addresses never are, whatever the list says.
type Policy struct {
	rules []rule
}

// rule is one allow-list entry: an address range or a host name, on one
// port or (port 0) on any.
type rule struct {
	prefix netip.Prefix // valid for address rules
	host   string       // lower case, no trailing dot; set for name rules
	port   uint16
}

// Loopback allows 127.0.0.0/8 and ::1 on any port: the reference upstream,
// local flows and test servers on one machine. Nothing else.
func Loopback() Policy {
	return Policy{rules: []rule{
		{prefix: netip.MustParsePrefix("127.0.0.0/8")},
		{prefix: netip.MustParsePrefix("::1/128")},
	}}
}

// ParseAllowList reads allow-list entries, each possibly a comma-separated
// list (the form of IMGFLOW_ALLOW_HOSTS): a CIDR range (10.0.0.0/8), an
// address (10.1.2.3, ::1), an address and port (10.1.2.3:8080,
// [fd00::5]:443), a host name (minio.internal) or a host name and port
// (n8n.lan:5678). A host name is trusted by name: whatever it resolves to
// is reached, so name addresses or ranges where DNS is not yours.
func ParseAllowList(entries ...string) (Policy, error) {
	var p Policy
	for _, list := range entries {
		for _, entry := range strings.Split(list, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			r, err := parseRule(entry)
			if err != nil {
				return Policy{}, err
			}
			p.rules = append(p.rules, r)
		}
	}
	return p, nil
}

func parseRule(entry string) (rule, error) {
	bad := func(why string) (rule, error) {
		return rule{}, fmt.Errorf("allowed host %q: %s", entry, why)
	}
	if strings.Contains(entry, "/") {
		prefix, err := netip.ParsePrefix(entry)
		if err != nil {
			return bad("not a CIDR range like 10.0.0.0/8 (a URL is not accepted, only its host)")
		}
		return rule{prefix: prefix.Masked()}, nil
	}
	if ip, err := netip.ParseAddr(entry); err == nil {
		return addrRule(ip, 0), nil
	}
	if ap, err := netip.ParseAddrPort(entry); err == nil {
		if ap.Port() == 0 {
			return bad("port 0")
		}
		return addrRule(ap.Addr(), ap.Port()), nil
	}
	host, port := entry, uint16(0)
	if h, p, err := net.SplitHostPort(entry); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return bad("the port must be a number from 1 to 65535")
		}
		host, port = h, uint16(n)
	}
	host = normalHost(host)
	if !validHostName(host) {
		return bad("not an address, CIDR range, host name or host:port")
	}
	return rule{host: host, port: port}, nil
}

func addrRule(ip netip.Addr, port uint16) rule {
	ip = ip.Unmap().WithZone("")
	return rule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: port}
}

// normalHost is how names are compared: lower case, without the final dot.
func normalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

func validHostName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	// A numeric last label is an address in a form netip does not read
	// (1.2.3, 0x7f.1), which resolvers may still turn into one.
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// With returns the rules of p and q together.
func (p Policy) With(q Policy) Policy {
	rules := append(append([]rule(nil), p.rules...), q.rules...)
	return Policy{rules: rules}
}

// String lists the entries, comma-separated ("" for the zero Policy).
func (p Policy) String() string {
	parts := make([]string, len(p.rules))
	for i, r := range p.rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func (r rule) String() string {
	s := r.host
	if s == "" {
		s = r.prefix.String()
		if r.prefix.IsSingleIP() {
			s = r.prefix.Addr().String()
		}
	}
	if r.port == 0 {
		return s
	}
	if r.host == "" && r.prefix.Addr().Is6() {
		s = "[" + s + "]"
	}
	return s + ":" + strconv.Itoa(int(r.port))
}

// allows reports whether the list lets a connection to ip:port through,
// for a URL whose host was host (a name or an address literal). ip must
// already be unmapped.
func (p Policy) allows(host string, ip netip.Addr, port uint16) bool {
	if neverAllowed(ip) {
		return false
	}
	host = normalHost(host)
	for _, r := range p.rules {
		if r.port != 0 && r.port != port {
			continue
		}
		if r.host != "" && r.host == host || r.host == "" && r.prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// neverAllowed are the addresses no list can open: 0.0.0.0 and :: reach
// the local machine on Linux, and multicast or broadcast are no place to
// send an image request to.
func neverAllowed(ip netip.Addr) bool {
	return ip.IsUnspecified() || ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

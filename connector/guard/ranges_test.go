package guard

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// nonPublic has an address (or two) of every range the guard refuses,
// whatever the mode, with the range's name. None of them is ever dialled:
// the early check refuses address literals without a lookup, and the
// transport runs behind a tripwire (newTransport) that refuses whatever the
// guard lets through.
var nonPublic = []struct{ rangeName, addr string }{
	{"this network 0.0.0.0/8", "0.0.0.0"},
	{"this network 0.0.0.0/8", "0.1.2.3"},
	{"private 10.0.0.0/8", "10.0.0.1"},
	{"private 10.0.0.0/8", "10.255.255.254"},
	{"CGNAT 100.64.0.0/10", "100.64.0.1"},
	{"CGNAT 100.64.0.0/10", "100.127.255.254"},
	{"link-local 169.254.0.0/16 (cloud metadata)", "169.254.169.254"},
	{"link-local 169.254.0.0/16", "169.254.0.1"},
	{"private 172.16.0.0/12", "172.16.0.1"},
	{"private 172.16.0.0/12", "172.31.255.254"},
	{"IETF protocol assignments 192.0.0.0/24", "192.0.0.1"},
	{"documentation 192.0.2.0/24", "192.0.2.1"},
	{"6to4 relay anycast 192.88.99.0/24", "192.88.99.1"},
	{"private 192.168.0.0/16", "192.168.0.1"},
	{"private 192.168.0.0/16", "192.168.255.254"},
	{"benchmarking 198.18.0.0/15", "198.18.0.1"},
	{"documentation 198.51.100.0/24", "198.51.100.1"},
	{"documentation 203.0.113.0/24", "203.0.113.1"},
	{"multicast 224.0.0.0/4", "224.0.0.1"},
	{"multicast 224.0.0.0/4", "239.255.255.250"},
	{"reserved 240.0.0.0/4", "240.0.0.1"},
	{"broadcast", "255.255.255.255"},
	{"IPv6 unspecified", "::"},
	{"IPv6 link-local fe80::/10", "fe80::1"},
	{"IPv6 site-local fec0::/10", "fec0::1"},
	{"IPv6 unique local fc00::/7", "fc00::1"},
	{"IPv6 unique local fc00::/7", "fd12:3456::1"},
	{"IPv6 multicast ff00::/8", "ff02::1"},
	{"IPv6 discard-only 100::/64", "100::1"},
	{"IPv4-mapped private", "::ffff:10.0.0.1"},
	{"IPv4-mapped metadata", "::ffff:169.254.169.254"},
	{"IPv4-mapped unspecified", "::ffff:0.0.0.0"},
	{"IPv4-translated ::ffff:0:0/96", "::ffff:0:a00:1"},
	{"IPv4-compatible (deprecated)", "::10.0.0.1"},
	{"IPv4-compatible loopback", "::127.0.0.1"},
	{"NAT64 64:ff9b::/96 to private", "64:ff9b::a00:1"},
	{"NAT64 64:ff9b::/96 to loopback", "64:ff9b::7f00:1"},
	{"local NAT64 64:ff9b:1::/48", "64:ff9b:1::a00:1"},
	{"6to4 2002::/16 to private", "2002:a00:1::1"},
	{"6to4 2002::/16 to loopback", "2002:7f00:1::1"},
	{"Teredo 2001::/32", "2001:0:4136:e378:8000:63bf:f5ff:fffe"},
	{"IETF protocol assignments 2001::/23", "2001:2::1"},
	{"IPv6 documentation 2001:db8::/32", "2001:db8::1"},
	{"IPv6 documentation 3fff::/20", "3fff::1"},
}

// loopbackAddrs are refused in production and allowed in dev.
var loopbackAddrs = []string{"127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "::ffff:127.0.0.1"}

var modes = []struct {
	name   string
	policy Policy
}{
	{"production", Policy{}},
	{"dev", Loopback()},
	{"dev with named hosts", Loopback().With(mustParse("minio.internal:9000,198.51.100.7:8443,[2001:db8::5]:443"))},
}

func mustParse(s string) Policy {
	p, err := ParseAllowList(s)
	if err != nil {
		panic(err)
	}
	return p
}

func urlFor(addr string, port int) string {
	ip := netip.MustParseAddr(addr)
	if ip.Is6() {
		return fmt.Sprintf("http://[%s]:%d/a.png", addr, port)
	}
	return fmt.Sprintf("http://%s:%d/a.png", addr, port)
}

func TestEveryNonPublicRangeIsRefusedInEveryMode(t *testing.T) {
	for _, m := range modes {
		for _, c := range nonPublic {
			err := CheckURL(context.Background(), urlFor(c.addr, 80), m.policy, noLookups{t})
			if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
				t.Errorf("%s, %s (%s): early check expected %s, got %v", m.name, c.rangeName, c.addr, connector.EURLREFUSED, err)
			}
			ap := netip.AddrPortFrom(netip.MustParseAddr(c.addr), 80)
			network := "tcp4"
			if ap.Addr().Is6() {
				network = "tcp6"
			}
			err = m.policy.control(c.addr, network, ap.String(), nil)
			if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
				t.Errorf("%s, %s (%s): dial check expected %s, got %v", m.name, c.rangeName, c.addr, connector.EURLREFUSED, err)
			}
		}
	}
}

func TestTheTransportRefusesEveryNonPublicRangeBeforeConnecting(t *testing.T) {
	for _, m := range modes {
		var tripped atomic.Int32
		tr := newTransport(m.policy, func(network, address string) error {
			tripped.Add(1)
			return fmt.Errorf("tripwire: the guard let %s %s through", network, address)
		})
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for _, c := range nonPublic {
			if c.addr == "255.255.255.255" || netip.MustParseAddr(c.addr).IsMulticast() {
				continue // a TCP socket cannot be pointed there; the Control never runs
			}
			resp, err := client.Get(urlFor(c.addr, 80))
			if resp != nil {
				resp.Body.Close()
			}
			if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
				t.Errorf("%s, %s (%s): expected %s at the dial, got %v", m.name, c.rangeName, c.addr, connector.EURLREFUSED, err)
			}
		}
		if n := tripped.Load(); n != 0 {
			t.Errorf("%s: the guard let %d non-public addresses through to the tripwire", m.name, n)
		}
	}
}

func TestLoopbackIsRefusedInProductionAndAllowedInDev(t *testing.T) {
	for _, addr := range loopbackAddrs {
		err := CheckURL(context.Background(), urlFor(addr, 5678), Policy{}, noLookups{t})
		if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("production, %s: expected %s, got %v", addr, connector.EURLREFUSED, err)
		}
		if err := CheckURL(context.Background(), urlFor(addr, 5678), Loopback(), noLookups{t}); err != nil {
			t.Errorf("dev, %s: expected nil, got %v", addr, err)
		}
	}
}

// noLookups fails the test if the early check resolves a name: address
// literals must be judged as they are.
type noLookups struct{ t *testing.T }

func (n noLookups) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.t.Errorf("unexpected lookup of %q", host)
	return nil, fmt.Errorf("no lookups")
}

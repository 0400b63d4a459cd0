package guard

import (
	"net/netip"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

func TestCheckAddrRefusesNonPublicAddresses(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "0.0.0.0", "255.255.255.255", "224.0.0.1",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"64:ff9b::7f00:1", "2001:db8::1",
	} {
		err := CheckAddr(netip.MustParseAddr(s))
		if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %v", s, connector.EURLREFUSED, err)
		}
	}
}

func TestCheckAddrAllowsPublicAddresses(t *testing.T) {
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"} {
		if err := CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: expected nil, got %v", s, err)
		}
	}
}

func TestCheckAddrNamesTheUnmappedAddress(t *testing.T) {
	err := CheckAddr(netip.MustParseAddr("::ffff:127.0.0.1"))
	want := "URL points to a private or loopback address (127.0.0.1)"
	if got := connector.ErrorMessage(err); got != want {
		t.Errorf("expected %q, got %q", want, got)
	}
}

func TestControlAllowsAnyPortOnAPublicAddress(t *testing.T) {
	for _, addr := range []string{"8.8.8.8:80", "8.8.8.8:443", "8.8.8.8:5678", "[2606:4700:4700::1111]:8443"} {
		network := "tcp4"
		if addr[0] == '[' {
			network = "tcp6"
		}
		if err := control(network, addr, nil); err != nil {
			t.Errorf("%s: expected nil, got %v", addr, err)
		}
	}
}

func TestControlRefusesOtherNetworks(t *testing.T) {
	if err := control("udp4", "8.8.8.8:53", nil); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
		t.Errorf("expected %s, got %v", connector.EURLREFUSED, err)
	}
}

package guard

import (
	"net/netip"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

func TestPublicAddressesAreAllowedInEveryMode(t *testing.T) {
	for _, m := range modes {
		for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"} {
			if err := m.policy.check(s, netip.MustParseAddr(s), 443); err != nil {
				t.Errorf("%s, %s: expected nil, got %v", m.name, s, err)
			}
		}
	}
}

func TestARefusalNamesTheUnmappedAddress(t *testing.T) {
	err := Policy{}.check("::ffff:127.0.0.1", netip.MustParseAddr("::ffff:127.0.0.1"), 80)
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
		if err := (Policy{}).control("images.example", network, addr, nil); err != nil {
			t.Errorf("%s: expected nil, got %v", addr, err)
		}
	}
}

func TestControlRefusesOtherNetworks(t *testing.T) {
	if err := Loopback().control("127.0.0.1", "udp4", "127.0.0.1:53", nil); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
		t.Errorf("expected %s, got %v", connector.EURLREFUSED, err)
	}
}

// The dial check knows the URL's host name, so a name on the list is let
// through to whatever it resolves to, and no other name is.
func TestControlAllowsANamedHostOnlyUnderItsName(t *testing.T) {
	p := mustParse("minio.internal:9000")
	if err := p.control("MINIO.internal.", "tcp4", "10.1.2.3:9000", nil); err != nil {
		t.Errorf("minio.internal:9000: expected nil, got %v", err)
	}
	for _, c := range []struct{ host, addr string }{
		{"minio.internal", "10.1.2.3:9001"},
		{"other.internal", "10.1.2.3:9000"},
		{"minio.internal", "0.0.0.0:9000"},
	} {
		if err := p.control(c.host, "tcp4", c.addr, nil); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s at %s: expected %s, got %v", c.host, c.addr, connector.EURLREFUSED, err)
		}
	}
}

package guard

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseAllowListReadsEveryForm(t *testing.T) {
	p, err := ParseAllowList(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8", "10.1.2.3:8080,[fd00::5]:443, N8N.lan:5678 ,minio.internal.,", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "10.0.0.0/8,192.168.1.7,fd00::/8,10.1.2.3:8080,[fd00::5]:443,n8n.lan:5678,minio.internal"
	if got := p.String(); got != want {
		t.Errorf("expected %s, got %s", want, got)
	}
}

func TestParseAllowListRefusesWhatIsNotAHost(t *testing.T) {
	for _, entry := range []string{
		"http://10.0.0.1/", "10.0.0.0/33", "host:port", "host:0", "host:70000", "10.0.0.1:0",
		"-bad.example", "a..b", "under score?", "1.2.3", "0x7f.1", "[::1]",
	} {
		_, err := ParseAllowList(entry)
		if err == nil || !strings.Contains(err.Error(), entry) {
			t.Errorf("%q: expected an error naming the entry, got %v", entry, err)
		}
	}
}

func TestAPolicyAllowsWhatItNamesAndNothingElse(t *testing.T) {
	p := mustParse("10.0.0.0/8,192.168.1.7,172.16.0.9:8080,[fd00::5]:443,n8n.lan:5678")
	cases := []struct {
		host, addr string
		port       uint16
		allowed    bool
	}{
		{"10.9.8.7", "10.9.8.7", 80, true},
		{"10.9.8.7", "::ffff:10.9.8.7", 80, true},
		{"192.168.1.7", "192.168.1.7", 1, true},
		{"192.168.1.8", "192.168.1.8", 80, false},
		{"172.16.0.9", "172.16.0.9", 8080, true},
		{"172.16.0.9", "172.16.0.9", 80, false},
		{"fd00::5", "fd00::5", 443, true},
		{"fd00::5", "fd00::5", 80, false},
		{"n8n.lan", "192.168.50.2", 5678, true},
		{"n8n.lan", "192.168.50.2", 80, false},
		{"evil.example", "192.168.50.2", 5678, false},
		{"127.0.0.1", "127.0.0.1", 80, false},
		{"169.254.169.254", "169.254.169.254", 80, false},
	}
	for _, c := range cases {
		err := p.check(c.host, netip.MustParseAddr(c.addr), c.port)
		if (err == nil) != c.allowed {
			t.Errorf("%s (%s) port %d: allowed %v expected, got %v", c.host, c.addr, c.port, c.allowed, err)
		}
	}
}

// 0.0.0.0 and :: reach the local machine; multicast and broadcast are no
// destination for a request: listing a range around them opens nothing.
func TestNoListOpensUnspecifiedMulticastOrBroadcast(t *testing.T) {
	p := mustParse("0.0.0.0/0,::/0")
	for _, s := range []string{"0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255", "::ffff:0.0.0.0"} {
		if err := p.check(s, netip.MustParseAddr(s), 80); err == nil {
			t.Errorf("%s: expected a refusal even when listed", s)
		}
	}
	if err := p.check("10.0.0.1", netip.MustParseAddr("10.0.0.1"), 80); err != nil {
		t.Errorf("10.0.0.1 inside 0.0.0.0/0: expected nil, got %v", err)
	}
}

func TestLoopbackAllowsOnlyLoopback(t *testing.T) {
	if got, want := Loopback().String(), "127.0.0.0/8,::1"; got != want {
		t.Errorf("expected %s, got %s", want, got)
	}
}

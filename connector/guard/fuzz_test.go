package guard

import (
	"context"
	"hash/fnv"
	"net/netip"
	"net/url"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// hashResolver resolves every name, without any lookup, to one of a few
// addresses chosen by the name's hash: public, loopback, private or
// metadata, so the fuzzer reaches every branch of the check.
type hashResolver struct{}

var hashAddrs = []netip.Addr{
	netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1"),
	netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("2606:4700:4700::1111"), netip.MustParseAddr("::ffff:192.168.0.1"),
}

func (hashResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h := fnv.New32a()
	h.Write([]byte(host))
	return []netip.Addr{hashAddrs[h.Sum32()%uint32(len(hashAddrs))]}, nil
}

// FuzzCheckURL: any string gets an answer, refusals are url_not_allowed
// (fetch_failed only for names that do not resolve), an accepted URL is
// http(s) with a host and no credentials whose address is public in
// production, and whatever production accepts, dev accepts too.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://images.example/a.png", "https://images.example:8443/a.png?x=1#f", "http://127.0.0.1:8080/",
		"http://[::1]/", "http://[::ffff:10.0.0.1]/", "http://[fe80::1%25eth0]/", "http://0x7f.1/",
		"http://2130706433/", "http://user:pw@host/", "ftp://host/", "http:///a", "http://%zz/",
		"http://host:99999/", "HTTP://Images.Example./", "http://[64:ff9b::a00:1]:80/", "//host/a",
	} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw string) {
		prod := CheckURL(ctx, raw, Policy{}, hashResolver{})
		dev := CheckURL(ctx, raw, Loopback(), hashResolver{})
		for _, err := range []error{prod, dev} {
			if code := connector.ErrorCodeOf(err); code != "" && code != connector.EURLREFUSED && code != connector.EFETCH {
				t.Fatalf("CheckURL(%q) error code %s: %v", raw, code, err)
			}
		}
		if prod == nil && dev != nil {
			t.Fatalf("CheckURL(%q): production accepts, dev refuses (%v)", raw, dev)
		}
		if prod != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("CheckURL(%q) accepted a URL that is not plain http(s) with a host", raw)
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
			if guardian.SafeAddr(ip.Unmap().WithZone("")) != nil {
				t.Fatalf("CheckURL(%q) accepted the non-public address %s in production", raw, ip)
			}
		}
	})
}

// FuzzParseAllowList: any string parses or is refused naming the entry; a
// parsed list prints to a form that parses back to the same list.
func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8", "10.1.2.3:8080,[fd00::5]:443", "n8n.lan:5678, minio.internal.", "", ",,",
		"fe80::1%eth0", "0.0.0.0/0,::/0", "http://x/", "host:0", "a..b", "1.2.3", "::ffff:10.0.0.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseAllowList(s)
		if err != nil {
			return
		}
		again, err := ParseAllowList(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("ParseAllowList(%q) prints %q, which parses to %q (%v)", s, p.String(), again.String(), err)
		}
	})
}

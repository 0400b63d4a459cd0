package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/imgflow/imgflow/connector"
)

// Resolver looks host names up; *net.Resolver implements it, tests pass a
// fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL validates a URL a flow handed in before anything is fetched or
// posted: scheme http or https, a host, no user name or password. Then it
// resolves the host (with resolver, or net.DefaultResolver when nil) and
// refuses the URL if any of its addresses is neither public nor allowed by
// p. Errors are *connector.Error whose message starts with "URL" (ForField
// names the field instead): EURLREFUSED, or EFETCH when the host name does
// not resolve.
//
// This is the early check, for a 400 at submission. The guarded transport
// checks again at every dial, so a host whose DNS answer changes in between
// (DNS rebinding) is still refused.
func CheckURL(ctx context.Context, rawURL string, p Policy, resolver Resolver) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return refuse(err, "is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return refuse(nil, "must start with http:// or https://")
	}
	host := u.Hostname()
	if host == "" {
		return refuse(nil, "has no host")
	}
	if u.User != nil {
		return refuse(nil, "must not carry a user name or password")
	}
	port, err := urlPort(u)
	if err != nil {
		return refuse(err, "has an invalid port")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.check(host, ip, port)
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		// Not a refusal: the name may resolve later (Retryable when the
		// resolver says the failure is temporary).
		var dnsErr *net.DNSError
		temporary := errors.As(err, &dnsErr) && (dnsErr.IsTemporary || dnsErr.IsTimeout)
		r := &refusal{code: connector.EFETCH, complaint: fmt.Sprintf("host %s could not be resolved", host), retryable: temporary, cause: err}
		return r.asError("URL")
	}
	for _, ip := range addrs {
		if err := p.check(host, ip, port); err != nil {
			return err
		}
	}
	return nil
}

// urlPort is the port a request to u dials: the explicit one, else the
// scheme's.
func urlPort(u *url.URL) (uint16, error) {
	s := u.Port()
	if s == "" {
		if u.Scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q", s)
	}
	return uint16(n), nil
}

package guard

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"time"
)

// NewTransport returns the HTTP transport for requests to URLs that flows
// hand in (images, callbacks, hooks). It uses no proxy (a proxy would dial
// on our behalf, past the check) and its dialer refuses any connection
// whose resolved address is neither public nor allowed by p, before the
// connection is attempted; the error in the request's chain is an
// EURLREFUSED *connector.Error. Callers set their own timeouts and redirect
// policy on the http.Client.
func NewTransport(p Policy) *http.Transport {
	return newTransport(p, nil)
}

// newTransport is NewTransport with a second Control run after the guard
// passed an address; tests put a tripwire there that refuses everything,
// so that a guard that wrongly lets an address through still never sends
// a packet to it.
func newTransport(p Policy, after func(network, address string) error) *http.Transport {
	base := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		d := base
		d.Control = func(network, address string, c syscall.RawConn) error {
			if err := p.control(host, network, address, c); err != nil {
				return err
			}
			if after != nil {
				return after(network, address)
			}
			return nil
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}

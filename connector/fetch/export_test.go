package fetch

import (
	"context"
	"net"
	"net/http"
)

// exemptFirstHop lets f reach hostport (a loopback test server standing in
// for a public host) while every other address stays guarded by the real
// URL check and the real dial check.
func (f *Fetcher) exemptFirstHop(hostport string) {
	f.exempt = hostport
	tr := f.client.Transport.(*http.Transport)
	guarded := tr.DialContext
	plain := (&net.Dialer{}).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == hostport {
			return plain(ctx, network, addr)
		}
		return guarded(ctx, network, addr)
	}
}

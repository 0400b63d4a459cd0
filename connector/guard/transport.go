package guard

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the HTTP transport for requests to URLs that flows
// hand in (images, callbacks, hooks). It uses no proxy (a proxy would dial
// on our behalf, past the check) and, unless allowPrivate is true, its
// dialer refuses any connection whose resolved address is not public; the
// error in the request's chain is an EURLREFUSED *connector.Error. Callers
// set their own timeouts and redirect policy on the http.Client.
//
// allowPrivate is for development and tests on one machine; never set it
// on a server reachable by others.
func NewTransport(allowPrivate bool) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = control
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}

package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestSendSaysWhyNoAnswerCame: each way a receiver can fail to answer is a
// distinct, readable error, as the delivery log and the job's callback
// status show it.
func TestSendSaysWhyNoAnswerCame(t *testing.T) {
	// Nothing listens: a port that was just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String() + "/hook"
	ln.Close()

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer hangUp.Close()

	for name, tc := range map[string]struct{ url, want string }{
		"nothing listens":     {closedURL, "could not deliver to 127.0.0.1: connection refused at " + strings.TrimPrefix(strings.TrimSuffix(closedURL, "/hook"), "http://") + " (nothing listens there)"},
		"untrusted TLS":       {tlsSrv.URL, "could not deliver to 127.0.0.1: TLS: certificate signed by an unknown authority"},
		"TLS to a plain port": {strings.Replace(plain.URL, "http://", "https://", 1), "could not deliver to 127.0.0.1: TLS: the receiver does not speak TLS on this port (is it http://?)"},
		"connection hung up":  {hangUp.URL, "could not deliver to 127.0.0.1: the receiver closed the connection without an answer"},
	} {
		res := dev().Send(context.Background(), tc.url, []string{secret}, "m", event)
		if res.Err == nil || res.Err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", name, res.Err, tc.want)
		}
	}
}

// TestFailureCauseNamesDNSFailures: resolution errors are told apart
// (built here: a test resolves no real names).
func TestFailureCauseNamesDNSFailures(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example.com", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for want, err := range map[string]error{
		"DNS: host name hooks.example.com not found": wrap(&net.DNSError{Err: "no such host", Name: "hooks.example.com", IsNotFound: true}),
		"DNS: lookup of hooks.example.com timed out": wrap(&net.DNSError{Err: "i/o timeout", Name: "hooks.example.com", IsTimeout: true}),
		"DNS: lookup of hooks.example.com failed":    wrap(&net.DNSError{Err: "server misbehaving", Name: "hooks.example.com"}),
		"network error": wrap(errors.New("something else")),
	} {
		if got := failureCause(err); got != want {
			t.Errorf("failureCause(%v) = %q, want %q", err, got, want)
		}
	}
}

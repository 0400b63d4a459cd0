package guard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func get(t *testing.T, tr *http.Transport, url string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestTransportRefusesLoopbackAtTheDial(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))

	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		_, err := get(t, NewTransport(Policy{}), "http://"+host+":"+port+"/")
		if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %v", host, connector.EURLREFUSED, err)
		}
	}
}

func TestTransportRefusesIPv6LoopbackAtTheDial(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	_, err = get(t, NewTransport(Policy{}), srv.URL)
	if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
		t.Errorf("expected %s, got %v", connector.EURLREFUSED, err)
	}
}

func TestTransportAllowsLoopbackInDev(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := get(t, NewTransport(Loopback()), "http://"+host+":"+port+"/")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: expected 200, got %v %v", host, resp, err)
		}
	}
}

// A host:port entry opens that port only: another server on the same
// loopback address stays refused at the dial.
func TestTransportAllowsANamedHostPortOnly(t *testing.T) {
	var otherHits int
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits++ }))
	defer other.Close()
	p := mustParse(strings.TrimPrefix(allowed.URL, "http://"))
	if resp, err := get(t, NewTransport(p), allowed.URL); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("allowed: expected 200, got %v %v", resp, err)
	}
	if _, err := get(t, NewTransport(p), other.URL); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
		t.Errorf("other port: expected %s, got %v", connector.EURLREFUSED, err)
	}
	if otherHits != 0 {
		t.Errorf("expected the other server never reached, got %d requests", otherHits)
	}
}

func TestTransportUsesNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://93.184.216.34:3128")
	if NewTransport(Policy{}).Proxy != nil {
		t.Errorf("expected no proxy function, got one")
	}
}

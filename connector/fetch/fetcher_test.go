package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// png returns n bytes that sniff as PNG.
func png(n int) []byte {
	b := make([]byte, n)
	copy(b, pngHead)
	return b
}

// serve starts a test server on 127.0.0.1 with h and returns its URL.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func servePNG(t *testing.T, n int) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(png(n)) })
}

func fetchErr(t *testing.T, f *Fetcher, url string) *connector.Error {
	t.Helper()
	img, err := f.FetchImage(context.Background(), url)
	if err == nil {
		t.Fatalf("%s: expected an error, got an image of %d bytes", url, img.Data.Size())
	}
	var e *connector.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: expected a *connector.Error, got %T %v", url, err, err)
	}
	return e
}

func expectError(t *testing.T, e *connector.Error, code connector.ErrorCode, message string) {
	t.Helper()
	if e.Code != code || e.Message != message {
		t.Errorf("expected %s %q, got %s %q", code, message, e.Code, e.Message)
	}
}

func portOf(srv *httptest.Server) string {
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// fakeResolver maps every name to one address.
type fakeResolver map[string]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestFetchRefusesPrivateAndLoopbackAddresses(t *testing.T) {
	srv := servePNG(t, 100)
	port := portOf(srv)
	f := New(Options{Resolver: fakeResolver{"cdn.example": "127.0.0.1"}})
	cases := []struct{ url, addr string }{
		{"http://127.0.0.1:" + port + "/a.png", "127.0.0.1"},
		{"http://10.0.0.1/a.png", "10.0.0.1"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"http://[::1]:" + port + "/a.png", "::1"},
		{"http://[::ffff:127.0.0.1]:" + port + "/a.png", "127.0.0.1"},
		{"http://cdn.example:" + port + "/a.png", "127.0.0.1"},
	}
	for _, c := range cases {
		e := fetchErr(t, f, c.url)
		expectError(t, e, connector.EURLREFUSED, "image_url points to a private or loopback address ("+c.addr+")")
	}
}

func TestFetchRefusesLocalhostWithTheSystemResolver(t *testing.T) {
	srv := servePNG(t, 100)
	e := fetchErr(t, New(Options{}), "http://localhost:"+portOf(srv)+"/a.png")
	if e.Code != connector.EURLREFUSED {
		t.Errorf("expected %s, got %s %q", connector.EURLREFUSED, e.Code, e.Message)
	}
}

func TestFetchRefusesARedirectToAPrivateAddress(t *testing.T) {
	var privateHits atomic.Int32
	private := serve(t, func(w http.ResponseWriter, r *http.Request) {
		privateHits.Add(1)
		w.Write(png(100))
	})
	public := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL+"/secret.png", http.StatusFound)
	})
	// The first hop is on the allow-list by host:port; the private server
	// is on the same address, another port.
	f := New(Options{Allow: allowOnly(t, public)})

	e := fetchErr(t, f, public.URL+"/a.png")
	expectError(t, e, connector.EURLREFUSED, "image_url redirect points to a private or loopback address (127.0.0.1)")
	if n := privateHits.Load(); n != 0 {
		t.Errorf("expected the private server never reached, got %d requests", n)
	}
}

// A redirect to a name that resolved to a public address at the check but
// to loopback at the dial (DNS rebinding) is refused by the dial check.
func TestFetchRefusesARebindingRedirectAtTheDial(t *testing.T) {
	var privateHits atomic.Int32
	private := serve(t, func(w http.ResponseWriter, r *http.Request) {
		privateHits.Add(1)
		w.Write(png(100))
	})
	public := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+portOf(private)+"/secret.png", http.StatusFound)
	})
	f := New(Options{Allow: allowOnly(t, public), Resolver: fakeResolver{"localhost": "93.184.216.34"}})

	e := fetchErr(t, f, public.URL+"/a.png")
	if e.Code != connector.EURLREFUSED || !strings.HasPrefix(e.Message, "image_url points to a private or loopback address") {
		t.Errorf("expected %s from the dial, got %s %q", connector.EURLREFUSED, e.Code, e.Message)
	}
	if n := privateHits.Load(); n != 0 {
		t.Errorf("expected the private server never reached, got %d requests", n)
	}
}

func TestFetchAllowsPrivateAddressesWhenAllowed(t *testing.T) {
	srv := servePNG(t, 100)
	img, err := New(Options{Allow: guard.Loopback()}).FetchImage(context.Background(), srv.URL+"/images/cat.png")
	if err != nil {
		t.Fatalf("expected an image, got %v", err)
	}
	if img.MIMEType != "image/png" || img.Data.Size() != 100 || img.Filename != "cat.png" {
		t.Errorf("expected image/png, 100 bytes, cat.png; got %s, %d bytes, %q", img.MIMEType, img.Data.Size(), img.Filename)
	}
}

func TestFetchSniffsTheFourFormats(t *testing.T) {
	for want, head := range map[string][]byte{
		"image/png":  pngHead,
		"image/jpeg": {0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F'},
		"image/webp": []byte("RIFF\x24\x00\x00\x00WEBPVP8 "),
		"image/avif": []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"),
	} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(head)
		})
		img, err := New(Options{Allow: guard.Loopback()}).FetchImage(context.Background(), srv.URL+"/x")
		if err != nil || img.MIMEType != want {
			t.Errorf("expected %s, got %v %v", want, img, err)
		}
	}
}

func TestFetchRefusesFilesThatAreNotImages(t *testing.T) {
	for name, body := range map[string]string{
		"html": "<!doctype html><html><body>Not found</body></html>",
		"gif":  "GIF89a\x01\x00\x01\x00\x80\x00\x00",
	} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png") // declared types are not trusted
			fmt.Fprint(w, body)
		})
		e := fetchErr(t, New(Options{Allow: guard.Loopback()}), srv.URL+"/a.png")
		t.Run(name, func(t *testing.T) {
			expectError(t, e, connector.EFORMAT, "the file at image_url is not a PNG, JPEG, WebP or AVIF image")
		})
	}
}

func TestFetchReportsANon2xxStatus(t *testing.T) {
	cases := []struct {
		status    int
		retryable bool
	}{
		{http.StatusNotFound, false},
		{http.StatusForbidden, false},
		{http.StatusTooManyRequests, true},
		{http.StatusBadGateway, true},
	}
	for _, c := range cases {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", c.status) })
		e := fetchErr(t, New(Options{Allow: guard.Loopback()}), srv.URL+"/a.png")
		expectError(t, e, connector.EFETCH, fmt.Sprintf("image_url answered %d %s", c.status, http.StatusText(c.status)))
		if e.Retryable != c.retryable {
			t.Errorf("%d: expected retryable %v, got %v", c.status, c.retryable, e.Retryable)
		}
	}
}

func TestFetchRefusesTooLargeWithContentLength(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2000")
		w.Write(png(2000))
	})
	e := fetchErr(t, New(Options{Allow: guard.Loopback(), MaxBytes: 1000}), srv.URL+"/a.png")
	expectError(t, e, connector.ETOOLARGE, "the image at image_url is 2000 bytes, over the 1000 bytes limit")
}

func TestFetchRefusesTooLargeWithoutContentLength(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(png(600))
		w.(http.Flusher).Flush() // chunked: no Content-Length
		w.Write(make([]byte, 600))
	})
	e := fetchErr(t, New(Options{Allow: guard.Loopback(), MaxBytes: 1000}), srv.URL+"/a.png")
	expectError(t, e, connector.ETOOLARGE, "the image at image_url is over the 1000 bytes limit")
}

func TestFetchRefusesMoreThan10MiBByDefault(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(png(connector.MaxImageSize))
		w.(http.Flusher).Flush()
		w.Write([]byte{0})
	})
	e := fetchErr(t, New(Options{Allow: guard.Loopback()}), srv.URL+"/a.png")
	expectError(t, e, connector.ETOOLARGE, "the image at image_url is over the 10 MiB limit")
}

func TestFetchAcceptsAnImageOfExactlyTheCap(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if chunked {
				w.(http.Flusher).Flush()
			}
			w.Write(png(1000))
		})
		img, err := New(Options{Allow: guard.Loopback(), MaxBytes: 1000}).FetchImage(context.Background(), srv.URL+"/a.png")
		if err != nil || img.Data.Size() != 1000 {
			t.Errorf("chunked=%v: expected 1000 bytes, got %v %v", chunked, img, err)
		}
	}
}

func TestFetchTimesOut(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	start := time.Now()
	e := fetchErr(t, New(Options{Allow: guard.Loopback(), Timeout: 100 * time.Millisecond}), srv.URL+"/a.png")
	expectError(t, e, connector.EFETCH, "image_url host 127.0.0.1 did not answer within 100ms")
	if !e.Retryable {
		t.Errorf("expected a timeout to be retryable")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("expected to give up after about 100ms, took %s", d)
	}
}

func TestFetchNamesTheHostWhenItCannotConnect(t *testing.T) {
	srv := servePNG(t, 10)
	url := srv.URL + "/a.png"
	srv.Close()
	e := fetchErr(t, New(Options{Allow: guard.Loopback()}), url)
	expectError(t, e, connector.EFETCH, "could not fetch image_url from 127.0.0.1")
	if !e.Retryable {
		t.Errorf("expected a connection failure to be retryable")
	}
}

// redirector redirects /r/N to /r/N+1 until N reaches stop, then serves a PNG.
func redirector(t *testing.T, stop int) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/r/%d", &n)
		if n < stop {
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n+1), http.StatusFound)
			return
		}
		w.Write(png(10))
	})
}

func TestFetchFollowsFiveRedirects(t *testing.T) {
	srv := redirector(t, 5)
	img, err := New(Options{Allow: guard.Loopback()}).FetchImage(context.Background(), srv.URL+"/r/0")
	if err != nil || img.Filename != "5" {
		t.Fatalf("expected the image after 5 redirects, got %v %v", img, err)
	}
}

func TestFetchRefusesMoreThanFiveRedirects(t *testing.T) {
	srv := redirector(t, 6)
	e := fetchErr(t, New(Options{Allow: guard.Loopback()}), srv.URL+"/r/0")
	expectError(t, e, connector.EFETCH, "image_url redirected more than 5 times")
}

func TestFetchTakesTheFilenameFromContentDisposition(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="../../etc/holiday.png"`)
		w.Write(png(10))
	})
	img, err := New(Options{Allow: guard.Loopback()}).FetchImage(context.Background(), srv.URL+"/download?id=7")
	if err != nil || img.Filename != "holiday.png" {
		t.Errorf("expected holiday.png, got %v %v", img, err)
	}
}

func TestFetchLeavesTheFilenameEmptyForABarePath(t *testing.T) {
	srv := servePNG(t, 10)
	img, err := New(Options{Allow: guard.Loopback()}).FetchImage(context.Background(), srv.URL+"/")
	if err != nil || img.Filename != "" {
		t.Errorf("expected no filename, got %v %v", img, err)
	}
}

func TestFetchSendsTheUserAgent(t *testing.T) {
	var ua atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.UserAgent())
		w.Write(png(10))
	})
	if _, err := New(Options{Allow: guard.Loopback(), UserAgent: "imgflow-test/1"}).FetchImage(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if got := ua.Load(); got != "imgflow-test/1" {
		t.Errorf("expected user agent imgflow-test/1, got %v", got)
	}
}

func TestFetchRefusesOtherSchemes(t *testing.T) {
	e := fetchErr(t, New(Options{Allow: guard.Loopback()}), "file:///etc/passwd")
	expectError(t, e, connector.EURLREFUSED, "image_url must start with http:// or https://")
}

func TestFetchReportsAnUnresolvableHostAsAFetchError(t *testing.T) {
	e := fetchErr(t, New(Options{Resolver: fakeResolver{}}), "https://nowhere.example/a.png")
	expectError(t, e, connector.EFETCH, "image_url host nowhere.example could not be resolved")
	if e.Retryable {
		t.Errorf("expected a name that does not exist not to be retryable")
	}
}

// allowOnly is the policy that lets srv's host:port through (a loopback
// test server standing in for a public host) and nothing else.
func allowOnly(t *testing.T, srv *httptest.Server) guard.Policy {
	p, err := guard.ParseAllowList(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A failed fetch's error, which is logged and kept by asynq in Redis, does
// not carry the URL's query: a presigned URL's signature stays the flow's.
func TestAFetchErrorDoesNotCarryTheURLsQuery(t *testing.T) {
	srv := servePNG(t, 10)
	url := srv.URL + "/a.png?X-Amz-Signature=s3cr3t-signature"
	srv.Close()
	e := fetchErr(t, New(Options{Allow: guard.Loopback()}), url)
	if e.Code != connector.EFETCH || strings.Contains(e.Error(), "s3cr3t-signature") {
		t.Errorf("expected %s without the query, got %q", connector.EFETCH, e.Error())
	}
}

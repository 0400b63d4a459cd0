package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

// delivery is what a receiver saw.
type delivery struct {
	header   http.Header
	body     []byte
	rawQuery string
	path     string
}

// receiver answers every request with status (and extra headers), and
// records the last delivery.
func receiver(t *testing.T, status int, extra http.Header) (*httptest.Server, *atomic.Pointer[delivery]) {
	t.Helper()
	var last atomic.Pointer[delivery]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(&delivery{header: r.Header.Clone(), body: b, rawQuery: r.URL.RawQuery, path: r.URL.Path})
		for k, v := range extra {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, "thanks")
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

var event = []byte(`{"type":"job.completed","timestamp":"2026-11-21T12:00:00Z","data":{"id":"j1"}}`)

func dev() *Sender { return NewSender(SenderOptions{Allow: guard.Loopback()}) }

func TestSendDeliversASignedEventThatVerifies(t *testing.T) {
	srv, last := receiver(t, http.StatusNoContent, nil)
	res := dev().Send(context.Background(), srv.URL+"/hook", []string{secret}, "msg_42", event)
	if res.Err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("expected 204 and no error, got %+v", res)
	}
	d := last.Load()
	if got := d.header.Get("webhook-id"); got != "msg_42" {
		t.Errorf("expected webhook-id msg_42, got %q", got)
	}
	if ts := d.header.Get("webhook-timestamp"); ts == "" || strings.ContainsAny(ts, ".-") {
		t.Errorf("expected unix seconds in webhook-timestamp, got %q", ts)
	}
	if ct := d.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("expected application/json, got %q", ct)
	}
	if ua := d.header.Get("User-Agent"); ua != "imgflow-webhooks" {
		t.Errorf("expected user agent imgflow-webhooks, got %q", ua)
	}
	if string(d.body) != string(event) {
		t.Errorf("expected the body unchanged, got %s", d.body)
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Errorf("expected the delivery to verify with the reference library, got %v", err)
	}
}

func TestSendKeepsTheQueryStringExactly(t *testing.T) {
	srv, last := receiver(t, http.StatusOK, nil)
	query := "signature=ab%2Fc%2B%3D&exp=1790000000&x=a+b&empty="
	if res := dev().Send(context.Background(), srv.URL+"/webhook-waiting/42?"+query, []string{secret}, "m", event); res.Err != nil {
		t.Fatalf("expected success, got %v", res.Err)
	}
	if d := last.Load(); d.rawQuery != query || d.path != "/webhook-waiting/42" {
		t.Errorf("expected path /webhook-waiting/42 and query %q, got %q and %q", query, d.path, d.rawQuery)
	}
}

func TestSendTreatsARedirectAsAFailureAndDoesNotFollowIt(t *testing.T) {
	var followed atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer elsewhere.Close()
	srv, _ := receiver(t, http.StatusFound, http.Header{"Location": {elsewhere.URL}})

	res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if res.Status != http.StatusFound || res.Err == nil || res.Err.Error() != "webhook URL answered 302 Found; redirects are not followed" {
		t.Errorf("expected 302 as a failure, got %+v", res)
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("expected the redirect not followed, got %d requests there", n)
	}
}

func TestSendReportsGoneOn410(t *testing.T) {
	srv, _ := receiver(t, http.StatusGone, nil)
	res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if !res.Gone || res.Status != http.StatusGone || res.Err == nil {
		t.Errorf("expected Gone with an error, got %+v", res)
	}
}

func TestSendFailsOnServerErrorsWithoutGone(t *testing.T) {
	srv, _ := receiver(t, http.StatusInternalServerError, nil)
	res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if res.Gone || res.Err == nil || res.Err.Error() != "webhook URL answered 500 Internal Server Error" {
		t.Errorf("expected a 500 failure, got %+v", res)
	}
}

func TestSendReadsRetryAfterOn429And503(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		srv, _ := receiver(t, status, http.Header{"Retry-After": {"30"}})
		res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event)
		if res.RetryAfter != 30*time.Second || res.Err == nil {
			t.Errorf("%d: expected a failure with Retry-After 30s, got %+v", status, res)
		}
	}
	srv, _ := receiver(t, http.StatusInternalServerError, http.Header{"Retry-After": {"30"}})
	if res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event); res.RetryAfter != 0 {
		t.Errorf("500: expected Retry-After ignored, got %s", res.RetryAfter)
	}
}

func TestSendRefusesAPrivateTargetUnlessAllowed(t *testing.T) {
	srv, last := receiver(t, http.StatusOK, nil)
	res := NewSender(SenderOptions{}).Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if connector.ErrorCodeOf(res.Err) != connector.EURLREFUSED ||
		connector.ErrorMessage(res.Err) != "webhook URL points to a private or loopback address (127.0.0.1)" {
		t.Errorf("expected %s for 127.0.0.1, got %+v", connector.EURLREFUSED, res)
	}
	if last.Load() != nil {
		t.Errorf("expected nothing delivered")
	}
	for _, target := range []string{"http://169.254.169.254/latest", "http://[::1]:8080/", "http://10.0.0.1/"} {
		res := NewSender(SenderOptions{}).Send(context.Background(), target, []string{secret}, "m", event)
		if connector.ErrorCodeOf(res.Err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %+v", target, connector.EURLREFUSED, res)
		}
	}
	if res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event); res.Err != nil {
		t.Errorf("expected delivery when private targets are allowed, got %v", res.Err)
	}
}

func TestSendTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	res := NewSender(SenderOptions{Allow: guard.Loopback(), Timeout: 100 * time.Millisecond}).Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if res.Status != 0 || res.Err == nil || res.Err.Error() != "webhook URL host 127.0.0.1 did not answer within 100ms" {
		t.Errorf("expected a timeout, got %+v", res)
	}
}

func TestSendRefusesABadSecret(t *testing.T) {
	srv, last := receiver(t, http.StatusOK, nil)
	res := dev().Send(context.Background(), srv.URL, []string{"not a secret"}, "m", event)
	if res.Err == nil || last.Load() != nil {
		t.Errorf("expected an error and nothing sent, got %+v", res)
	}
}

func TestSendKeepsTheStartOfTheAnswerForTheDeliveryLog(t *testing.T) {
	srv, _ := receiver(t, http.StatusBadRequest, nil) // answers "thanks"
	res := dev().Send(context.Background(), srv.URL, []string{secret}, "m", event)
	if res.Response != "thanks" || res.Duration <= 0 {
		t.Errorf("expected the answer \"thanks\" and a duration, got %q and %s", res.Response, res.Duration)
	}
	long := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		// A 3-byte rune straddles the limit; a control character is dropped.
		io.WriteString(w, "\x1b"+strings.Repeat("a", connector.MaxResponseSnippet-2)+"€"+strings.Repeat("b", 100<<10))
	}))
	defer long.Close()
	res = dev().Send(context.Background(), long.URL, []string{secret}, "m", event)
	if want := strings.Repeat("a", connector.MaxResponseSnippet-2); res.Response != want {
		t.Errorf("expected the first %d bytes without the control character or the cut rune, got %d bytes ending %q",
			connector.MaxResponseSnippet, len(res.Response), res.Response[max(0, len(res.Response)-8):])
	}
}

func TestSnippetKeepsWholeRunesAndLines(t *testing.T) {
	for in, want := range map[string]string{
		"ok\n\tdone\r\n":   "ok\n\tdone",
		"caf\xc3\xa9":      "café",
		"caf\xc3":          "caf",
		"a\xffb":           "a\uFFFDb",
		"  {\"ok\":true} ": `{"ok":true}`,
	} {
		if got := snippet([]byte(in)); got != want {
			t.Errorf("snippet(%q): expected %q, got %q", in, want, got)
		}
	}
}

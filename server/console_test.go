package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

func TestTheConsoleIsServedAtTheRootBesideTheAPI(t *testing.T) {
	h := newHarness(t)
	r := h.do(http.MethodGet, "/", nil, nil)
	expectStatus(t, r, http.StatusOK)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), `<label for="api-key">API key</label>`) ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("expected the console page with its policy, got %s %q", r.header.Get("Content-Type"), truncate(r.body))
	}
	if r := h.do(http.MethodHead, "/", nil, nil); r.status != http.StatusOK {
		t.Errorf("HEAD /: expected 200, got %d", r.status)
	}
	if r := h.do(http.MethodGet, "/console/app.js", nil, nil); r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/javascript") {
		t.Errorf("expected the console's script, got %d %s", r.status, r.header.Get("Content-Type"))
	}
	// The API's own answers are untouched: JSON errors, no page policy.
	r = h.do(http.MethodGet, "/v1/nope", nil, nil)
	expectError(t, r, http.StatusNotFound, connector.ENOTFOUND, "Not found")
	if r.header.Get("Content-Security-Policy") != "" {
		t.Errorf("expected the console's policy on the console only")
	}
}

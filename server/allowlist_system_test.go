package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// One address of every range the guard refuses in dev as in production.
// They are address literals: the API refuses them at submission, before
// any lookup or dial.
var privateHosts = []string{
	"10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
	"224.0.0.1", "198.18.0.1", "[::]", "[fe80::1]", "[fd00::1]", "[ff02::1]", "[::ffff:10.0.0.1]",
	"[::ffff:169.254.169.254]", "[::10.0.0.1]", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]",
	"[2001:0:4136:e378:8000:63bf:f5ff:fffe]",
}

func expectRefused(t *testing.T, what string, status int, body []byte) {
	t.Helper()
	var e struct{ Code string }
	json.Unmarshal(body, &e)
	if status != http.StatusBadRequest || e.Code != "url_not_allowed" {
		t.Errorf("%s: got %d %s; want 400 url_not_allowed", what, status, body)
	}
}

// The dev setup (loopback allowed) refuses every other private range for
// image URLs, callbacks and hook targets, and charges nothing for it.
func TestDevRefusesPrivateRangesForImagesCallbacksAndHooks(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	before := s.Credits()
	img := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	for _, host := range privateHosts {
		u := "http://" + host + ":8080/a.png"
		st, _, body := s.Request("POST", "/v1/jobs", "application/json", strings.NewReader(`{"image_url":"`+u+`"}`), auth)
		expectRefused(t, "image_url "+u, st, body)
		st, _, body = s.Request("POST", "/v1/jobs", "application/json",
			strings.NewReader(`{"image_base64":"`+img+`","callback_url":"`+u+`"}`), auth)
		expectRefused(t, "callback_url "+u, st, body)
		st, _, body = s.Request("POST", "/v1/hooks", "application/json",
			strings.NewReader(`{"target_url":"`+u+`","event":"job.finished"}`), auth)
		expectRefused(t, "target_url "+u, st, body)
	}
	if got := s.Credits(); got != before {
		t.Errorf("credits went from %d to %d for refused requests", before, got)
	}
	_, _, list := s.Request("GET", "/v1/jobs", "", nil, auth)
	if strings.Contains(string(list), `"id"`) {
		t.Errorf("refused requests left jobs behind: %s", list)
	}
}

// Without dev's loopback, IMGFLOW_ALLOW_HOSTS opens exactly what it names:
// the sample server's host:port serves the image, and a receiver on the
// same loopback address but another port stays refused.
func TestAllowHostsOpensOnlyTheNamedHostPort(t *testing.T) {
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer other.Close()
	samples := httptest.NewServer(http.FileServer(http.Dir(images.Path(""))))
	defer samples.Close()
	samplesHost := strings.TrimPrefix(samples.URL, "http://")
	s := startSystem(t, func(o *systemtest.Options) {
		o.AllowLoopback = false
		o.AllowHosts = []string{samplesHost}
	})
	auth := map[string]string{"X-API-Key": s.Key}
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"http://`+samplesHost+`/photo.png"}`), auth)
	s.ExpectCompressed(st, body, "image/png")

	st, _, body = s.Request("POST", "/v1/jobs", "application/json",
		strings.NewReader(`{"image_url":"http://`+samplesHost+`/photo.png","callback_url":"`+other.URL+`/cb"}`), auth)
	expectRefused(t, "callback_url on another port", st, body)
	if hits != 0 {
		t.Errorf("the receiver on another port got %d requests", hits)
	}
}

package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// stoppableUpstream is the reference compression API on its own listener,
// so that a test can stop it (its port then refuses connections) while the
// API it serves keeps running.
type stoppableUpstream struct {
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
}

func newStoppableUpstream(t *testing.T) *stoppableUpstream {
	u := &stoppableUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*u.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// serve answers with the reference upstream over ledger.
func (u *stoppableUpstream) serve(ledger *refupstream.Ledger) {
	var h http.Handler = refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	u.handler.Store(&h)
}

// redisKeys counts the keys of the test's prefix: everything the API and
// the reference upstream wrote.
func (h *harness) redisKeys() int {
	h.t.Helper()
	n := 0
	iter := h.redis.Client.Scan(context.Background(), 0, h.redis.Prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// failOpenHarness is the API with an upstream the test can stop, a clock it
// can move, and a short key-check cache.
func failOpenHarness(t *testing.T) (*harness, *stoppableUpstream, *testClock) {
	up := newStoppableUpstream(t)
	clock := &testClock{now: time.Now()}
	h := newHarness(t, func(c *harnessConfig) {
		c.Compressor = upstream.New(up.srv.URL + "/api")
		c.Now = clock.Now
		c.PreflightTTL = 200 * time.Millisecond
	})
	up.serve(h.ledger)
	return h, up, clock
}

// expireKeyChecks lets the cached key checks (Redis and this process's
// memo) expire, so the next request must ask the upstream again.
func (h *harness) expireKeyChecks(clock *testClock) {
	if h.redis.Mini != nil {
		h.redis.Mini.FastForward(time.Second)
	} else {
		time.Sleep(300 * time.Millisecond) // real Redis expires the 200 ms entries
	}
	clock.advance(2 * time.Second)
}

// TestUpstreamDownServesConfirmedKeysAndRefusesMadeUpOnes: with the
// compression API stopped, a key it confirmed lately still creates jobs and
// reads them, while made-up keys get 503 upstream_unavailable with
// Retry-After on every route and leave nothing in Redis or the queue.
func TestUpstreamDownServesConfirmedKeysAndRefusesMadeUpOnes(t *testing.T) {
	h, up, clock := failOpenHarness(t)
	imageURL := map[string]any{"image_url": "https://images.example.com/cat.png"}
	expectStatus(t, h.postJSON("/v1/jobs", imageURL, nil), http.StatusAccepted) // the key is confirmed here

	up.srv.Close()
	h.expireKeyChecks(clock)
	keysBefore, queuedBefore := h.redisKeys(), len(h.queue.enqueued())

	// About 1 MiB of base64 per job (a PNG, padded), as a flow sending an
	// image inline would.
	png := append(images.Read(t, "photo.png"), make([]byte, 640<<10)...)
	big := fmt.Sprintf(`{"image_base64": %q}`, base64.StdEncoding.EncodeToString(png))
	for i := range 50 {
		key := fmt.Sprintf("made-up-key-%02d", i)
		var r *response
		switch i % 5 {
		case 0: // a job, the key in a header
			r = h.postJSON("/v1/jobs", big, map[string]string{"X-API-Key": key})
		case 1: // a job, the key in the body
			r = h.do(http.MethodPost, "/v1/jobs", strings.NewReader(`{"api_key": "`+key+`", "image_url": "https://images.example.com/cat.png"}`),
				map[string]string{"Content-Type": "application/json"})
		case 2: // a hook
			r = h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/in", "event": "job.finished"},
				map[string]string{"X-API-Key": key})
		case 3: // the key's jobs
			r = h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"X-API-Key": key})
		case 4: // the key's hooks
			r = h.do(http.MethodGet, "/v1/hooks", nil, map[string]string{"Authorization": "Bearer " + key})
		}
		expectError(t, r, http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "cannot check this key")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("request %d: 503 without Retry-After", i)
		}
	}
	if after := h.redisKeys(); after != keysBefore {
		t.Errorf("Redis keys %d -> %d after 50 made-up keys; want nothing stored", keysBefore, after)
	}
	if n := len(h.queue.enqueued()); n != queuedBefore {
		t.Errorf("queue %d -> %d tasks after 50 made-up keys; want nothing queued", queuedBefore, n)
	}

	// The confirmed key is served through the outage.
	r := h.postJSON("/v1/jobs", imageURL, nil)
	expectStatus(t, r, http.StatusAccepted)
	expectStatus(t, h.do(http.MethodGet, "/v1/jobs/"+r.str("id"), nil, map[string]string{"X-API-Key": h.key}), http.StatusOK)
	// /v1/account needs the live answer, which cannot be had.
	expectError(t, h.do(http.MethodGet, "/v1/account", nil, map[string]string{"X-API-Key": h.key}),
		http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "")

	// Past the grace (24 h by default), the confirmation no longer counts.
	clock.advance(24*time.Hour + time.Minute)
	expectError(t, h.postJSON("/v1/jobs", imageURL, nil), http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "")
}

// TestKeyGraceIsConfigurable: a shorter IMGFLOW_KEY_GRACE ends the fail-open
// for a confirmed key sooner.
func TestKeyGraceIsConfigurable(t *testing.T) {
	up := newStoppableUpstream(t)
	clock := &testClock{now: time.Now()}
	h := newHarness(t, func(c *harnessConfig) {
		c.Compressor = upstream.New(up.srv.URL + "/api")
		c.Now = clock.Now
		c.PreflightTTL = 200 * time.Millisecond
		c.KeyGrace = time.Hour
	})
	up.serve(h.ledger)
	expectStatus(t, h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"X-API-Key": h.key}), http.StatusOK)
	up.srv.Close()
	h.expireKeyChecks(clock)
	expectStatus(t, h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"X-API-Key": h.key}), http.StatusOK)
	clock.advance(time.Hour)
	expectError(t, h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"X-API-Key": h.key}),
		http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "")
}

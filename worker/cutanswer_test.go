package worker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/upstream"
	reference "github.com/imgflow/imgflow/fixtures/upstream"
)

// spoilFirstAnswer puts a proxy between the client and the reference
// upstream that spoils the first 200 after the upstream charged it: cut
// off mid-body (the connection closed) or replaced by text that is not
// JSON. Later answers pass whole.
func spoilFirstAnswer(t *testing.T, h *harness, apiURL string, cut bool) {
	t.Helper()
	var spoiled atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, apiURL+r.URL.Path, r.Body)
		if err != nil {
			t.Errorf("proxy: %v", err)
			return
		}
		req.Header = r.Header.Clone()
		req.ContentLength = r.ContentLength
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		if resp.StatusCode == http.StatusOK && spoiled.CompareAndSwap(false, true) {
			if cut {
				w.WriteHeader(http.StatusOK)
				w.Write(body[:len(body)/2])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			body = []byte("<html>Bad gateway</html>")
			w.Header().Del("Content-Length")
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(bytes.Clone(body))
	}))
	t.Cleanup(proxy.Close)
	h.cfg.Compressor = upstream.New(proxy.URL + "/api")
}

// A 200 whose body never arrives whole was charged, but its answer is
// lost: the call has no answer. The next run calls again with the job's
// Idempotency-Key; an upstream honouring it replays the charged answer for
// free, and one that ignores it charges again and the job says its charge
// is uncertain. The job never fails charged with its call taken as free.
func TestA200CutOffOrUnreadableIsACallWithoutAnAnswer(t *testing.T) {
	for name, c := range map[string]struct {
		cut, ignore bool
		credits     int64
		uncertain   bool
	}{
		"cut off, key honoured":  {cut: true, credits: 500 - 1},
		"cut off, key ignored":   {cut: true, ignore: true, credits: 500 - 2, uncertain: true},
		"not JSON, key honoured": {credits: 500 - 1},
		"not JSON, key ignored":  {ignore: true, credits: 500 - 2, uncertain: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			ledger, imgURL := withReferenceUpstreamConfig(t, h, reference.Config{IgnoreIdempotencyKey: c.ignore})
			api := httptest.NewServer(reference.NewServer(reference.Config{
				Ledger: ledger, Logger: testLogger(), IgnoreIdempotencyKey: c.ignore,
			}))
			t.Cleanup(api.Close)
			spoilFirstAnswer(t, h, api.URL, c.cut)
			h.start()
			job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: imgURL + "/photo.png"}, "")
			h.enqueue(job.ID)

			got := h.waitJob(job.ID, "finished", finished)
			if got.Status != connector.StatusCompleted {
				t.Fatalf("expected the job completed by a second call, got %s %+v", got.Status, got.Error)
			}
			acct, err := ledger.Lookup(context.Background(), h.apiKey)
			if err != nil {
				t.Fatal(err)
			}
			if acct.CreditsRemaining != c.credits || got.UpstreamCalls != 2 || got.ChargeUncertain != c.uncertain {
				t.Errorf("credits %d, upstream_calls %d, charge_uncertain %v; want %d, 2, %v",
					acct.CreditsRemaining, got.UpstreamCalls, got.ChargeUncertain, c.credits, c.uncertain)
			}
		})
	}
}

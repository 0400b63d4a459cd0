package worker_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// TestOneKeyCannotStarveAnother: key A fills its cap of unfinished jobs with
// image URLs that stall, its next jobs are refused with 429, and key B's job
// still runs to completion while A's fetches are stalled.
func TestOneKeyCannotStarveAnother(t *testing.T) {
	s := startSystem(t, func(o *systemtest.Options) { o.MaxJobsPerKey = 2 }) // the worker runs 4 at once
	keyB, _, err := s.Ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	png := images.Read(t, "photo.png")

	// A host that sends the headers and one byte at a time until released.
	release := make(chan struct{})
	var once sync.Once
	unstall := func() { once.Do(func() { close(release) }) }
	arrived := make(chan string, 16)
	var answered atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer answered.Add(1)
		arrived <- r.URL.Path
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", strconv.Itoa(len(png)))
		sent := 0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for sent < len(png)-1 {
			select {
			case <-release:
				w.Write(png[sent:])
				return
			case <-tick.C:
				w.Write(png[sent : sent+1]) // errors ignored: stay stalled until released
				w.(http.Flusher).Flush()
				sent++
			}
		}
		<-release
		w.Write(png[sent:])
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(unstall) // before slow.Close, which waits for the handlers

	authA := map[string]string{"X-API-Key": s.Key}
	var accepted, refused int
	var idsA []string
	for i := range 6 {
		st, h, body := s.Request("POST", "/v1/jobs", "application/json",
			strings.NewReader(fmt.Sprintf(`{"image_url":"%s/a%d.png"}`, slow.URL, i)), authA)
		switch {
		case st == http.StatusAccepted:
			accepted++
			idsA = append(idsA, systemtest.DecodeJob(t, st, body).ID)
		case st == http.StatusTooManyRequests && strings.Contains(string(body), `"too_many_jobs"`) && h.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("key A job %d: %d %s (Retry-After %q)", i, st, body, h.Get("Retry-After"))
		}
	}
	if accepted != 2 || refused != 4 {
		t.Fatalf("key A: %d accepted, %d refused with too_many_jobs; want 2 and 4 (cap 2)", accepted, refused)
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("key A's fetches never reached the slow host")
		}
	}

	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+base64.StdEncoding.EncodeToString(png)+`"}`), map[string]string{"X-API-Key": keyB})
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d of key A's fetches were answered before key B's job ended; they should still be stalled", n)
	}
	s.ExpectCompressed(st, body, "image/png")
	// Order, not time: B finished while A's jobs were still unfinished.
	for _, id := range idsA {
		st, _, body := s.Request("GET", "/v1/jobs/"+id, "", nil, authA)
		if job := systemtest.DecodeJob(t, st, body); job.Status != "queued" && job.Status != "processing" {
			t.Errorf("key A's job %s when key B's ended; want it still stalled, unfinished", body)
		}
	}
	unstall()
}

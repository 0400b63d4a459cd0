package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Batches under the same faults: batches of batchItems images, each sent
// with an Idempotency-Key and retried with it as a flow would, one of them
// while serve is killed mid-creation. What a user relies on:
//
//   - every batch answered 2xx finishes (every item completed or failed),
//     whole: as many items as were sent;
//   - its callback gets exactly one batch.finished event (one webhook-id,
//     signed), however many times it is retried;
//   - no batch exists that no client was given (a half-made batch of a
//     killed request is finished for its retry, or removed);
//   - credits == completed items (checked with the jobs: items are jobs of
//     the key).

// batchItems is the size of each batch.
const batchItems = 200

// setVariants is each responsive set's sizes: a set is a batch whose
// items are its variants, made from one upload, so it runs through the
// same checks with len(setVariants) items.
var setVariants = []map[string]string{
	{"id": "sm", "resize": "80x"},
	{"id": "md", "resize": "160x", "convert": "webp"},
	{"id": "lg", "resize": "240x"},
}

// batchOutcome is what the client saw for one batch's Idempotency-Key.
type batchOutcome struct {
	key   string
	items int // how many items the batch was sent with
	ids   map[string]bool
	tries int
}

// postBatch sends a batch of distinct images (so none is a dedupe repeat)
// with its Idempotency-Key and callback URL.
func (c *client) postBatch(key, callback string) (string, int) {
	items := make([]map[string]string, batchItems)
	for i := range items {
		items[i] = map[string]string{"image_base64": base64.StdEncoding.EncodeToString(distinctPNG(c.small, key+"-"+strconv.Itoa(i)))}
	}
	body, _ := json.Marshal(map[string]any{"items": items, "callback_url": callback})
	return c.postKeyed("/v1/batches", "batch key", key, body)
}

// postSet sends a responsive set of one distinct image with its
// Idempotency-Key and callback URL.
func (c *client) postSet(key, callback string) (string, int) {
	body, _ := json.Marshal(map[string]any{"image_base64": base64.StdEncoding.EncodeToString(distinctPNG(c.image, key)),
		"variants": setVariants, "callback_url": callback})
	return c.postKeyed("/v1/jobs", "set key", key, body)
}

// submitBatch sends a batch (or, with set, a responsive set) until it is
// accepted, retrying with the same key (no answer, 503, 409), and once
// more after its acceptance.
func (c *client) submitBatch(ctx context.Context, key, callback string, set bool) *batchOutcome {
	o := &batchOutcome{key: key, items: batchItems, ids: map[string]bool{}}
	post := c.postBatch
	if set {
		o.items, post = len(setVariants), c.postSet
	}
	again := true
	for ctx.Err() == nil {
		o.tries++
		id, status := post(key, callback)
		if status == http.StatusAccepted || status == http.StatusOK {
			o.ids[id] = true
			if !again {
				return o
			}
			again = false
			continue
		}
		if status != 0 && status != http.StatusServiceUnavailable && status != http.StatusConflict {
			return o
		}
		time.Sleep(300 * time.Millisecond)
	}
	return o
}

// eventReceiver is the batches' callback: it counts batch.finished
// deliveries by batch and webhook-id.
type eventReceiver struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	got map[string]map[string]int // batch id -> webhook-id -> deliveries
	bad []string
}

func startReceiver() (*eventReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &eventReceiver{url: "http://" + ln.Addr().String() + "/batch", got: map[string]map[string]int{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *eventReceiver) serve(w http.ResponseWriter, req *http.Request) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	data, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := json.Unmarshal(data, &ev); err != nil || ev.Type != "batch.finished" || ev.Data.Status != "finished" {
		r.bad = append(r.bad, fmt.Sprintf("callback got %.200s", data))
	} else if req.Header.Get("webhook-signature") == "" || req.Header.Get("webhook-id") == "" {
		r.bad = append(r.bad, "a batch.finished delivery without webhook-id or signature")
	} else {
		if r.got[ev.Data.ID] == nil {
			r.got[ev.Data.ID] = map[string]int{}
		}
		r.got[ev.Data.ID][req.Header.Get("webhook-id")]++
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *eventReceiver) events(batchID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[batchID])
}

func (r *eventReceiver) close() { r.srv.Close() }

// batchView is what the suite reads of a batch.
type batchView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Counts struct {
		Total, Completed, Failed int
	} `json:"counts"`
}

func (s *system) getBatch(id string) *batchView {
	var b batchView
	if status, err := s.get("/v1/batches/"+id, &b); err != nil || status != http.StatusOK {
		return nil
	}
	return &b
}

// listBatches reads every page of GET /v1/batches.
func (s *system) listBatches() ([]string, error) {
	var ids []string
	cursor := ""
	for {
		var page struct {
			Batches    []batchView `json:"batches"`
			NextCursor string      `json:"next_cursor"`
		}
		if _, err := s.get("/v1/batches?limit=100&cursor="+cursor, &page); err != nil {
			return nil, err
		}
		for _, b := range page.Batches {
			ids = append(ids, b.ID)
		}
		if page.NextCursor == "" {
			return ids, nil
		}
		cursor = page.NextCursor
	}
}

// checkBatches judges the batches: fail is told each violation.
func (s *system) checkBatches(outcomes []*batchOutcome, r *eventReceiver, fail func(string, ...any)) {
	given := map[string]bool{}
	var ids []string
	items := map[string]int{}
	for _, o := range outcomes {
		switch len(o.ids) {
		case 0:
			fail("batch key %s never accepted after %d tries", o.key, o.tries)
		case 1:
			for id := range o.ids {
				ids = append(ids, id)
				given[id] = true
				items[id] = o.items
			}
		default:
			fail("batch key %s got %d different batches", o.key, len(o.ids))
		}
	}
	deadline := time.Now().Add(4 * time.Minute)
	finished, events := 0, 0
	for _, id := range ids {
		for {
			b := s.getBatch(id)
			if b != nil && b.Status == "finished" && r.events(id) > 0 {
				if n := items[id]; b.Counts.Total != n || b.Counts.Completed+b.Counts.Failed != n {
					fail("batch %s finished with counts %+v, want %d items ended", id, b.Counts, n)
				}
				finished++
				break
			}
			if time.Now().After(deadline) {
				if b == nil {
					fail("batch %s lost: accepted, and not found 4 min after the load", id)
				} else {
					fail("batch %s not finished with its event 4 min after the load: %s %+v, %d event(s)", id, b.Status, b.Counts, r.events(id))
				}
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	time.Sleep(2 * time.Second) // a duplicate event would come within the retry schedule's first step
	for _, id := range ids {
		n := r.events(id)
		events += n
		if n > 1 {
			fail("batch %s got %d batch.finished events (distinct webhook-ids), want 1", id, n)
		}
	}
	listed, err := s.listBatches()
	if err != nil {
		fail("listing batches: %v", err)
	}
	sort.Strings(listed)
	for _, id := range listed {
		if !given[id] {
			fail("batch %s exists and no client was given it (half made by a killed request, or made twice)", id)
		}
	}
	r.mu.Lock()
	for _, b := range r.bad {
		fail("%s", b)
	}
	r.mu.Unlock()
	fmt.Printf("faults: batches: %d accepted, %d finished, %d batch.finished event(s), %d listed\n", len(ids), finished, events, len(listed))
}

// waitBatchMaking waits until some batch is being made (its decision
// still creating, internal/app), polling Redis, and reports whether one
// was seen within wait.
func (s *system) waitBatchMaking(ctx context.Context, wait time.Duration) bool {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
		keys, err := s.rdb.Keys(ctx, "imgflow:batchmaking:*").Result()
		if err != nil {
			continue
		}
		for _, k := range keys {
			if s.rdb.HGet(ctx, k, "state").Val() == "creating" {
				return true
			}
		}
	}
	return false
}

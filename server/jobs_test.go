package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

func TestCreateJobAcceptsEveryInputForm(t *testing.T) {
	h := newHarness(t)
	png := images.Read(t, "photo.png")
	b64 := base64.StdEncoding.EncodeToString(png)

	t.Run("image_url", func(t *testing.T) {
		r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png", "metadata": map[string]any{"row": 7}}, nil)
		expectStatus(t, r, http.StatusAccepted)
		if r.str("status") != "queued" || r.str("input.kind") != "url" || r.num("metadata.row") != 7 {
			t.Errorf("job = %s; want queued url job echoing metadata", r.body)
		}
		if loc := r.header.Get("Location"); loc != h.url+"/v1/jobs/"+r.str("id")+"?poll=1" {
			t.Errorf("Location = %q, want %s/v1/jobs/%s?poll=1", loc, h.url, r.str("id"))
		}
		// The Location answers 202 until the job is done, then 200.
		auth := map[string]string{"X-API-Key": h.key}
		poll := h.do(http.MethodGet, strings.TrimPrefix(r.header.Get("Location"), h.url), nil, auth)
		expectStatus(t, poll, http.StatusAccepted)
		h.finish(r.str("id"), []byte("x"))
		expectStatus(t, h.do(http.MethodGet, strings.TrimPrefix(r.header.Get("Location"), h.url), nil, auth), http.StatusOK)
	})
	t.Run("image_base64", func(t *testing.T) {
		r := h.postJSON("/v1/jobs", map[string]any{"image_base64": b64, "filename": "photo.png"}, nil)
		expectStatus(t, r, http.StatusAccepted)
		stored, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.InputBlobKey(r.str("id")))
		if err != nil || !bytes.Equal(stored, png) {
			t.Fatalf("input blob = %d bytes, %v; want the decoded image (%d bytes)", len(stored), err, len(png))
		}
		if r.str("input.mime_type") != "image/png" || r.num("input.size") != float64(len(png)) {
			t.Errorf("input = %v; want image/png of %d bytes", r.get("input"), len(png))
		}
	})
	t.Run("data URI in the body, key in the body", func(t *testing.T) {
		r := h.do(http.MethodPost, "/v1/jobs", strings.NewReader(`{"api_key":"`+h.key+`","image_base64":"data:image/png;base64,`+b64+`"}`),
			map[string]string{"Content-Type": "application/json"})
		expectStatus(t, r, http.StatusAccepted)
	})
	t.Run("upload under any field name, no filename", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"metadata": `{"a":1}`}, "image", "", png)
		r := h.do(http.MethodPost, "/v1/jobs", body, map[string]string{"Content-Type": ct, "Authorization": "Bearer " + h.key})
		expectStatus(t, r, http.StatusAccepted)
		if r.str("input.kind") != "upload" || r.num("metadata.a") != 1 {
			t.Errorf("job = %s; want an upload job with metadata", r.body)
		}
	})
	t.Run("upload with the key as a form field", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"api_key": h.key}, "file", "photo.png", png)
		r := h.do(http.MethodPost, "/v1/jobs", body, map[string]string{"Content-Type": ct})
		expectStatus(t, r, http.StatusAccepted)
		if r.str("input.filename") != "photo.png" {
			t.Errorf("filename = %q, want photo.png", r.str("input.filename"))
		}
	})
	if got := len(h.queue.enqueued()); got != 5 {
		t.Errorf("enqueued %d jobs, want 5", got)
	}
}

func TestCreateJobRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	gif := base64.StdEncoding.EncodeToString(images.Read(t, "animated.gif"))
	huge := base64.StdEncoding.EncodeToString(make([]byte, connector.MaxImageSize+1))
	cases := []struct {
		name   string
		body   string
		ctype  string
		status int
		code   connector.ErrorCode
		text   string
	}{
		{"bad JSON", `{"image_url": `, "application/json", 400, connector.EINVALID, "not valid JSON"},
		{"not an object", `["x"]`, "application/json", 400, connector.EINVALID, "JSON object"},
		{"wrong field type", `{"image_url": 5}`, "application/json", 400, connector.EINVALID, "image_url"},
		{"empty body", ``, "application/json", 400, connector.EINVALID, "empty"},
		{"wrong content type", `image_url=x`, "application/x-www-form-urlencoded", 415, connector.EMEDIATYPE, "Content-Type must be"},
		{"no content type", `{}`, "", 415, connector.EMEDIATYPE, "Content-Type must be"},
		{"no image", `{"filename":"a.png"}`, "application/json", 400, connector.EINVALID, "image_url, image_base64"},
		{"two images", `{"image_url":"https://x.example/a.png","image_base64":"` + png + `"}`, "application/json", 400, connector.EINVALID, "exactly one"},
		{"bad base64", `{"image_base64":"***not base64***"}`, "application/json", 400, connector.EINVALID, "not valid base64"},
		{"base64 of a GIF", `{"image_base64":"` + gif + `"}`, "application/json", 400, connector.EFORMAT, "not a PNG, JPEG, WebP or AVIF"},
		{"base64 of text", `{"image_base64":"` + base64.StdEncoding.EncodeToString([]byte("hello")) + `"}`, "application/json", 400, connector.EFORMAT, "not a PNG"},
		{"base64 over 10 MiB", `{"image_base64":"` + huge + `"}`, "application/json", 413, connector.ETOOLARGE, "maximum size"},
		{"relative URL", `{"image_url":"/cat.png"}`, "application/json", 400, connector.EINVALID, "image_url"},
		{"ftp URL", `{"image_url":"ftp://example.com/cat.png"}`, "application/json", 400, connector.EINVALID, "image_url"},
		{"loopback URL", `{"image_url":"http://127.0.0.1/cat.png"}`, "application/json", 400, connector.EURLREFUSED, "image_url"},
		{"metadata not an object", `{"image_url":"https://x.example/a.png","metadata":[1]}`, "application/json", 400, connector.EINVALID, "metadata"},
		{"private callback", `{"image_url":"https://x.example/a.png","callback_url":"http://10.0.0.1/hook"}`, "application/json", 400, connector.EURLREFUSED, "callback_url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"X-API-Key": h.key}
			if tc.ctype != "" {
				hdr["Content-Type"] = tc.ctype
			}
			r := h.do(http.MethodPost, "/v1/jobs", strings.NewReader(tc.body), hdr)
			expectError(t, r, tc.status, tc.code, tc.text)
		})
	}
	if n := len(h.queue.enqueued()); n != 0 {
		t.Errorf("%d jobs enqueued from bad input, want 0", n)
	}
}

func TestCreateJobRejectsOversizeUploadBeforeReadingIt(t *testing.T) {
	h := newHarness(t)
	body, ct := multipartBody(t, nil, "file", "big.png", make([]byte, connector.MaxImageSize+1))
	r := h.do(http.MethodPost, "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectError(t, r, http.StatusRequestEntityTooLarge, connector.ETOOLARGE, "maximum size")

	body, ct = multipartBody(t, nil, "", "", nil)
	r = h.do(http.MethodPost, "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "send an image")
}

func TestCreateJobChecksTheKey(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"image_url": "https://images.example.com/cat.png"}

	r := h.do(http.MethodPost, "/v1/jobs", strings.NewReader(`{"image_url":"https://images.example.com/cat.png"}`), map[string]string{"Content-Type": "application/json"})
	expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "API key required")

	r = h.postJSON("/v1/jobs", body, map[string]string{"X-API-Key": "sk_wrong_key_123456"})
	expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "Invalid API key")

	broke, _, err := h.ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if _, err := h.ledger.Charge(context.Background(), broke); err != nil {
			t.Fatal(err)
		}
	}
	r = h.postJSON("/v1/jobs", body, map[string]string{"X-API-Key": broke})
	expectError(t, r, http.StatusTooManyRequests, connector.ENOCREDITS, "Insufficient credits")
	if v, ok := r.get("credits_remaining").(float64); !ok || v != 0 {
		t.Errorf("credits_remaining = %v, want 0", r.get("credits_remaining"))
	}
	if n := len(h.queue.enqueued()); n != 0 {
		t.Errorf("%d jobs enqueued with bad keys, want 0", n)
	}
}

func TestIdempotencyKeyReplaysConflictsAndMismatches(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"image_url": "https://images.example.com/cat.png"}
	idem := map[string]string{"Idempotency-Key": "zap-run-1"}

	first := h.postJSON("/v1/jobs", body, idem)
	expectStatus(t, first, http.StatusAccepted)
	again := h.postJSON("/v1/jobs", body, idem)
	expectStatus(t, again, http.StatusAccepted)
	if again.str("id") != first.str("id") {
		t.Fatalf("replay made job %s, want the first job %s", again.str("id"), first.str("id"))
	}
	if n := len(h.queue.enqueued()); n != 1 {
		t.Fatalf("enqueued %d times, want once", n)
	}

	other := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/dog.png"}, idem)
	expectError(t, other, http.StatusUnprocessableEntity, connector.EMISMATCH, "different request")

	// Another key may use the same Idempotency-Key for its own job.
	key2, _, _ := h.ledger.CreateAccount(context.Background(), 0)
	mine := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "zap-run-1", "X-API-Key": key2})
	expectStatus(t, mine, http.StatusAccepted)
	if mine.str("id") == first.str("id") {
		t.Fatal("another key's request replayed the first key's job")
	}

}

func TestIdempotencyKeyInFlightIsConflict(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.IdempotencyInFlightWait = 300 * time.Millisecond })
	body := map[string]any{"image_url": "https://images.example.com/cat.png"}
	// Learn the fingerprint of this body by making the request once under
	// another Idempotency-Key, then reserve a fresh one with it.
	first := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "probe"})
	expectStatus(t, first, http.StatusAccepted)
	rec, _, err := h.store.Idempotency.Reserve(context.Background(), h.keys.KeyHash(h.key), "probe", "", "probe-job")
	if err != nil || rec == nil {
		t.Fatalf("reading the probe record: %v", err)
	}
	if _, ok, err := h.store.Idempotency.Reserve(context.Background(), h.keys.KeyHash(h.key), "busy", rec.Fingerprint, "busy-job"); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	r := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "busy"})
	expectError(t, r, http.StatusConflict, connector.ECONFLICT, "still in flight")
}

// A retry that meets its first request still in flight waits for it and
// answers with its job, rather than 409 (which a flow would only retry).
func TestIdempotencyKeyInFlightIsWaitedFor(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"image_url": "https://images.example.com/cat.png"}
	first := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "probe"})
	expectStatus(t, first, http.StatusAccepted)
	owner := h.keys.KeyHash(h.key)
	rec, _, err := h.store.Idempotency.Reserve(context.Background(), owner, "probe", "", "probe-job")
	if err != nil || rec == nil {
		t.Fatalf("reading the probe record: %v", err)
	}
	held := uuid.Must(uuid.NewV7()).String()
	if _, ok, err := h.store.Idempotency.Reserve(context.Background(), owner, "busy", rec.Fingerprint, held); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	go func() { // the first request finishes 300 ms later
		time.Sleep(300 * time.Millisecond)
		h.store.Jobs.Create(context.Background(), &connector.Job{ID: held, Status: connector.StatusQueued, Owner: owner,
			Input: connector.JobInput{Kind: connector.InputURL, URL: "https://images.example.com/cat.png"}})
		h.store.Idempotency.Complete(context.Background(), owner, "busy", held, held)
	}()
	r := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "busy"})
	expectStatus(t, r, http.StatusAccepted)
	if r.str("id") != held {
		t.Fatalf("waiting retry got job %s, want the first request's %s", r.str("id"), held)
	}
}

// A serve killed while holding an Idempotency-Key (it reserved the key,
// perhaps made the job, and died before recording it): once its lease runs
// out (seconds), the flow's retry gets
// the job the dead request made, queued, or makes its own once (under its
// own id: had the dead request only stalled, neither takes back the
// other's).
func TestIdempotencyKeyRetryAfterAServerCrashGetsTheJobOnce(t *testing.T) {
	for _, made := range []bool{true, false} {
		t.Run(fmt.Sprintf("job made %v", made), func(t *testing.T) {
			h := newHarness(t, func(c *harnessConfig) { c.IdempotencyInFlightWait = 300 * time.Millisecond })
			ctx := context.Background()
			body := map[string]any{"image_url": "https://images.example.com/cat.png"}
			probe := h.postJSON("/v1/jobs", body, map[string]string{"Idempotency-Key": "probe"})
			expectStatus(t, probe, http.StatusAccepted)
			owner := h.keys.KeyHash(h.key)
			rec, _, err := h.store.Idempotency.Reserve(ctx, owner, "probe", "", "x")
			if err != nil {
				t.Fatal(err)
			}
			// The request that crashed: it reserved the key for job dead.
			dead := uuid.Must(uuid.NewV7()).String()
			if _, ok, err := h.store.Idempotency.Reserve(ctx, owner, "crashed", rec.Fingerprint, dead); err != nil || !ok {
				t.Fatalf("reserve: %v %v", ok, err)
			}
			if made {
				job := &connector.Job{ID: dead, Status: connector.StatusQueued, Owner: owner, SealedKey: h.keys.Seal(h.key),
					Input: connector.JobInput{Kind: connector.InputURL, URL: "https://images.example.com/cat.png"}}
				if err := h.store.Jobs.Create(ctx, job); err != nil {
					t.Fatal(err)
				}
			}
			retry := map[string]string{"Idempotency-Key": "crashed"}
			expectError(t, h.postJSON("/v1/jobs", body, retry), http.StatusConflict, connector.ECONFLICT, "still in flight")

			// Its lease runs out (seconds after the crash; here at once).
			h.redis.Client.Del(ctx, h.redis.Prefix+"idemlease:{"+owner+"}:crashed")
			got := h.postJSON("/v1/jobs", body, retry)
			expectStatus(t, got, http.StatusAccepted)
			want := dead
			if !made {
				if want = got.str("id"); want == dead || want == "" {
					t.Errorf("retry after a crash that made nothing gave job %q, want one of its own", want)
				}
			}
			if got.str("id") != want {
				t.Errorf("retry after the crash gave job %s, want the dead request's %s", got.str("id"), want)
			}
			again := h.postJSON("/v1/jobs", body, retry)
			if again.str("id") != want {
				t.Errorf("a second retry gave job %s, want %s", again.str("id"), want)
			}
			n := 0
			for _, id := range h.queue.enqueued() {
				if id == want {
					n++
				}
			}
			if n != 1 {
				t.Errorf("job %s queued %d times by the retries, want once", want, n)
			}
		})
	}
}

func TestWaitReturnsTheFinishedJob(t *testing.T) {
	h := newHarness(t)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ids := h.queue.enqueued(); len(ids) == 1 {
				h.finish(ids[0], []byte("compressed"))
				return
			}
		}
	}()
	r := h.postJSON("/v1/jobs?wait=20", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	expectStatus(t, r, http.StatusOK)
	if r.str("status") != "completed" || !strings.Contains(r.str("result.file_url"), "/file?token=") {
		t.Fatalf("job = %s; want completed with a signed file_url", r.body)
	}

	// Nothing finishes this one: after the wait it is 202 to poll.
	r = h.postJSON("/v1/jobs?wait=1", map[string]any{"image_url": "https://images.example.com/dog.png"}, nil)
	expectStatus(t, r, http.StatusAccepted)

	r = h.postJSON("/v1/jobs?wait=26", map[string]any{"image_url": "https://images.example.com/dog.png"}, nil)
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "wait")
}

func TestJobsBelongToTheirKey(t *testing.T) {
	h := newHarness(t)
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	id := r.str("id")
	h.finish(id, []byte("compressed bytes"))

	own := h.do(http.MethodGet, "/v1/jobs/"+id+"?include=data", nil, map[string]string{"X-API-Key": h.key})
	expectStatus(t, own, http.StatusOK)
	if own.str("result.compressed_data") != base64.StdEncoding.EncodeToString([]byte("compressed bytes")) {
		t.Errorf("compressed_data = %q, want the stored bytes", own.str("result.compressed_data"))
	}

	other, _, _ := h.ledger.CreateAccount(context.Background(), 0)
	for _, path := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/file"} {
		r := h.do(http.MethodGet, path, nil, map[string]string{"X-API-Key": other})
		expectError(t, r, http.StatusNotFound, connector.ENOTFOUND, "not found")
	}
	if r := h.do(http.MethodGet, "/v1/jobs/"+id, nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("without a key: status %d, want 401", r.status)
	}
}

func TestFileURLDownloadsWithoutTheKey(t *testing.T) {
	h := newHarness(t)
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	id := r.str("id")
	h.finish(id, []byte("\x89PNG compressed"))
	job := h.do(http.MethodGet, "/v1/jobs/"+id, nil, map[string]string{"X-API-Key": h.key})
	fileURL := job.str("result.file_url")
	if !strings.HasPrefix(fileURL, h.url+"/v1/jobs/"+id+"/file?token=") {
		t.Fatalf("file_url = %q, want a signed link under %s", fileURL, h.url)
	}
	file := h.do(http.MethodGet, strings.TrimPrefix(fileURL, h.url), nil, nil)
	expectStatus(t, file, http.StatusOK)
	if string(file.body) != "\x89PNG compressed" || file.header.Get("Content-Type") != "image/png" ||
		!strings.Contains(file.header.Get("Content-Disposition"), "out.png") {
		t.Errorf("file = %q %v; want the bytes as image/png attachment out.png", file.body, file.header)
	}
	forged := h.do(http.MethodGet, "/v1/jobs/"+id+"/file?token=9999999999.AAAA", nil, nil)
	expectError(t, forged, http.StatusNotFound, connector.ENOTFOUND, "invalid or has expired")
}

func TestListJobsNewestFirstWithFilterAndCursor(t *testing.T) {
	h := newHarness(t)
	var ids []string
	for i := 0; i < 5; i++ {
		r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/" + string(rune('a'+i)) + ".png"}, nil)
		ids = append(ids, r.str("id"))
	}
	h.finish(ids[1], []byte("x"))
	h.finish(ids[3], []byte("x"))
	auth := map[string]string{"X-API-Key": h.key}

	page := h.do(http.MethodGet, "/v1/jobs?limit=2", nil, auth)
	expectStatus(t, page, http.StatusOK)
	jobs := page.get("jobs").([]any)
	if len(jobs) != 2 || jobs[0].(map[string]any)["id"] != ids[4] || jobs[1].(map[string]any)["id"] != ids[3] {
		t.Fatalf("first page = %s; want the two newest jobs, newest first", page.body)
	}
	next := h.do(http.MethodGet, "/v1/jobs?limit=2&cursor="+page.str("next_cursor"), nil, auth)
	if got := next.get("jobs").([]any)[0].(map[string]any)["id"]; got != ids[2] {
		t.Errorf("second page starts with %v, want %s", got, ids[2])
	}
	done := h.do(http.MethodGet, "/v1/jobs?status=completed", nil, auth)
	if got := len(done.get("jobs").([]any)); got != 2 {
		t.Errorf("completed jobs = %d, want 2", got)
	}
	expectError(t, h.do(http.MethodGet, "/v1/jobs?status=done", nil, auth), 400, connector.EINVALID, "status")
	expectError(t, h.do(http.MethodGet, "/v1/jobs?limit=101", nil, auth), 400, connector.EINVALID, "limit")
	// A cursor in another spelling of the same UUID would page from the wrong
	// place: only the form the API hands out is accepted.
	braced := "{" + page.str("next_cursor") + "}"
	expectError(t, h.do(http.MethodGet, "/v1/jobs?cursor="+braced, nil, auth), 400, connector.EINVALID, "cursor")
	expectError(t, h.do(http.MethodGet, "/v1/jobs?cursor="+strings.ToUpper(page.str("next_cursor")), nil, auth), 400, connector.EINVALID, "cursor")
}

func TestEnqueueFailureIs503AndLeavesNoQueuedJob(t *testing.T) {
	h := newHarness(t)
	h.queue.fail = &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue unavailable", RetryAfter: 5 * time.Second}
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	expectError(t, r, http.StatusServiceUnavailable, connector.EUNAVAILABLE, "queue unavailable")
	if r.header.Get("Retry-After") != "5" {
		t.Errorf("Retry-After = %q, want 5", r.header.Get("Retry-After"))
	}
	// The caller was told no job was made: no listing or polling trigger
	// may show one, whatever its status.
	list := h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"X-API-Key": h.key})
	if n := len(list.get("jobs").([]any)); n != 0 {
		t.Errorf("%d jobs listed after the enqueue failed, want 0: %s", n, list.body)
	}
}

func TestMultipartMetadataMustBeAJSONObject(t *testing.T) {
	h := newHarness(t)
	for _, bad := range []string{`{bad`, `[1,2]`, `"text"`, `{"a":1} trailing`} {
		body, ct := multipartBody(t, map[string]string{"metadata": bad}, "file", "photo.png", images.Read(t, "photo.png"))
		r := h.do(http.MethodPost, "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "metadata")
	}
}

// TestReplayReturnsTheJobEvenWhenTheBalanceIsNowZero: a flow whose first
// answer was lost retries with its Idempotency-Key; it must get its job,
// not a 429 because that job spent the last credit.
func TestReplayReturnsTheJobEvenWhenTheBalanceIsNowZero(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"image_url": "https://images.example.com/cat.png"}
	idem := map[string]string{"Idempotency-Key": "zap-last-credit"}
	first := h.postJSON("/v1/jobs", body, idem)
	expectStatus(t, first, http.StatusAccepted)
	for i := 0; i < 500; i++ {
		if _, err := h.ledger.Charge(context.Background(), h.key); err != nil {
			t.Fatal(err)
		}
	}
	// Refresh the cached key check, as a "test connection" would.
	expectStatus(t, h.do(http.MethodGet, "/v1/account", nil, map[string]string{"X-API-Key": h.key}), http.StatusOK)
	expectError(t, h.postJSON("/v1/jobs", body, nil), http.StatusTooManyRequests, connector.ENOCREDITS, "Insufficient credits")

	again := h.postJSON("/v1/jobs", body, idem)
	expectStatus(t, again, http.StatusAccepted)
	if again.str("id") != first.str("id") {
		t.Errorf("replay gave job %s, want %s", again.str("id"), first.str("id"))
	}
}

// A batch retry that meets its first request still in flight waits for it,
// as a job's does, and answers with its batch rather than 409 at once.
func TestBatchIdempotencyKeyInFlightIsWaitedFor(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"items": []map[string]any{{"image_url": "https://images.example.com/cat.png"}}}
	first := h.postJSON("/v1/batches", body, map[string]string{"Idempotency-Key": "probe"})
	expectStatus(t, first, http.StatusAccepted)
	owner := h.keys.KeyHash(h.key)
	rec, _, err := h.store.Idempotency.Reserve(context.Background(), owner, "batch:probe", "", "probe-batch")
	if err != nil || rec == nil {
		t.Fatalf("reading the probe record: %v", err)
	}
	if _, ok, err := h.store.Idempotency.Reserve(context.Background(), owner, "batch:busy", rec.Fingerprint, "held"); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	go func() { // the first request finishes 300 ms later, with the probe's batch
		time.Sleep(300 * time.Millisecond)
		h.store.Idempotency.Complete(context.Background(), owner, "batch:busy", "held", first.str("id"))
	}()
	r := h.postJSON("/v1/batches", body, map[string]string{"Idempotency-Key": "busy"})
	expectStatus(t, r, http.StatusAccepted)
	if r.str("id") != first.str("id") {
		t.Fatalf("waiting retry got batch %s, want the first request's %s", r.str("id"), first.str("id"))
	}
}

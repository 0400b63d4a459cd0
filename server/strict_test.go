package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/fixtures/images"
)

// stalledBody is a request body that sends nothing until told: a handler
// that answers without it has not read it.
type stalledBody struct {
	pr *io.PipeReader
	pw *io.PipeWriter
}

func newStalledBody() *stalledBody {
	pr, pw := io.Pipe()
	return &stalledBody{pr: pr, pw: pw}
}

// postStalled sends a request whose body declares size bytes and delivers
// what body gives.
func (h *harness) postStalled(path string, size int64, body io.Reader, header map[string]string) *response {
	h.t.Helper()
	r, err := h.tryPost(path, size, body, header)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) tryPost(path string, size int64, body io.Reader, header map[string]string) (*response, error) {
	req, _ := http.NewRequest(http.MethodPost, h.url+path, body)
	req.ContentLength = size
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out := &response{status: res.StatusCode, header: res.Header}
	out.body, _ = io.ReadAll(res.Body)
	return out, nil
}

func TestUnknownHeaderKeyIs401BeforeTheBodyIsRead(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/v1/jobs", "/v1/hooks"} {
		b := newStalledBody()
		r := h.postStalled(path, 14<<20, b.pr, map[string]string{"Content-Type": "application/json", "X-API-Key": "sk_unknown_key_0000"})
		b.pw.Close()
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"invalid_key"`) {
			t.Errorf("%s: %d %s; want 401 invalid_key with the body never sent", path, r.status, r.body)
		}
	}
}

func TestUnknownKeysGet401OnEveryRoute(t *testing.T) {
	h := newHarness(t)
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	id := r.str("id")
	h.finish(id, []byte("\x89PNG"))
	bad := map[string]string{"X-API-Key": "sk_unknown_key_0000"}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/" + id}, {"GET", "/v1/jobs/" + id + "/file"},
		{"GET", "/v1/hooks"}, {"GET", "/v1/hooks/0190c0de-0000-7000-8000-000000000000"},
		{"DELETE", "/v1/hooks/0190c0de-0000-7000-8000-000000000000"}, {"GET", "/v1/account"},
	} {
		r := h.do(rt.method, rt.path, nil, bad)
		expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "Invalid API key")
	}
	// The same key, known, reads its own job.
	expectStatus(t, h.do("GET", "/v1/jobs/"+id, nil, map[string]string{"X-API-Key": h.key}), http.StatusOK)
}

// TestReadsOfANeverConfirmedKeyWaitForTheKeyCheck: with the compression API
// down and no answer about the key, reads get 503 upstream_unavailable like
// jobs and hooks (the fail-open is bounded to keys confirmed within
// IMGFLOW_KEY_GRACE; failopen_test.go shows their polling goes on).
func TestReadsOfANeverConfirmedKeyWaitForTheKeyCheck(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.Compressor = upstream.New("http://127.0.0.1:1/api") })
	r := h.do("GET", "/v1/jobs", nil, map[string]string{"X-API-Key": "sk_never_seen_0000"})
	expectError(t, r, http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "")
}

func TestLargeBodiesBeyondTheCapGet503(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.MaxLargeBodies, c.LargeBodyWait = 1, 50*time.Millisecond })
	hdr := map[string]string{"Content-Type": "application/json", "X-API-Key": h.key}
	// A first body takes the only slot and stalls; a second large body then
	// waits 50 ms and gets 503. The client hands the first body over a
	// moment before the server reads it, so if the second won the slot
	// (its body ends after 2 s) the round is tried again.
	var first *stalledBody
	var done chan struct{}
	var r *response
	for round := 0; round < 10; round++ {
		first, done = newStalledBody(), make(chan struct{})
		go func(b *stalledBody, done chan struct{}) { h.tryPost("/v1/jobs", 1<<20, b.pr, hdr); close(done) }(first, done)
		if _, err := first.pw.Write([]byte(`{"image_base64":"`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		second := newStalledBody()
		stop := time.AfterFunc(2*time.Second, func() { second.pw.Close() })
		got, err := h.tryPost("/v1/jobs", 1<<20, second.pr, hdr)
		stop.Stop()
		second.pw.Close()
		if err == nil && got.status == http.StatusServiceUnavailable {
			r = got
			break
		}
		first.pw.Close()
		<-done
	}
	if r == nil {
		t.Fatal("a second large body was never refused while the first held the only slot")
	}
	if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), `"server_busy"`) {
		t.Errorf("503 = %s (Retry-After %q); want server_busy with Retry-After", r.body, r.header.Get("Retry-After"))
	}
	// Small bodies never wait for a slot.
	expectStatus(t, h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil), http.StatusAccepted)
	first.pw.CloseWithError(io.ErrUnexpectedEOF)
	<-done
	// The slot is free again.
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	big := `{"image_base64":"` + png + `","metadata":{"pad":"` + strings.Repeat("x", 300<<10) + `"}}`
	r = h.postStalled("/v1/jobs", int64(len(big)), strings.NewReader(big), hdr)
	if r.status == http.StatusServiceUnavailable {
		t.Errorf("after the first body ended: %d %s", r.status, r.body)
	}
}

func TestStrictInput(t *testing.T) {
	h := newHarness(t)
	png := images.Read(t, "photo.png")
	b64 := base64.StdEncoding.EncodeToString(png)
	gif := base64.StdEncoding.EncodeToString(images.Read(t, "animated.gif"))
	cases := []struct {
		name, path, body string
		field, text      string
	}{
		{"trailing garbage after a job", "/v1/jobs", `{"image_url":"https://images.example.com/a.png"} trailing`, "", "after the JSON object"},
		{"two job objects", "/v1/jobs", `{"image_url":"https://images.example.com/a.png"}{}`, "", "after the JSON object"},
		{"trailing garbage after a hook", "/v1/hooks", `{"target_url":"https://hooks.example.com/x"}]`, "", "after the JSON object"},
		{"wait NaN", "/v1/jobs?wait=NaN", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait fraction", "/v1/jobs?wait=1.5", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait hex float", "/v1/jobs?wait=0x1p3", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait hex", "/v1/jobs?wait=0x10", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait exponent", "/v1/jobs?wait=1e1", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait signed", "/v1/jobs?wait=+5", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait empty", "/v1/jobs?wait=", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"wait twice", "/v1/jobs?wait=1&wait=2", `{"image_url":"https://images.example.com/a.png"}`, "wait", "whole number"},
		{"data URI says GIF, bytes are PNG", "/v1/jobs", `{"image_base64":"data:image/gif;base64,` + b64 + `"}`, "image_base64", "declares image/gif but the bytes are image/png"},
		{"data URI says JPEG, bytes are PNG", "/v1/jobs", `{"image_base64":"data:image/jpeg;base64,` + b64 + `"}`, "image_base64", "declares image/jpeg"},
		{"data URI says text", "/v1/jobs", `{"image_base64":"data:text/plain;base64,` + b64 + `"}`, "image_base64", "declares text/plain"},
		{"image_base64 not a string", "/v1/jobs", `{"image_base64":12}`, "image_base64", "must be a string"},
		{"image_base64 twice", "/v1/jobs", `{"image_base64":"` + b64 + `","image_base64":"` + gif + `"}`, "image_base64", "only once"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.postJSON(tc.path, tc.body, nil)
			expectError(t, r, http.StatusBadRequest, connector.EINVALID, tc.text)
			if tc.field != "" {
				details, _ := r.get("details").([]any)
				if len(details) != 1 || details[0].(map[string]any)["field"] != tc.field {
					t.Errorf("details = %v, want one about %s", r.get("details"), tc.field)
				}
			}
		})
	}
	// What agrees passes: a matching data URI, image/jpg for JPEG, no type,
	// and whole seconds.
	jpeg := base64.StdEncoding.EncodeToString(images.Read(t, "photo.jpg"))
	for _, body := range []string{
		`{"image_base64":"data:image/png;base64,` + b64 + `"}`,
		`{"image_base64":"data:image/jpg;base64,` + jpeg + `"}`,
		`{"image_base64":"data:;base64,` + b64 + `"}`,
		`{"image_base64":"data:application/octet-stream;base64,` + b64 + `"}` + "\n",
	} {
		expectStatus(t, h.postJSON("/v1/jobs?wait=0", body, nil), http.StatusAccepted)
	}
	if n := len(h.queue.enqueued()); n != 4 {
		t.Errorf("enqueued %d jobs, want 4", n)
	}
	_ = context.Background
}

// TestUnknownFieldsAreRefusedNamingThem: a field the route does not know is
// a 400 naming it (with a suggestion when it is close to a known one), on
// every JSON route, in batch items and in multipart forms; nothing is made.
func TestUnknownFieldsAreRefusedNamingThem(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	hook := h.postJSON("/v1/hooks", `{"target_url":"https://hooks.example.com/in"}`, nil)
	expectStatus(t, hook, http.StatusCreated)
	cases := []struct {
		name, path, body, field, suggestion string
	}{
		{"job", "/v1/jobs", `{"image_url":"https://images.example.com/a.png","callbakc_url":"https://hooks.example.com/x"}`, "callbakc_url", "did you mean callback_url?"},
		{"job with base64", "/v1/jobs", `{"image_base64":"` + png + `","meta_data":{}}`, "meta_data", "did you mean metadata?"},
		{"job, far from any field", "/v1/jobs", `{"image_url":"https://images.example.com/a.png","colour":"red"}`, "colour", "fields: "},
		{"dry run", "/v1/jobs/dry-run", `{"image_base64":"` + png + `","dedup":false}`, "dedup", "did you mean dedupe?"},
		{"hook", "/v1/hooks", `{"target_url":"https://hooks.example.com/in","evnet":"job.completed"}`, "evnet", "did you mean event?"},
		{"recover", "/v1/hooks/" + hook.str("id") + "/recover", `{"since":"2026-01-01T00:00:00Z","sinse":"x"}`, "sinse", "did you mean since?"},
		{"batch", "/v1/batches", `{"items":[{"image_url":"https://images.example.com/a.png"}],"callbakc_url":"https://hooks.example.com/x"}`, "callbakc_url", "did you mean callback_url?"},
		{"batch item", "/v1/batches", `{"items":[{"image_url":"https://images.example.com/a.png"},{"image_url":"https://images.example.com/b.png","file_name":"b.png"}]}`, "items[1].file_name", "did you mean filename?"},
		{"batch item's callback", "/v1/batches", `{"items":[{"image_url":"https://images.example.com/a.png","callback_url":"https://hooks.example.com/x"}]}`, "items[0].callback_url", "set callback_url beside items"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.postJSON(tc.path, tc.body, nil)
			expectError(t, r, http.StatusBadRequest, connector.EINVALID, "")
			details, _ := r.get("details").([]any)
			if len(details) != 1 || details[0].(map[string]any)["field"] != tc.field ||
				!strings.Contains(details[0].(map[string]any)["message"].(string), tc.suggestion) {
				t.Errorf("details = %v; want one about %s saying %q", r.get("details"), tc.field, tc.suggestion)
			}
		})
	}
	// Multipart: a text part the form does not know.
	body, ct := multipartBody(t, map[string]string{"callbakc_url": "https://hooks.example.com/x"}, "file", "a.png", images.Read(t, "photo.png"))
	r := h.do("POST", "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "did you mean callback_url?")
	body, ct = multipartBody(t, map[string]string{"metdata": "{}"}, "file", "a.png", images.Read(t, "photo.png"))
	r = h.do("POST", "/v1/batches", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "did you mean metadata?")
	// A raw-body upload: its fields come from the query string.
	r = h.do("POST", "/v1/jobs?file_name=a.png", bytes.NewReader(images.Read(t, "photo.png")), map[string]string{"Content-Type": "image/png", "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "did you mean filename?")
	if n := len(h.queue.enqueued()); n != 0 {
		t.Errorf("%d jobs were queued from refused requests", n)
	}
	// The route's own parameters and the fields it knows still pass.
	r = h.do("POST", "/v1/jobs?filename=a.png&dedupe=false&wait=0", bytes.NewReader(images.Read(t, "photo.png")), map[string]string{"Content-Type": "image/png", "X-API-Key": h.key})
	expectStatus(t, r, http.StatusAccepted)
}

// TestControlCharactersInFilenamesAreRefused: NUL, 0x01, DEL and bidi
// controls in a file name are a 400 naming filename, before a job is made.
func TestControlCharactersInFilenamesAreRefused(t *testing.T) {
	h := newHarness(t)
	png := images.Read(t, "photo.png")
	for _, name := range []string{"a\x00.png", "a\x01.png", "a\x7f.png", "cat\u202egnp.exe", "a\u0085.png"} {
		body, _ := json.Marshal(map[string]any{"image_url": "https://images.example.com/a.png", "filename": name})
		r := h.postJSON("/v1/jobs", string(body), nil)
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "filename: must not contain control characters")
		body, _ = json.Marshal(map[string]any{"items": []any{map[string]any{"image_url": "https://images.example.com/a.png", "filename": name}}})
		r = h.postJSON("/v1/batches", string(body), nil)
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "items[0]: filename: must not contain control characters")
		mp, ct := multipartBody(t, map[string]string{"filename": name}, "file", "a.png", png)
		r = h.do("POST", "/v1/jobs", mp, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "filename")
	}
	r := h.do("POST", "/v1/jobs?filename=a%01.png", bytes.NewReader(png), map[string]string{"Content-Type": "image/png", "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "filename")
	if n := len(h.queue.enqueued()); n != 0 {
		t.Errorf("%d jobs were queued with bad file names", n)
	}
	// Ordinary names, accents and other scripts included, pass.
	body, _ := json.Marshal(map[string]any{"image_url": "https://images.example.com/a.png", "filename": "Café déjà vu – 写真 (1).png"})
	expectStatus(t, h.postJSON("/v1/jobs", string(body), nil), http.StatusAccepted)
}

// TestBatchItemsTakePowerAutomateFileContent: an item's image_base64 may be
// {"$content-type", "$content"} as a single job's may; a wrong one is
// refused naming the item.
func TestBatchItemsTakePowerAutomateFileContent(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	r := h.postJSON("/v1/batches", `{"items":[{"image_url":"https://images.example.com/a.png"},{"image_base64":{"$content-type":"image/png","$content":"`+png+`"},"filename":"pa.png"}]}`, nil)
	expectStatus(t, r, http.StatusAccepted)
	if n := len(h.queue.enqueued()); n != 2 {
		t.Fatalf("%d jobs queued, want 2", n)
	}
	for _, tc := range []struct{ item, text string }{
		{`{"image_base64":{"$content-type":"image/jpeg","$content":"` + png + `"}}`, "items[0]: image_base64: the data: URI declares image/jpeg but the bytes are image/png"},
		{`{"image_base64":{"$content-type":"image/png","$content":"data:image/gif;base64,` + png + `"}}`, `items[0]: image_base64: "$content-type" says image/png but the data: URI in "$content" says image/gif`},
		{`{"image_base64":{"$content-type":"image/png"}}`, `items[0]: image_base64: file content needs "$content"`},
		{`{"image_base64":{"$content":"` + png + `","extra":1}}`, "items[0]: image_base64"},
	} {
		r := h.postJSON("/v1/batches", `{"items":[`+tc.item+`]}`, nil)
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, tc.text)
	}
	// The same disagreement in a single job.
	r = h.postJSON("/v1/jobs", `{"image_base64":{"$content-type":"image/png","$content":"data:image/gif;base64,`+png+`"}}`, nil)
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, `"$content-type" says image/png`)
}

// TestBatchesWithoutAHeaderKeyAreRefusedUnread: a batch whose key is not in
// a header is a 401 before its body is read, whatever the body holds.
func TestBatchesWithoutAHeaderKeyAreRefusedUnread(t *testing.T) {
	h := newHarness(t)
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json"},
		{"Content-Type": "application/json", "X-API-Key": "sk_unknown_key_0000"},
	} {
		b := newStalledBody()
		r := h.postStalled("/v1/batches", 28<<20, b.pr, hdr)
		b.pw.Close()
		if r.status != http.StatusUnauthorized {
			t.Errorf("%v: %d %s; want 401 with the body never sent", hdr, r.status, r.body)
		}
	}
	// A key only in the body is named as the reason.
	r := h.do("POST", "/v1/batches", strings.NewReader(`{"api_key":"`+h.key+`","items":[{"image_url":"https://images.example.com/a.png"}]}`),
		map[string]string{"Content-Type": "application/json"})
	expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "in a header")
}

// TestAnonymousBatchBodiesCostNoMemory is the audit's scenario: 8
// anonymous 28 MiB batch bodies at once raise the server's heap by at most
// 100 MiB (they are refused before they are read). The heap is sampled
// while they are sent; the bodies are generated, not held by the client.
func TestAnonymousBatchBodiesCostNoMemory(t *testing.T) {
	h := newHarness(t)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range 8 {
		wg.Go(func() {
			r, err := h.tryPost("/v1/batches", 28<<20, io.MultiReader(strings.NewReader(`{"items":[{"image_base64":"`), &repeatReader{n: 28<<20 - 40}, strings.NewReader(`"}]}`)),
				map[string]string{"Content-Type": "application/json"})
			if err == nil {
				statuses[i] = r.status
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, st := range statuses {
		if st != 0 && st != http.StatusUnauthorized {
			t.Errorf("body %d: %d, want 401 (or the connection closed unread)", i, st)
		}
	}
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("heap grew by %.1f MiB at most while 8 anonymous 28 MiB batches were refused", float64(grew)/(1<<20))
	if grew > 100<<20 {
		t.Errorf("heap grew by %d MiB while 8 anonymous 28 MiB batches were refused; want at most 100 MiB", grew>>20)
	}
}

// repeatReader gives n bytes of base64 text without holding them.
type repeatReader struct{ n int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'A'
	}
	r.n -= k
	return k, nil
}

// TestAMultipartFileNeedsNoFileName: a file part without a file name or a
// type (curl -F 'image=<photo.png') is still the file when its bytes are an
// image; a text part of an unknown name is refused.
func TestAMultipartFileNeedsNoFileName(t *testing.T) {
	h := newHarness(t)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("image", string(images.Read(t, "photo.png")))
	mw.WriteField("filename", "named.png")
	mw.Close()
	r := h.do("POST", "/v1/jobs", &buf, map[string]string{"Content-Type": mw.FormDataContentType(), "X-API-Key": h.key})
	expectStatus(t, r, http.StatusAccepted)
	buf.Reset()
	mw = multipart.NewWriter(&buf)
	mw.WriteField("image", string(images.Read(t, "photo.png")))
	mw.WriteField("calback_url", "https://hooks.example.com/x")
	mw.Close()
	r = h.do("POST", "/v1/jobs", &buf, map[string]string{"Content-Type": mw.FormDataContentType(), "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, `unknown field "calback_url": is not a field of this request; did you mean callback_url?`)
}

// TestABodyKeyIsCheckedBeforeTheImageThatFollowsIt: without a key in the
// headers, an api_key at the start of a JSON or multipart job body is
// checked as soon as it is read, before the image after it: a bad key is a
// 401 even when what follows is malformed (were the image read first, the
// answer would be its 400).
func TestABodyKeyIsCheckedBeforeTheImageThatFollowsIt(t *testing.T) {
	h := newHarness(t)
	r := h.do("POST", "/v1/jobs", strings.NewReader(`{"api_key":"sk_unknown_key_0000","image_base64":"!!! not base64 !!!"}`), map[string]string{"Content-Type": "application/json"})
	expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "Invalid API key")
	mp := "--XYZ\r\nContent-Disposition: form-data; name=\"api_key\"\r\n\r\nsk_unknown_key_0000\r\n--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\n\x89PNG truncated, no closing boundary"
	r = h.do("POST", "/v1/jobs", strings.NewReader(mp), map[string]string{"Content-Type": "multipart/form-data; boundary=XYZ"})
	expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "Invalid API key")
	// The same bodies with a good key: the malformed image is the answer.
	r = h.do("POST", "/v1/jobs", strings.NewReader(`{"api_key":"`+h.key+`","image_base64":"!!! not base64 !!!"}`), map[string]string{"Content-Type": "application/json"})
	expectStatus(t, r, http.StatusBadRequest)
	// And a good key with a good image makes the job.
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	r = h.do("POST", "/v1/jobs", strings.NewReader(`{"api_key":"`+h.key+`","image_base64":"`+png+`"}`), map[string]string{"Content-Type": "application/json"})
	expectStatus(t, r, http.StatusAccepted)
}

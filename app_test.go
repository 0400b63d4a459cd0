package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/server"
)

// system is the whole of imgflow wired as `imgflow serve` + `imgflow work`
// wire it, over real HTTP, against Redis and the reference compression API.
type system struct {
	t       *testing.T
	api     string
	samples string       // serves fixtures/images over HTTP, for image_url jobs
	handler http.Handler // the API, for tests that serve it with other settings
	redis   *redistest.Redis
	ledger  *refupstream.Ledger
	key     string
	logs    *syncBuffer
}

// syncBuffer collects every log line of the system under test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSystem wires the system as dev does (loopback allowed); configure
// may change the options first.
func startSystem(t *testing.T, configure ...func(*appOptions)) *system {
	t.Helper()
	r := redistest.New(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ledger := refupstream.NewLedger(r.Client, r.Prefix+"up:", nil)
	up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: logger}))
	t.Cleanup(up.Close)
	key, _, err := ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	samples := httptest.NewServer(http.FileServer(http.Dir(images.Path(""))))
	t.Cleanup(samples.Close)

	api := httptest.NewUnstartedServer(nil)
	opts := appOptions{
		RedisURL:      r.URL,
		UpstreamURL:   up.URL + "/api",
		PublicURL:     "http://" + api.Listener.Addr().String(),
		Secret:        "system-test-secret-0123456789",
		allowLoopback: true, // the sample server and receivers are on loopback, as in dev
		ResultTTL:     time.Hour,
		Queue:         r.Queue(),
		keyPrefix:     r.Prefix,
	}
	for _, c := range configure {
		c(&opts)
	}
	if err := opts.validate(true); err != nil {
		t.Fatal(err)
	}
	a, err := newApp(opts, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	// The production http.Server settings (timeouts, header cap).
	handler := a.apiServer(logger, nil).Handler()
	api.Config = server.NewHTTPServer(handler)
	api.Start()
	t.Cleanup(api.Close)

	w, err := a.worker(logger, 4)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("worker did not stop within 20s")
		}
		w.Close()
	})
	return &system{t: t, api: opts.PublicURL, samples: samples.URL, handler: handler, redis: r, ledger: ledger, key: key, logs: logs}
}

func (s *system) request(method, path, contentType string, body io.Reader, header map[string]string) (int, http.Header, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.api+path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, data
}

type jobView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Result *struct {
		OriginalSize     int64   `json:"original_size"`
		CompressedSize   int64   `json:"compressed_size"`
		CompressionRatio float64 `json:"compression_ratio"`
		CreditsRemaining *int64  `json:"credits_remaining"`
		MIMEType         string  `json:"mime_type"`
		FileURL          string  `json:"file_url"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Callback *struct {
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"callback"`
}

func decodeJob(t *testing.T, status int, body []byte) jobView {
	t.Helper()
	var j jobView
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatalf("status %d, body %q: %v", status, body, err)
	}
	return j
}

func (s *system) credits() int64 {
	s.t.Helper()
	acct, err := s.ledger.Lookup(context.Background(), s.key)
	if err != nil {
		s.t.Fatal(err)
	}
	return acct.CreditsRemaining
}

// expectCompressed checks a finished job like a user would: completed,
// smaller, and its file_url downloads the image without the key.
func (s *system) expectCompressed(status int, body []byte, mime string) jobView {
	s.t.Helper()
	job := decodeJob(s.t, status, body)
	if status != http.StatusOK || job.Status != "completed" || job.Result == nil {
		s.t.Fatalf("status %d, job %s; want 200 and a completed job", status, body)
	}
	if job.Result.CompressedSize >= job.Result.OriginalSize || job.Result.MIMEType != mime {
		s.t.Errorf("result %+v; want a smaller %s", *job.Result, mime)
	}
	res, err := http.Get(job.Result.FileURL)
	if err != nil {
		s.t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || int64(len(data)) != job.Result.CompressedSize || res.Header.Get("Content-Type") != mime {
		s.t.Errorf("file_url answered %d with %d bytes of %s; want 200 with %d bytes of %s",
			res.StatusCode, len(data), res.Header.Get("Content-Type"), job.Result.CompressedSize, mime)
	}
	return job
}

func TestEveryInputFormComesBackCompressed(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.key}
	png := images.Read(t, "photo.png")

	st, _, body := s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.samples+`/photo.jpg"}`), auth)
	s.expectCompressed(st, body, "image/jpeg")

	st, _, body = s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+base64.StdEncoding.EncodeToString(png)+`"}`), auth)
	s.expectCompressed(st, body, "image/png")

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("upload", "photo.webp")
	fw.Write(images.Read(t, "photo.webp"))
	mw.Close()
	st, _, body = s.request("POST", "/v1/jobs?wait=20", mw.FormDataContentType(), &form, auth)
	s.expectCompressed(st, body, "image/webp")

	if got := s.credits(); got != 497 {
		t.Errorf("credits = %d after three jobs, want 497 (one per job)", got)
	}

	// The operator sees it in /metrics. The worker counts a job just after
	// the update that wakes ?wait, so the last count may trail the answer
	// by a moment.
	_, _, scrape := s.request("GET", "/metrics", "", nil, nil)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(string(scrape), "imgflow_jobs_completed_total 3") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, _, scrape = s.request("GET", "/metrics", "", nil, nil)
	}
	for _, line := range []string{
		`imgflow_jobs_created_total{input="url"} 1`,
		`imgflow_jobs_created_total{input="base64"} 1`,
		`imgflow_jobs_created_total{input="upload"} 1`,
		`imgflow_jobs_completed_total 3`,
		`imgflow_http_requests_total{method="POST",route="/v1/jobs",status="200"} 3`,
	} {
		if !strings.Contains(string(scrape), line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	// Nothing in the logs of all that may reveal the key or the image.
	logs := s.logs.String()
	if strings.Contains(logs, s.key) {
		t.Error("the API key appears in the logs")
	}
	if strings.Contains(logs, base64.StdEncoding.EncodeToString(png[:48])) {
		t.Error("image bytes appear in the logs")
	}
	if !strings.Contains(logs, `"job_id"`) || !strings.Contains(logs, `"request_id"`) {
		t.Error("logs carry no job_id or request_id")
	}
}

func TestBadImageURLFailsTheJobWithAClearError(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.key}
	cases := []struct{ path, code string }{
		{"/missing.png", "fetch_failed"},
		{"/not-an-image.png", "unsupported_format"},
		{"/truncated.png", "unsupported_format"},
	}
	for _, tc := range cases {
		st, _, body := s.request("POST", "/v1/jobs?wait=20", "application/json",
			strings.NewReader(`{"image_url":"`+s.samples+tc.path+`"}`), auth)
		job := decodeJob(t, st, body)
		if job.Status != "failed" || job.Error == nil || job.Error.Code != tc.code {
			t.Errorf("%s: job %s; want failed with %s", tc.path, body, tc.code)
		}
	}
	if got := s.credits(); got != 500 {
		t.Errorf("credits = %d after failed jobs, want 500: failures are free", got)
	}
}

func TestRetriesWithOneIdempotencyKeyChargeOneCredit(t *testing.T) {
	s := startSystem(t)
	hdr := map[string]string{"X-API-Key": s.key, "Idempotency-Key": "zap-7f3a"}
	body := `{"image_url":"` + s.samples + `/screenshot.png"}`
	var ids []string
	for i := 0; i < 3; i++ {
		st, _, out := s.request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), hdr)
		ids = append(ids, s.expectCompressed(st, out, "image/png").ID)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("job ids %v; want one job for one Idempotency-Key", ids)
	}
	if got := s.credits(); got != 499 {
		t.Errorf("credits = %d, want 499: three retries, one charge", got)
	}
}

func TestCallbackAndHookDeliverSignedEvents(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.key}
	type delivery struct {
		path   string
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.URL.RequestURI(), r.Header.Clone(), body}
	}))
	defer receiver.Close()

	_, _, acct := s.request("GET", "/v1/account", "", nil, auth)
	var account struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	json.Unmarshal(acct, &account)

	st, _, hookBody := s.request("POST", "/v1/hooks", "application/json",
		strings.NewReader(`{"target_url":"`+receiver.URL+`/hook","event":"job.finished"}`), auth)
	var hook struct{ ID, Secret string }
	json.Unmarshal(hookBody, &hook)
	if st != http.StatusCreated {
		t.Fatalf("hook: %d %s", st, hookBody)
	}

	s.request("POST", "/v1/jobs", "application/json",
		strings.NewReader(`{"image_url":"`+s.samples+`/photo.png","callback_url":"`+receiver.URL+`/cb?sig=n8n-resume-1"}`), auth)
	secrets := map[string]string{"/cb?sig=n8n-resume-1": account.WebhookSecret, "/hook": hook.Secret}
	for i := 0; i < 2; i++ {
		select {
		case d := <-got:
			secret, ok := secrets[d.path]
			if !ok {
				t.Fatalf("delivery to %s; want /cb?sig=n8n-resume-1 (query kept) or /hook", d.path)
			}
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(d.body, d.header); err != nil {
				t.Errorf("delivery to %s does not verify: %v", d.path, err)
			}
			var event struct {
				Type string  `json:"type"`
				Data jobView `json:"data"`
			}
			json.Unmarshal(d.body, &event)
			if event.Type != "job.completed" || event.Data.Result == nil || event.Data.Result.FileURL == "" {
				t.Errorf("event %s; want job.completed with a file_url", d.body)
			}
			if strings.Contains(string(d.body), "compressed_data") {
				t.Error("event carries the image bytes")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery within 20s")
		}
	}

	// A deleted hook gets nothing more.
	if st, _, _ := s.request("DELETE", "/v1/hooks/"+hook.ID, "", nil, auth); st != http.StatusNoContent {
		t.Fatalf("delete hook: %d", st)
	}
	st, _, body := s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.samples+`/screenshot.png"}`), auth)
	s.expectCompressed(st, body, "image/png")
	select {
	case d := <-got:
		t.Errorf("delivery to %s after the hook was deleted", d.path)
	case <-time.After(time.Second):
	}
}

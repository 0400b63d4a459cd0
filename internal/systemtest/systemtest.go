// Package systemtest starts the whole of imgflow in-process for the system
// tests of its parts: internal/system's App as serve + work wire it, over
// real HTTP, against Redis (miniredis, or REDIS_URL's) and the reference
// compression API, with sample images served on loopback. Start gives a
// System; its helpers speak the public API as a flow would (Request, Call,
// Subscribe, WaitBatch) and read the upstream's ledger (Credits).
//
// The system tests that use it sit beside their parts, as external test
// packages (*_system_test.go): go test ./worker ./server ./mcp ./definitions
// ./internal/app ./internal/system. Through it the tests of worker import
// server and those of server import worker; the rule that server/ and
// worker/ never import each other holds for their code, not for these tests.
package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/server"
	"github.com/imgflow/imgflow/worker"
)

// Options are the settings a test may change before Start wires the
// system (internal/system's, as the commands' flags set them).
type Options = system.Options

// System is the whole of imgflow wired as `imgflow serve` + `imgflow work`
// wire it, over real HTTP, against Redis and the reference compression API.
type System struct {
	T       *testing.T
	API     string       // the API's base URL
	Samples string       // serves fixtures/images over HTTP, for image_url jobs
	Handler http.Handler // the API, for tests that serve it with other settings
	Ops     http.Handler // the ops listener's handler: /metrics, /health, /ready, /admin/queues
	Redis   *redistest.Redis
	Ledger  *refupstream.Ledger // the reference upstream's accounts
	Key     string              // an API key with 500 credits
	Logs    *SyncBuffer         // every log line of the API, worker and upstream
	Options Options             // what the system was wired with
}

// SyncBuffer collects every log line of the system under test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start wires the system as dev does (loopback allowed); configure may
// change the options first. Everything stops when the test ends.
func Start(t *testing.T, configure ...func(*Options)) *System {
	t.Helper()
	r := redistest.New(t)
	logs := &SyncBuffer{}
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
	opts := Options{
		RedisURL:      r.URL,
		UpstreamURL:   up.URL + "/api",
		PublicURL:     "http://" + api.Listener.Addr().String(),
		Secret:        "system-test-secret-0123456789",
		AllowLoopback: true, // the sample server and receivers are on loopback, as in dev
		ResultTTL:     time.Hour,
		Queue:         r.Queue(),
		KeyPrefix:     r.Prefix,
		Dispatch:      os.Getenv("IMGFLOW_DISPATCH"), // fair by default; a run may choose asynq
	}
	for _, c := range configure {
		c(&opts)
	}
	if err := opts.Validate(true); err != nil {
		t.Fatal(err)
	}
	a, err := system.New(opts, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	// The production http.Server settings (timeouts, header cap).
	handler := a.APIServer(logger, nil).Handler()
	api.Config = server.NewHTTPServer(handler)
	api.Start()
	t.Cleanup(api.Close)

	w, err := a.Worker(logger, 4)
	if err != nil {
		t.Fatal(err)
	}
	RunWorker(t, context.Background(), w)
	ops := a.OpsHandler(logger, true)
	return &System{T: t, API: opts.PublicURL, Samples: samples.URL, Handler: handler, Ops: ops, Redis: r, Ledger: ledger, Key: key, Logs: logs, Options: opts}
}

// OpsGet asks the ops listener's handler for path (GET /metrics, say):
// its status and body.
func (s *System) OpsGet(path string) (int, string) {
	rec := httptest.NewRecorder()
	s.Ops.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// Request sends one request to the API and reads the whole answer.
func (s *System) Request(method, path, contentType string, body io.Reader, header map[string]string) (int, http.Header, []byte) {
	s.T.Helper()
	req, _ := http.NewRequest(method, s.API+path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, data
}

// JobView is the part of a job's JSON the tests read.
type JobView struct {
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

// DecodeJob reads a job's JSON, failing the test with the answer when it
// is not one.
func DecodeJob(t *testing.T, status int, body []byte) JobView {
	t.Helper()
	var j JobView
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatalf("status %d, body %q: %v", status, body, err)
	}
	return j
}

// Credits is what the upstream's ledger holds for s.Key.
func (s *System) Credits() int64 {
	s.T.Helper()
	acct, err := s.Ledger.Lookup(context.Background(), s.Key)
	if err != nil {
		s.T.Fatal(err)
	}
	return acct.CreditsRemaining
}

// ExpectCompressed checks a finished job like a user would: completed,
// smaller, and its file_url downloads the image without the key.
func (s *System) ExpectCompressed(status int, body []byte, mime string) JobView {
	s.T.Helper()
	job := DecodeJob(s.T, status, body)
	if status != http.StatusOK || job.Status != "completed" || job.Result == nil {
		s.T.Fatalf("status %d, job %s; want 200 and a completed job", status, body)
	}
	if job.Result.CompressedSize >= job.Result.OriginalSize || job.Result.MIMEType != mime {
		s.T.Errorf("result %+v; want a smaller %s", *job.Result, mime)
	}
	res, err := http.Get(job.Result.FileURL)
	if err != nil {
		s.T.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || int64(len(data)) != job.Result.CompressedSize || res.Header.Get("Content-Type") != mime {
		s.T.Errorf("file_url answered %d with %d bytes of %s; want 200 with %d bytes of %s",
			res.StatusCode, len(data), res.Header.Get("Content-Type"), job.Result.CompressedSize, mime)
	}
	return job
}

// StartReplica starts another API on the same Redis, secret and options,
// as a second serve process would be, until the test ends; its base URL.
func (s *System) StartReplica() string {
	s.T.Helper()
	a, err := system.New(s.Options, s.Redis.Client)
	if err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(a.Close)
	replica := httptest.NewServer(server.NewHTTPServer(a.APIServer(slog.New(slog.DiscardHandler), nil).Handler()).Handler)
	s.T.Cleanup(replica.Close)
	return replica.URL
}

// KeyTransport sends the API key in Header on every request, as MCP
// clients' configured headers do.
type KeyTransport struct {
	Header, Value string
	Base          http.RoundTripper
}

// RoundTrip sends r with the key through Base.
func (k KeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.Header, k.Value)
	return k.Base.RoundTrip(r)
}

// RunWorker runs w until the test ends, then stops it (within 20 s) and
// closes it.
func RunWorker(t testing.TB, ctx context.Context, w *worker.Worker) {
	ctx, cancel := context.WithCancel(ctx)
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
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/connector/webhook"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/keycheck"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/server"
)

// recordingQueue stands in for asynq: it records what was enqueued, and can
// fail like a queue whose Redis is down.
type recordingQueue struct {
	mu         sync.Mutex
	compress   []string
	deliveries []connector.Delivery
	fail       error
}

func (q *recordingQueue) EnqueueCompress(ctx context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	q.compress = append(q.compress, id)
	return nil
}

func (q *recordingQueue) EnqueueDelivery(ctx context.Context, d connector.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	q.deliveries = append(q.deliveries, d)
	return nil
}

func (q *recordingQueue) enqueuedDeliveries() []connector.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]connector.Delivery(nil), q.deliveries...)
}

func (q *recordingQueue) enqueued() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.compress...)
}

// stubSender stands in for the webhook sender of test events: the hooks
// of these tests name public example hosts, which no test may reach. It
// answers 204 and records what it was asked to send.
type stubSender struct {
	mu   sync.Mutex
	sent []stubSent
}

type stubSent struct {
	target  string
	secrets []string
	msgID   string
	body    []byte
}

func (s *stubSender) Send(_ context.Context, target string, secrets []string, msgID string, body []byte) webhook.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, stubSent{target, secrets, msgID, body})
	return webhook.Result{Status: http.StatusNoContent, Duration: time.Millisecond, Response: "ok"}
}

func (s *stubSender) all() []stubSent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stubSent(nil), s.sent...)
}

// publicResolver answers every name with a public address, as DNS would
// for the example hosts the tests use (no traffic is sent to it), and
// "localhost" with loopback.
type publicResolver struct{}

func (publicResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "localhost" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// harness is the API over real HTTP, with a real Redis store and the
// reference compression API (over real HTTP) answering the key checks.
type harness struct {
	t      *testing.T
	url    string
	store  *redisstore.Store
	queue  *recordingQueue
	ledger *refupstream.Ledger
	keys   *keyring.Keyring
	key    string // a valid key with 500 credits
	redis  *redistest.Redis
	api    *server.Server
	sender *stubSender // test events
}

type harnessOption func(*harnessConfig)

// harnessConfig is the API's Config and what the tests set of the parts
// the API is handed (the creation service and the key check), built from
// it by wire as internal/system builds them.
type harnessConfig struct {
	server.Config
	Compressor              connector.Compressor
	Accounts                keycheck.Accounts
	Idempotency             app.IdempotencyStore
	InputBlobs              connector.BlobStore
	Queue                   connector.Queue
	PreflightTTL, KeyGrace  time.Duration
	MaxJobsPerKey           int
	IdempotencyInFlightWait time.Duration
	// FreeFailuresPerHour builds the harness's store with a budget of free
	// failures (redisstore.Options).
	FreeFailuresPerHour int
}

// wire builds the key check and the creation service from c, and the API
// on them; the service is closed when the test ends.
func (c *harnessConfig) wire(tb testing.TB) *server.Server {
	cfg := c.Config
	cfg.Queue = c.Queue
	cfg.Keys = keycheck.New(keycheck.Config{Accounts: c.Accounts, Validator: c.Compressor, Owner: cfg.Keyring.KeyHash,
		TTL: c.PreflightTTL, Grace: c.KeyGrace, Now: cfg.Now, Logger: cfg.Logger})
	var batches app.BatchStore
	if cfg.Batches != nil {
		batches = cfg.Batches.(app.BatchStore)
	}
	cfg.Maker = app.New(app.Config{Jobs: cfg.Jobs.(app.JobStore), Batches: batches, Idempotency: c.Idempotency,
		Inputs: c.InputBlobs, Queue: c.Queue, Keyring: cfg.Keyring, CheckURL: cfg.CheckURL, Keys: cfg.Keys,
		MaxJobsPerKey: c.MaxJobsPerKey, InputTTL: cfg.ResultTTL, IdempotencyWait: c.IdempotencyInFlightWait,
		Now: cfg.Now, Logger: cfg.Logger})
	tb.Cleanup(cfg.Maker.Close)
	return server.New(cfg)
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	r := redistest.New(t)
	ledger := refupstream.NewLedger(r.Client, r.Prefix+"up:", nil)
	up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(up.Close)
	key, _, err := ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := keyring.New("test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix}), queue: &recordingQueue{}, ledger: ledger, keys: kr, key: key, redis: r,
		sender: &stubSender{}}
	cfg := harnessConfig{Config: server.Config{
		Jobs: h.store.Jobs, Blobs: h.store.Blobs, Hooks: h.store.Hooks, OpLimiter: h.store.Hooks, Batches: h.store.Batches,
		Sender:  h.sender,
		Keyring: kr,
		CheckURL: func(ctx context.Context, field, raw string) error {
			return guard.ForField(guard.CheckURL(ctx, raw, guard.Policy{}, publicResolver{}), field)
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	},
		Idempotency: h.store.Idempotency, Accounts: h.store.Accounts, Queue: h.queue,
		Compressor: upstream.New(up.URL + "/api"),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.FreeFailuresPerHour > 0 {
		h.store = redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix, FreeFailuresPerHour: cfg.FreeFailuresPerHour})
		cfg.Jobs, cfg.Batches = h.store.Jobs, h.store.Batches
	}
	srv := httptest.NewServer(nil)
	cfg.PublicURL = srv.URL
	h.api = cfg.wire(t)
	srv.Config.Handler = h.api.Handler()
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// response is an answer, its body decoded as JSON when it is JSON.
type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (r *response) str(path string) string {
	v := r.get(path)
	s, _ := v.(string)
	return s
}

func (r *response) num(path string) float64 {
	f, _ := r.get(path).(float64)
	return f
}

// get walks a dotted path like "result.file_url".
func (r *response) get(path string) any {
	var cur any = r.json
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (h *harness) do(method, path string, body io.Reader, header map[string]string) *response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	out := &response{status: res.StatusCode, header: res.Header}
	out.body, _ = io.ReadAll(res.Body)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		json.Unmarshal(out.body, &out.json)
	}
	return out
}

func (h *harness) postJSON(path string, v any, header map[string]string) *response {
	h.t.Helper()
	var body []byte
	switch b := v.(type) {
	case string:
		body = []byte(b)
	default:
		body, _ = json.Marshal(v)
	}
	hdr := map[string]string{"Content-Type": "application/json", "X-API-Key": h.key}
	for k, val := range header {
		hdr[k] = val
	}
	return h.do(http.MethodPost, path, bytes.NewReader(body), hdr)
}

// multipartBody builds a form with text fields and one file part.
func multipartBody(t *testing.T, fields map[string]string, fileField, filename string, file []byte) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if fileField != "" {
		w, err := mw.CreateFormFile(fileField, filename)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(file)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func expectStatus(t *testing.T, r *response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status = %d, want %d; body: %s", r.status, want, truncate(r.body))
	}
}

func expectError(t *testing.T, r *response, status int, code connector.ErrorCode, textPart string) {
	t.Helper()
	expectStatus(t, r, status)
	if got := r.str("code"); got != string(code) {
		t.Errorf("code = %q, want %q; body: %s", got, code, truncate(r.body))
	}
	if !strings.Contains(r.str("error"), textPart) {
		t.Errorf("error = %q, want it to mention %q", r.str("error"), textPart)
	}
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// finish marks a job completed as a worker would, with a stored output.
func (h *harness) finish(id string, data []byte) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.store.Blobs.Put(ctx, connector.OutputBlobKey(id), bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
		h.t.Fatal(err)
	}
	remaining := int64(499)
	_, err := h.store.Jobs.Update(ctx, id, func(j *connector.Job) error {
		now := time.Now().UTC()
		j.Status, j.FinishedAt = connector.StatusCompleted, &now
		j.Result = &connector.JobResult{OriginalSize: 100, CompressedSize: int64(len(data)), CompressionRatio: 50,
			CreditsRemaining: &remaining, MIMEType: "image/png", Filename: "out.png"}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

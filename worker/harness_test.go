package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/webhook"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/redistest"
)

const testAPIKey = "test-api-key-0123456789"

// harness is a worker running on the test's Redis with stub outside
// services, plus the producer side (Queue, stores) to feed it.
type harness struct {
	t       *testing.T
	redis   *redistest.Redis
	store   *redisstore.Store
	keyring *keyring.Keyring
	comp    *stubCompressor
	fetcher *stubFetcher
	cfg     Config
	queue   *Queue
	owner   string
	apiKey  string // sealed into new jobs
	// tweak, when set, changes each worker before it runs.
	tweak func(*Worker)
}

// newHarness prepares (but does not start) a worker; change h.cfg before
// start.
func newHarness(t *testing.T) *harness {
	t.Helper()
	r := redistest.New(t)
	kr, err := keyring.New("worker-test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatalf("asynq.ParseRedisURI(%q): %v", r.URL, err)
	}
	h := &harness{
		t:       t,
		redis:   r,
		store:   redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix}),
		keyring: kr,
		comp:    &stubCompressor{},
		fetcher: &stubFetcher{images: map[string]*connector.Image{}},
		owner:   kr.KeyHash(testAPIKey),
		apiKey:  testAPIKey,
	}
	h.cfg = Config{
		RedisConnOpt:             opt,
		Queue:                    r.Queue(),
		Concurrency:              4,
		Compressor:               h.comp,
		Fetcher:                  h.fetcher,
		Sender:                   webhook.NewSender(webhook.SenderOptions{Allow: guard.Loopback(), Timeout: 5 * time.Second}),
		Jobs:                     h.store.Jobs,
		Blobs:                    h.store.Blobs,
		Hooks:                    h.store.Hooks,
		Runs:                     h.store.Runs,
		Budget:                   h.store.Accounts,
		Batches:                  h.store.Batches,
		Keyring:                  kr,
		PublicURL:                "https://imgflow.test",
		DeliverySchedule:         []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond},
		DelayedTaskCheckInterval: 20 * time.Millisecond,
		ShutdownTimeout:          2 * time.Second,
		Logger:                   testLogger(),
	}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	qopts := []QueueOption{WithWakeUps(r.Client)}
	// Fair dispatch, the default; IMGFLOW_DISPATCH=asynq runs the suite on
	// asynq's queue. Pinned either way, so the worker and the Queue agree.
	h.cfg.Dispatch = DispatchAsynq
	if onFair() {
		h.cfg.Dispatch = DispatchFair
		qopts = append(qopts, WithFairDispatch(r.Client, 0))
		// As wired on one Redis: jobs handed out with their records.
		h.cfg.RecordKeyPrefix, h.cfg.RecordKeySuffix, _ = h.store.Jobs.RecordKeyAround()
	}
	h.queue = NewQueue(client, r.Queue(), qopts...)
	sweeper := app.New(app.Config{Jobs: h.store.Jobs, Batches: h.store.Batches, Queue: h.queue, Logger: h.cfg.Logger})
	t.Cleanup(sweeper.Close)
	h.cfg.Sweeper = sweeper
	return h
}

// queueOptions are opts and, on a fair run, fair dispatch: for a test
// that makes its own Queue.
func (h *harness) queueOptions(opts ...QueueOption) []QueueOption {
	if h.cfg.Dispatch == DispatchFair {
		opts = append(opts, WithFairDispatch(h.redis.Client, 0))
	}
	return opts
}

// onFair says whether the run is on fair dispatch: the default, unless
// IMGFLOW_DISPATCH=asynq.
func onFair() bool { return os.Getenv("IMGFLOW_DISPATCH") != DispatchAsynq }

// asynqOnly pins asynq dispatch for a test of asynq's own machinery (still
// the opt-out, IMGFLOW_DISPATCH=asynq), whatever the run's dispatch;
// fairTest names the test of the same promise on fair dispatch. Call it
// before newHarness.
func asynqOnly(t *testing.T, fairTest string) {
	t.Helper()
	t.Setenv("IMGFLOW_DISPATCH", DispatchAsynq)
	t.Logf("asynq dispatch pinned: asynq's machinery (on fair dispatch: %s)", fairTest)
}

func testLogger() *slog.Logger {
	level := slog.LevelError + 4 // quiet unless asked for
	if os.Getenv("WORKER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// start runs a worker with h.cfg until the test ends or stop is called.
func (h *harness) start() (w *Worker, stop func()) {
	h.t.Helper()
	w, err := New(h.cfg)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	w.backoff = func(int) time.Duration { return 10 * time.Millisecond }
	if h.tweak != nil {
		h.tweak(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("Run: %v", err)
			}
			w.Close()
		})
	}
	h.t.Cleanup(stop)
	return w, stop
}

// newJob stores a queued job of the test key.
func (h *harness) newJob(in connector.JobInput, callbackURL string) *connector.Job {
	h.t.Helper()
	job := &connector.Job{
		ID:          uuid.Must(uuid.NewV7()).String(),
		Status:      connector.StatusQueued,
		Input:       in,
		Owner:       h.owner,
		SealedKey:   h.keyring.Seal(h.apiKey),
		CallbackURL: callbackURL,
		Metadata:    json.RawMessage(`{"flow":"test"}`),
	}
	if err := h.store.Jobs.Create(context.Background(), job); err != nil {
		h.t.Fatalf("CreateJob: %v", err)
	}
	return job
}

// submitURLJob stores and enqueues a job whose image the stub fetcher serves.
func (h *harness) submitURLJob(callbackURL string) *connector.Job {
	h.t.Helper()
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(h.t, "photo.png")), MIMEType: "image/png", Filename: "photo.png"})
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, callbackURL)
	h.enqueue(job.ID)
	return job
}

func (h *harness) enqueue(jobID string) {
	h.t.Helper()
	if err := h.queue.EnqueueCompress(context.Background(), jobID, ""); err != nil {
		h.t.Fatalf("EnqueueCompress: %v", err)
	}
}

// enqueueOf queues the compress task of jobID, of owner's key.
func (h *harness) enqueueOf(jobID, owner string) {
	h.t.Helper()
	if err := h.queue.EnqueueCompress(context.Background(), jobID, owner); err != nil {
		h.t.Fatalf("EnqueueCompress: %v", err)
	}
}

// waitJob polls the job until cond holds, failing the test after a
// generous deadline.
func (h *harness) waitJob(id string, what string, cond func(*connector.Job) bool) *connector.Job {
	h.t.Helper()
	return h.waitJobOn(h.store.Jobs, id, what, cond)
}

// waitJobOn is waitJob reading the job through jobs (a store on a client
// of its own, which a test that counts the harness's client's commands
// leaves uncounted).
func (h *harness) waitJobOn(jobs *redisstore.Jobs, id string, what string, cond func(*connector.Job) bool) *connector.Job {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var job *connector.Job
	for time.Now().Before(deadline) {
		var err error
		job, err = jobs.Get(context.Background(), id)
		if err != nil {
			h.t.Fatalf("GetJob(%s): %v", id, err)
		}
		if cond(job) {
			return job
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, _ := json.Marshal(job)
	h.t.Fatalf("job %s: expected %s within 20s, got %s", id, what, got)
	return nil
}

func finished(j *connector.Job) bool { return j.Status.Finished() }

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("expected %s within 20s, it did not happen", what)
}

// stubCompressor plays the compression API: fail[i] is the answer to call
// i (nil for success); calls past the list succeed.
type stubCompressor struct {
	mu    sync.Mutex
	fail  []error
	calls int
	keys  []string
	// idempotencyKeys are the Idempotency-Keys of the calls, in order.
	idempotencyKeys []string
	// onAnswer, when set, runs as each successful call answers.
	onAnswer func()
	// balances, when set, are the credits_remaining of successive
	// successful answers (499 past the list).
	balances []int64
	// answer, when set, makes the answer's bytes from the image sent
	// (else they are the same bytes).
	answer func([]byte) []byte
}

func (s *stubCompressor) setFailures(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = errs
}

func (s *stubCompressor) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *stubCompressor) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func (s *stubCompressor) Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*connector.Compressed, error) {
	data, err := io.ReadAll(image)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.keys = append(s.keys, apiKey)
	s.idempotencyKeys = append(s.idempotencyKeys, idempotencyKey)
	var fail error
	if n < len(s.fail) {
		fail = s.fail[n]
	}
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if s.onAnswer != nil {
		s.onAnswer()
	}
	credits := int64(499)
	s.mu.Lock()
	if len(s.balances) > 0 {
		credits, s.balances = s.balances[0], s.balances[1:]
	}
	s.mu.Unlock()
	if s.answer != nil {
		data = s.answer(data)
	}
	return &connector.Compressed{
		UpstreamJobID:    "up-" + strconv.Itoa(n),
		Data:             bytes.NewReader(data), // same format, same bytes: ratio 0 is a valid answer
		OriginalSize:     int64(len(data)),
		CompressedSize:   int64(len(data)),
		CompressionRatio: 0,
		CreditsRemaining: &credits,
	}, nil
}

func (s *stubCompressor) Validate(ctx context.Context, apiKey string) (*connector.Account, error) {
	return &connector.Account{Valid: true}, nil
}

func (s *stubCompressor) Health(ctx context.Context) error { return nil }

// stubFetcher serves images by URL, or an error set for a URL.
type stubFetcher struct {
	mu     sync.Mutex
	images map[string]*connector.Image
	errs   map[string]error
}

func (f *stubFetcher) set(url string, img *connector.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[url] = img
}

func (f *stubFetcher) setErr(url string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[url] = err
}

func (f *stubFetcher) FetchImage(ctx context.Context, url string) (*connector.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[url]; err != nil {
		return nil, err
	}
	img, ok := f.images[url]
	if !ok {
		return nil, &connector.Error{Code: connector.EFETCH, Message: "404 Not Found"}
	}
	cp := *img
	return &cp, nil
}

// receiver is a webhook endpoint that answers statuses[i] to attempt i
// (200 past the list) and records every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
	query  string
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, received{header: req.Header.Clone(), body: body, query: req.URL.RawQuery})
		status := http.StatusOK
		if n < len(r.statuses) {
			status = r.statuses[n]
		}
		r.mu.Unlock()
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) count() int { return len(r.requests()) }

func deliveryTask(t *testing.T, d connector.Delivery) *asynq.Task {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return asynq.NewTask(TypeDelivery, b)
}

// outage is the test's store, unreachable (EUNAVAILABLE, as redisstore
// answers when Redis is down) for the worker while down; the test's own
// reads go to the store directly.
type outage struct {
	store   *redisstore.Store
	until   atomic.Int64 // unix nanos
	refused atomic.Int64
}

func (o *outage) downFor(d time.Duration) { o.until.Store(time.Now().Add(d).UnixNano()) }

func (o *outage) check() error {
	if time.Now().UnixNano() < o.until.Load() {
		o.refused.Add(1)
		return &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable", Retryable: true}
	}
	return nil
}

// jobs, blobs and runs are the worker's stores behind the outage.
func (o *outage) jobs() JobStore             { return outageJobs{Jobs: o.store.Jobs, o: o} }
func (o *outage) blobs() connector.BlobStore { return outageBlobs{BlobStore: o.store.Blobs, o: o} }
func (o *outage) runs() connector.JobRuns    { return outageRuns{o: o, JobRuns: o.store.Runs} }

type outageJobs struct {
	*redisstore.Jobs
	o *outage
}

func (j outageJobs) Get(ctx context.Context, id string) (*connector.Job, error) {
	if err := j.o.check(); err != nil {
		return nil, err
	}
	return j.Jobs.Get(ctx, id)
}

func (j outageJobs) Update(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, error) {
	if err := j.o.check(); err != nil {
		return nil, err
	}
	return j.Jobs.Update(ctx, id, fn)
}

// outageBlobs fails writes while down; reads and deletes go through.
type outageBlobs struct {
	connector.BlobStore
	o *outage
}

func (b outageBlobs) Put(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error {
	if err := b.o.check(); err != nil {
		return err
	}
	return b.BlobStore.Put(ctx, key, r, size, ttl)
}

type outageRuns struct {
	connector.JobRuns
	o *outage
}

func (r outageRuns) OpenJob(ctx context.Context, id string) (*connector.Job, *connector.Blob, error) {
	if err := r.o.check(); err != nil {
		return nil, nil, err
	}
	return r.JobRuns.OpenJob(ctx, id)
}

func (r outageRuns) Start(ctx context.Context, id string, start func(*connector.Job) error, beginCall bool) (*connector.Job, connector.CallRecord, error) {
	if err := r.o.check(); err != nil {
		return nil, connector.CallRecord{}, err
	}
	return r.JobRuns.Start(ctx, id, start, beginCall)
}

func (r outageRuns) KeepAnswer(ctx context.Context, id string, call int, answer *connector.KeptAnswer, data connector.Bytes, ttl time.Duration) error {
	if err := r.o.check(); err != nil {
		return err
	}
	return r.JobRuns.KeepAnswer(ctx, id, call, answer, data, ttl)
}

func (r outageRuns) Finish(ctx context.Context, id string, run int, end func(*connector.Job)) (*connector.Job, connector.HooksHint, error) {
	if err := r.o.check(); err != nil {
		return nil, connector.HooksUnknown, err
	}
	return r.JobRuns.Finish(ctx, id, run, end)
}

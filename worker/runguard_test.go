package worker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// gatedCompressor holds each call of the compression API until the test
// releases it with its answer (nil: the stub's 200), so that two runs of
// one job can be interleaved exactly, without sleeps.
type gatedCompressor struct {
	*stubCompressor
	entered chan int     // a call's number, as it begins
	answers []chan error // per call: its answer
	calls   chan int     // numbers calls in order
}

func newGatedCompressor(stub *stubCompressor, calls int) *gatedCompressor {
	g := &gatedCompressor{stubCompressor: stub, entered: make(chan int), calls: make(chan int, calls)}
	for i := range calls {
		g.answers = append(g.answers, make(chan error, 1))
		g.calls <- i
	}
	return g
}

func (g *gatedCompressor) Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*connector.Compressed, error) {
	i := <-g.calls
	g.entered <- i
	if err := <-g.answers[i]; err != nil {
		return nil, err
	}
	return g.stubCompressor.Compress(ctx, apiKey, idempotencyKey, image, filename)
}

// twoRuns starts run 1 of a URL job, and once it is in its call, run 2 of
// the same job (its lease lapsed and the task was requeued), held in its
// own call: both runs are in flight, run 2 the live one.
func twoRuns(t *testing.T, h *harness, gate *gatedCompressor) (job *connector.Job, run1, run2 chan error) {
	t.Helper()
	w, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png", Filename: "photo.png"})
	job = h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	task := asynq.NewTask(TypeCompress, fmt.Appendf(nil, `{"job_id":%q}`, job.ID))
	run1, run2 = make(chan error, 1), make(chan error, 1)
	go func() { run1 <- w.Handler().ProcessTask(context.Background(), task) }()
	if n := <-gate.entered; n != 0 {
		t.Fatalf("expected run 1 in call 0, got call %d", n)
	}
	go func() { run2 <- w.Handler().ProcessTask(context.Background(), task) }()
	if n := <-gate.entered; n != 1 {
		t.Fatalf("expected run 2 in call 1, got call %d", n)
	}
	if got, _ := h.store.Jobs.Get(context.Background(), job.ID); got.Runs != 2 || got.Status != connector.StatusProcessing {
		t.Fatalf("expected the job processing in run 2, got %s in run %d", got.Status, got.Runs)
	}
	return job, run1, run2
}

// A stale run's end loses to the live run's: run 1's final failure (a
// 400) comes while run 2 is live, and is dropped; run 2's charged answer
// completes the job. Before the run guard, run 1's fail landed first (the
// ends were guarded by status only) and run 2's charged complete was lost.
func TestStaleRunFailureLosesToTheLiveRunsCompletion(t *testing.T) {
	h := newHarness(t)
	gate := newGatedCompressor(h.comp, 2)
	h.cfg.Compressor = gate
	job, run1, run2 := twoRuns(t, h, gate)

	gate.answers[0] <- &connector.Error{Code: connector.EINVALID, Message: "No file uploaded", UpstreamStatus: 400}
	if err := <-run1; err != nil {
		t.Fatalf("stale run: expected it to end quietly (its end refused), got %v", err)
	}
	got, _ := h.store.Jobs.Get(context.Background(), job.ID)
	if got.Status != connector.StatusProcessing || got.Error != nil {
		t.Fatalf("after the stale run's failure: expected the job still processing in run 2, got %s, error %+v", got.Status, got.Error)
	}
	gate.answers[1] <- nil
	if err := <-run2; err != nil {
		t.Fatalf("live run: expected success, got %v", err)
	}
	got, _ = h.store.Jobs.Get(context.Background(), job.ID)
	if got.Status != connector.StatusCompleted || got.Result == nil || got.Result.UpstreamJobID != "up-0" || got.Runs != 2 {
		t.Fatalf("expected completed by run 2 with its answer up-0, got %s, result %+v, run %d", got.Status, got.Result, got.Runs)
	}
}

// A stale run's charged answer is never dropped: run 1's 200 comes while
// run 2 is live, so run 1 only keeps it; run 2's call then fails for good
// (a 429: the credit went to run 1's call), and its failure yields to the
// kept answer in the same write: the job completes with run 1's result.
func TestStaleRunsChargedAnswerWinsOverTheLiveRunsFailure(t *testing.T) {
	h := newHarness(t)
	gate := newGatedCompressor(h.comp, 2)
	h.cfg.Compressor = gate
	job, run1, run2 := twoRuns(t, h, gate)

	gate.answers[0] <- nil
	if err := <-run1; err != nil {
		t.Fatalf("stale run: expected it to end quietly (answer kept, end refused), got %v", err)
	}
	if got, _ := h.store.Jobs.Get(context.Background(), job.ID); got.Status != connector.StatusProcessing {
		t.Fatalf("after the stale run's answer: expected the job still processing in run 2, got %s", got.Status)
	}
	zero := int64(0)
	gate.answers[1] <- &connector.Error{Code: connector.ENOCREDITS, Message: "No credits", UpstreamStatus: 429, CreditsRemaining: &zero}
	if err := <-run2; err != nil {
		t.Fatalf("live run: expected its failure to turn into the kept completion, got %v", err)
	}
	got, _ := h.store.Jobs.Get(context.Background(), job.ID)
	if got.Status != connector.StatusCompleted || got.Error != nil || got.Result == nil || got.Result.UpstreamJobID != "up-0" {
		t.Fatalf("expected completed with run 1's charged answer up-0, got %s, error %+v, result %+v", got.Status, got.Error, got.Result)
	}
	if got.UpstreamCalls != 2 {
		t.Errorf("upstream_calls: expected 2 (one per run), got %d", got.UpstreamCalls)
	}
}

// A live run that fails while a stale run's call is still open waits for
// that call before it writes the failure: run 2's call fails for good (a
// 429) first, and run 1's 200 comes only once run 2 is waiting; the job
// completes with run 1's charged answer instead of failing beside it.
func TestLiveRunsFailureWaitsForTheStaleRunsOpenCall(t *testing.T) {
	h := newHarness(t)
	gate := newGatedCompressor(h.comp, 2)
	h.cfg.Compressor = gate
	waiting := make(chan struct{})
	h.cfg.Logger = slog.New(&signalHandler{Handler: testLogger().Handler(), once: new(sync.Once),
		msg: "another run's upstream call may still be answered: waiting for it before failing the job", seen: waiting})
	job, run1, run2 := twoRuns(t, h, gate)

	zero := int64(0)
	gate.answers[1] <- &connector.Error{Code: connector.ENOCREDITS, Message: "No credits", UpstreamStatus: 429, CreditsRemaining: &zero}
	select {
	case <-waiting:
	case err := <-run2:
		t.Fatalf("live run ended (%v) without waiting for run 1's open call", err)
	}
	if got, _ := h.store.Jobs.Get(context.Background(), job.ID); got.Status != connector.StatusProcessing {
		t.Fatalf("while run 1's call is open: expected the job still processing, got %s", got.Status)
	}
	gate.answers[0] <- nil
	if err := <-run1; err != nil {
		t.Fatalf("stale run: expected it to end quietly (answer kept, end refused), got %v", err)
	}
	if err := <-run2; err != nil {
		t.Fatalf("live run: expected its failure to turn into the kept completion, got %v", err)
	}
	got, _ := h.store.Jobs.Get(context.Background(), job.ID)
	if got.Status != connector.StatusCompleted || got.Error != nil || got.Result == nil || got.Result.UpstreamJobID != "up-0" {
		t.Fatalf("expected completed with run 1's charged answer up-0, got %s, error %+v, result %+v", got.Status, got.Error, got.Result)
	}
}

// A call left open by a run that died is waited for only until its run's
// deadline: the failure is written then.
func TestFailureWaitsForADeadRunsCallOnlyUntilItsDeadline(t *testing.T) {
	h := newHarness(t)
	w, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png", Filename: "photo.png"})
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	ctx := context.Background()
	// Run 1 began a call and died; its deadline is 1.5 s away.
	dying, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, _, err := h.cfg.Runs.Start(dying, job.ID, startRun, false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cfg.Runs.BeginCall(dying, job.ID, 1); err != nil {
		t.Fatal(err)
	}
	rec, err := h.cfg.Runs.Calls(ctx, job.ID)
	if until, open := rec.OpenEarlier(2, time.Now()); err != nil || !open || time.Until(until) > 1500*time.Millisecond {
		t.Fatalf("call record %+v, %v: expected run 1's call open for at most 1.5 s", rec, err)
	}
	if _, open := rec.OpenEarlier(1, time.Now()); open {
		t.Fatal("a run's own open call must not hold its end")
	}
	// Run 2 fails for good: the upstream says the image is invalid.
	h.comp.setFailures(&connector.Error{Code: connector.EINVALID, Message: "Invalid file format", UpstreamStatus: 400})
	task := asynq.NewTask(TypeCompress, fmt.Appendf(nil, `{"job_id":%q}`, job.ID))
	start := time.Now()
	if err := w.Handler().ProcessTask(ctx, task); err != nil {
		t.Fatalf("the job failed for the caller's mistake: %v, want the task done (nil), not archived", err)
	}
	got, _ := h.store.Jobs.Get(ctx, job.ID)
	if got.Status != connector.StatusFailed {
		t.Fatalf("expected the job failed once run 1's call could no longer be answered, got %s", got.Status)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("expected the failure to wait for run 1's call (open for 1.5 s), it took %s", waited)
	}
}

// signalHandler closes seen the first time a record with message msg is
// handled.
type signalHandler struct {
	slog.Handler
	msg  string
	seen chan struct{}
	once *sync.Once
}

func (s *signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (s *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == s.msg {
		s.once.Do(func() { close(s.seen) })
	}
	if !s.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return s.Handler.Handle(ctx, r)
}

func (s *signalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &signalHandler{Handler: s.Handler.WithAttrs(attrs), msg: s.msg, seen: s.seen, once: s.once}
}

// A run that fails before it could even read the job (Redis down as its
// last retry starts) still ends the job: its failure is written under the
// run number read once Redis is back, not guarded on run 0 and refused as
// stale, which would leave the job processing for good.
func TestALastRunThatCannotReadTheJobStillFailsIt(t *testing.T) {
	h := newHarness(t)
	h.cfg.MaxCompressRetries = 1
	client := asynq.NewClient(h.cfg.RedisConnOpt)
	t.Cleanup(func() { client.Close() })
	h.queue = NewQueue(client, h.cfg.Queue, h.queueOptions(WithWakeUps(h.redis.Client), WithMaxCompressRetries(1))...)
	h.comp.setFailures(&connector.Error{Code: connector.EUPSTREAM, Message: "Bad gateway", UpstreamStatus: 502, Retryable: true})
	h.cfg.Runs = &openFailsOnce{JobRuns: h.cfg.Runs, on: 2}
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusFailed || got.Error == nil || got.Error.Code != connector.EUNAVAILABLE {
		t.Fatalf("expected the job failed with the outage's error, got %s, error %+v", got.Status, got.Error)
	}
	if got.Runs != 1 {
		t.Errorf("run number: expected 1 (the second run never started), got %d", got.Runs)
	}
}

// openFailsOnce is the executor's store whose OpenJob number on answers
// as Redis down would (counting from 1).
type openFailsOnce struct {
	connector.JobRuns
	on    int64
	calls atomic.Int64
}

func (o *openFailsOnce) OpenJob(ctx context.Context, id string) (*connector.Job, *connector.Blob, error) {
	if o.calls.Add(1) == o.on {
		return nil, nil, &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable", Retryable: true}
	}
	return o.JobRuns.OpenJob(ctx, id)
}

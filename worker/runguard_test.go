package worker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

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
	if got, _ := h.store.Jobs.GetJob(context.Background(), job.ID); got.Attempts != 2 || got.Status != connector.StatusProcessing {
		t.Fatalf("expected the job processing in run 2, got %s in run %d", got.Status, got.Attempts)
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
	got, _ := h.store.Jobs.GetJob(context.Background(), job.ID)
	if got.Status != connector.StatusProcessing || got.Error != nil {
		t.Fatalf("after the stale run's failure: expected the job still processing in run 2, got %s, error %+v", got.Status, got.Error)
	}
	gate.answers[1] <- nil
	if err := <-run2; err != nil {
		t.Fatalf("live run: expected success, got %v", err)
	}
	got, _ = h.store.Jobs.GetJob(context.Background(), job.ID)
	if got.Status != connector.StatusCompleted || got.Result == nil || got.Result.UpstreamJobID != "up-0" || got.Attempts != 2 {
		t.Fatalf("expected completed by run 2 with its answer up-0, got %s, result %+v, run %d", got.Status, got.Result, got.Attempts)
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
	if got, _ := h.store.Jobs.GetJob(context.Background(), job.ID); got.Status != connector.StatusProcessing {
		t.Fatalf("after the stale run's answer: expected the job still processing in run 2, got %s", got.Status)
	}
	zero := int64(0)
	gate.answers[1] <- &connector.Error{Code: connector.ENOCREDITS, Message: "No credits", UpstreamStatus: 429, CreditsRemaining: &zero}
	if err := <-run2; err != nil {
		t.Fatalf("live run: expected its failure to turn into the kept completion, got %v", err)
	}
	got, _ := h.store.Jobs.GetJob(context.Background(), job.ID)
	if got.Status != connector.StatusCompleted || got.Error != nil || got.Result == nil || got.Result.UpstreamJobID != "up-0" {
		t.Fatalf("expected completed with run 1's charged answer up-0, got %s, error %+v, result %+v", got.Status, got.Error, got.Result)
	}
	if got.UpstreamCalls != 2 {
		t.Errorf("upstream_calls: expected 2 (one per run), got %d", got.UpstreamCalls)
	}
}

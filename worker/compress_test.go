package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/asynqext"
)

func credits(n int64) *int64 { return &n }

func TestURLJobCompletesAndStoresOutput(t *testing.T) {
	h := newHarness(t)
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "completed", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed, got %s (error %+v)", got.Status, got.Error)
	}
	want := images.Read(t, "photo.png")
	if got.Result == nil || got.Result.OriginalSize != int64(len(want)) || got.Result.MIMEType != "image/png" ||
		got.Result.Filename != "photo.png" || got.Result.CreditsRemaining == nil || *got.Result.CreditsRemaining != 499 {
		t.Errorf("result: expected photo.png image/png of %d bytes with 499 credits left, got %+v", len(want), got.Result)
	}
	if got.Input.Size != int64(len(want)) || got.Input.MIMEType != "image/png" || got.Input.Filename != "photo.png" {
		t.Errorf("input: expected size %d, image/png, photo.png recorded, got %+v", len(want), got.Input)
	}
	if got.StartedAt == nil || got.FinishedAt == nil || got.Runs != 1 {
		t.Errorf("expected started_at, finished_at and 1 attempt, got %v, %v, %d", got.StartedAt, got.FinishedAt, got.Runs)
	}
	out, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.OutputBlobKey(job.ID))
	if err != nil || !bytes.Equal(out, want) {
		t.Errorf("output blob: expected the %d compressed bytes, got %d bytes, err %v", len(want), len(out), err)
	}
	if keys := h.comp.Keys(); len(keys) != 1 || keys[0] != testAPIKey {
		t.Errorf("upstream: expected one call with the unsealed key, got %d calls", len(keys))
	}
}

func TestUploadedJobCompletesAndItsInputIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.start()
	data := images.Read(t, "photo.webp")
	job := h.newJob(connector.JobInput{Kind: connector.InputUpload, Filename: "holiday.jpeg"}, "")
	ctx := context.Background()
	if err := h.store.Blobs.Put(ctx, connector.InputBlobKey(job.ID), bytes.NewReader(data), int64(len(data)), 0); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed, got %s (error %+v)", got.Status, got.Error)
	}
	if got.Result.MIMEType != "image/webp" || got.Result.Filename != "holiday.webp" {
		t.Errorf("result: expected image/webp named holiday.webp (the bytes decide), got %s %q", got.Result.MIMEType, got.Result.Filename)
	}
	if out, err := connector.ReadBlob(ctx, h.store.Blobs, connector.OutputBlobKey(job.ID)); err != nil || !bytes.Equal(out, data) {
		t.Errorf("output blob: expected %d bytes, got %d, err %v", len(data), len(out), err)
	}
	if _, err := connector.ReadBlob(ctx, h.store.Blobs, connector.InputBlobKey(job.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("input blob: expected it deleted (not_found), got err %v", err)
	}
}

func TestUpstream5xxIsRetriedAndTheJobCompletesWithOneSuccessfulCall(t *testing.T) {
	h := newHarness(t)
	busy := &connector.Error{Code: connector.EUPSTREAM, Message: "Internal server error", UpstreamStatus: 500, Retryable: true}
	h.comp.setFailures(busy, busy)
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed after two 500s, got %s (error %+v)", got.Status, got.Error)
	}
	if calls := h.comp.Calls(); calls != 3 {
		t.Errorf("upstream calls: expected 2 failed + 1 successful = 3, got %d", calls)
	}
	if got.Runs != 3 || got.UpstreamCalls != 3 || got.ChargeUncertain {
		t.Errorf("expected 3 attempts, upstream_calls 3, charge certain (a 500 costs nothing), got %d, %d, %v",
			got.Runs, got.UpstreamCalls, got.ChargeUncertain)
	}
}

func TestFinalErrorsFailTheJobAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream error // from the compression API
		fetch    error // from fetching the image URL
		wantCode connector.ErrorCode
		status   int
		// retryable is what the job's error tells the caller: resubmitting
		// may help, though this task is not retried.
		retryable bool
	}{
		{name: "429 no credits", upstream: &connector.Error{Code: connector.ENOCREDITS, Message: "Insufficient credits. Please purchase more credits to continue compression.", UpstreamStatus: 429, CreditsRemaining: credits(0)}, wantCode: connector.ENOCREDITS, status: 429},
		{name: "401 bad key", upstream: &connector.Error{Code: connector.EUNAUTHORIZED, Message: "Invalid API key", UpstreamStatus: 401}, wantCode: connector.EUNAUTHORIZED, status: 401},
		{name: "400 format", upstream: &connector.Error{Code: connector.EFORMAT, Message: "Invalid file format", UpstreamStatus: 400}, wantCode: connector.EFORMAT, status: 400},
		{name: "400 invalid", upstream: &connector.Error{Code: connector.EINVALID, Message: "No file uploaded", UpstreamStatus: 400}, wantCode: connector.EINVALID, status: 400},
		{name: "413 too large", upstream: &connector.Error{Code: connector.ETOOLARGE, Message: "Image size (11000000 bytes) exceeds maximum limit (10485760 bytes)", UpstreamStatus: 413}, wantCode: connector.ETOOLARGE, status: 413},
		{name: "private URL", fetch: &connector.Error{Code: connector.EURLREFUSED, Message: "image_url points into a private network"}, wantCode: connector.EURLREFUSED},
		{name: "fetch 404", fetch: &connector.Error{Code: connector.EFETCH, Message: "image_url answered 404"}, wantCode: connector.EFETCH},
		{name: "fetched too large", fetch: &connector.Error{Code: connector.ETOOLARGE, Message: "image over 10 MiB"}, wantCode: connector.ETOOLARGE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.comp.setFailures(tc.upstream)
			if tc.fetch != nil { // before the job exists, so no attempt can miss it
				h.fetcher.setErr("https://images.test/photo.png", tc.fetch)
			}
			h.start()
			cb := newReceiver(t)
			job := h.submitURLJob(cb.URL + "/cb")

			got := h.waitJob(job.ID, "finished", finished)
			if got.Status != connector.StatusFailed || got.Error == nil {
				t.Fatalf("expected failed with an error, got %s %+v", got.Status, got.Error)
			}
			want := connector.JobErrorFrom(tc.upstream)
			if tc.fetch != nil {
				want = connector.JobErrorFrom(tc.fetch)
			}
			if got.Error.Code != tc.wantCode || got.Error.Message != want.Message || got.Error.UpstreamStatus != tc.status || got.Error.Retryable != tc.retryable {
				t.Errorf("error: expected %s %q upstream_status %d retryable %v, got %+v", tc.wantCode, want.Message, tc.status, tc.retryable, got.Error)
			}
			if tc.wantCode == connector.ENOCREDITS && (got.Error.CreditsRemaining == nil || *got.Error.CreditsRemaining != 0) {
				t.Errorf("error: expected credits_remaining 0, got %v", got.Error.CreditsRemaining)
			}
			// The failure is delivered, which also proves the task is done
			// with: no retry can come after.
			waitFor(t, "the failure delivered to the callback", func() bool { return cb.count() == 1 })
			wantCalls := 1
			if tc.fetch != nil {
				wantCalls = 0
			}
			if calls := h.comp.Calls(); calls != wantCalls || got.Runs != 1 {
				t.Errorf("expected %d upstream call(s) and 1 attempt, got %d and %d", wantCalls, calls, got.Runs)
			}
		})
	}
}

func TestRetryableErrorOnTheLastAttemptFailsTheJobAsRetryable(t *testing.T) {
	h := newHarness(t)
	down := &connector.Error{Code: connector.EUPSTREAM, Message: "Bad gateway", UpstreamStatus: 502, Retryable: true}
	h.comp.setFailures(down, down, down, down)
	h.cfg.MaxCompressRetries = 2 // fair dispatch's workers decide retries
	h.queue = NewQueue(h.queue.client, h.redis.Queue(), h.queueOptions(WithMaxCompressRetries(2))...)
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusFailed || got.Error == nil || !got.Error.Retryable ||
		got.Error.Code != connector.EUPSTREAM || got.Error.UpstreamStatus != 502 {
		t.Fatalf("expected failed upstream_error 502 retryable:true, got %s %+v", got.Status, got.Error)
	}
	if calls := h.comp.Calls(); calls != 3 || got.Runs != 3 {
		t.Errorf("expected 3 attempts (1 + 2 retries) and 3 calls, got %d attempts, %d calls", got.Runs, calls)
	}
}

// crashOnce makes the worker "die" once, at step of the billing path.
func crashOnce(h *harness, step string) *atomic.Bool {
	var crashed atomic.Bool
	h.tweak = func(w *Worker) {
		w.crashHook = func(s, jobID string) bool {
			return s == step && !crashed.Swap(true)
		}
	}
	return &crashed
}

// A worker killed after the upstream charged and the answer was kept, or
// after the result was stored: the re-run never calls the upstream again.
func TestKillAfterTheChargedAnswerIsKeptDoesNotChargeAgain(t *testing.T) {
	// After "stored" the re-run only marks the job completed: no new attempt.
	for step, attempts := range map[string]int{"kept": 2, "stored": 1} {
		t.Run(step, func(t *testing.T) {
			h := newHarness(t)
			crashed := crashOnce(h, step)
			h.start()
			job := h.submitURLJob("")

			got := h.waitJob(job.ID, "finished", finished)
			if got.Status != connector.StatusCompleted {
				t.Fatalf("status: expected completed, got %s (error %+v)", got.Status, got.Error)
			}
			if !crashed.Load() {
				t.Fatal("the crash hook never ran")
			}
			if calls := h.comp.Calls(); calls != 1 {
				t.Errorf("upstream calls: expected exactly 1 (one credit per job), got %d", calls)
			}
			if got.Result == nil || got.Result.UpstreamJobID != "up-0" || got.Runs != attempts {
				t.Errorf("result: expected the first call's result up-0 after %d attempts, got %+v after %d", attempts, got.Result, got.Runs)
			}
			if got.UpstreamCalls != 1 || got.ChargeUncertain {
				t.Errorf("job: expected upstream_calls 1, charge_uncertain false, got %d, %v", got.UpstreamCalls, got.ChargeUncertain)
			}
			if out, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.OutputBlobKey(job.ID)); err != nil || len(out) == 0 {
				t.Errorf("output blob: expected the kept bytes, got %d bytes, err %v", len(out), err)
			}
		})
	}
}

// A worker killed after the upstream answered 200 but before the answer was
// kept looks, to the re-run, exactly like one killed mid-call: the call may
// have been charged. The re-run compresses again (the only way to a result)
// and the job and the metric say the charge is uncertain.
func TestKillBeforeTheAnswerIsKeptFlagsTheChargeAsUncertain(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.cfg.Observer = rec
	crashed := crashOnce(h, "answered")
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted || !crashed.Load() {
		t.Fatalf("status: expected completed after a crash, got %s (error %+v, crashed %v)", got.Status, got.Error, crashed.Load())
	}
	if calls := h.comp.Calls(); calls != 2 || got.UpstreamCalls != 2 || !got.ChargeUncertain {
		t.Errorf("expected 2 upstream calls, upstream_calls 2 and charge_uncertain true, got %d calls, %d, %v",
			calls, got.UpstreamCalls, got.ChargeUncertain)
	}
	if got.Result == nil || got.Result.UpstreamJobID != "up-1" {
		t.Errorf("result: expected the second call's up-1, got %+v", got.Result)
	}
	h.comp.mu.Lock()
	keys := h.comp.idempotencyKeys
	h.comp.mu.Unlock()
	if len(keys) != 2 || keys[0] != job.ID || keys[1] != job.ID {
		t.Errorf("Idempotency-Keys: expected the job id on both calls, got %v", keys)
	}
	if !rec.has("charge uncertain") {
		t.Error("observer: expected to hear of the uncertain charge")
	}
}

// Redis unreachable for longer than the old in-place retries (2.6 s) right
// after the upstream charged: the worker keeps the answer and stores it
// when Redis is back, without a second call.
func TestStoreIsRetriedThroughARedisOutageWithoutCallingAgain(t *testing.T) {
	h := newHarness(t)
	out := &outage{store: h.store}
	h.cfg.Jobs, h.cfg.Blobs, h.cfg.Runs = out.jobs(), out.blobs(), out.runs()
	h.comp.onAnswer = func() { out.downFor(4 * time.Second) }
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed, got %s (error %+v)", got.Status, got.Error)
	}
	if calls := h.comp.Calls(); calls != 1 || got.UpstreamCalls != 1 || got.ChargeUncertain {
		t.Errorf("expected 1 upstream call (upstream_calls 1, charge certain), got %d calls, %d, %v", calls, got.UpstreamCalls, got.ChargeUncertain)
	}
	if got.Runs != 1 {
		t.Errorf("attempts: expected the first attempt to store its answer, got %d attempts", got.Runs)
	}
	if n := out.refused.Load(); n < 3 {
		t.Errorf("expected the worker to meet the outage (several refused writes), got %d", n)
	}
}

func TestDuplicateTaskOfAFinishedJobDoesNothing(t *testing.T) {
	h := newHarness(t)
	w, _ := h.start()
	cb := newReceiver(t)
	job := h.submitURLJob(cb.URL)
	done := h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})

	h.enqueue(job.ID) // same task id: a no-op while retained
	// And the handler itself, as if the task ran again anyway.
	task := asynq.NewTask(TypeCompress, fmt.Appendf(nil, `{"job_id":%q}`, job.ID))
	if err := w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Fatalf("ProcessTask of a finished job: expected nil, got %v", err)
	}
	again, err := h.store.Jobs.Get(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if calls := h.comp.Calls(); calls != 1 {
		t.Errorf("upstream calls: expected 1, got %d", calls)
	}
	if !again.UpdatedAt.Equal(done.UpdatedAt) || again.Runs != 1 {
		t.Errorf("job: expected untouched (updated_at %v, 1 attempt), got %v, %d attempts", done.UpdatedAt, again.UpdatedAt, again.Runs)
	}
	if n := cb.count(); n != 1 {
		t.Errorf("callback: expected 1 delivery (delivery id is unique), got %d", n)
	}
}

func TestUnknownJobTaskIsDropped(t *testing.T) {
	h := newHarness(t)
	w, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	task := asynq.NewTask(TypeCompress, []byte(`{"job_id":"0190a0a0-0000-7000-8000-000000000000"}`))
	if err := w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Errorf("expected nil (nothing to do), got %v", err)
	}
	if calls := h.comp.Calls(); calls != 0 {
		t.Errorf("upstream calls: expected 0, got %d", calls)
	}
}

func TestUnreachableImageURLFailsAfterAFewAttempts(t *testing.T) {
	h := newHarness(t)
	h.fetcher.setErr("https://images.test/photo.png",
		&connector.Error{Code: connector.EFETCH, Message: "could not connect to images.test", Retryable: true})
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusFailed || got.Error == nil || got.Error.Code != connector.EFETCH || !got.Error.Retryable {
		t.Fatalf("expected failed fetch_failed retryable:true, got %s %+v", got.Status, got.Error)
	}
	if got.Runs != 1+maxFetchRetries || h.comp.Calls() != 0 {
		t.Errorf("expected %d attempts and no upstream call, got %d attempts, %d calls", 1+maxFetchRetries, got.Runs, h.comp.Calls())
	}
}

// takeAsDeadServer puts the job's task in the active list with a lease
// ending at leaseEnd (Unix seconds; 0: no lease entry), as asynq's dequeue
// does for a server that no heartbeat lists.
func (h *harness) takeAsDeadServer(jobID string, leaseEnd int64) {
	h.t.Helper()
	ctx := context.Background()
	q := asynqext.QueueOf(h.redis.Queue())
	if id, err := h.redis.Client.LMove(ctx, q.Pending(), q.Active(), "RIGHT", "LEFT").Result(); err != nil || id != jobID {
		h.t.Fatalf("taking the task as a worker would: %q, %v", id, err)
	}
	if leaseEnd != 0 {
		h.redis.Client.ZAdd(ctx, q.Lease(), redis.Z{Score: float64(leaseEnd), Member: jobID})
	}
	h.redis.Client.HSet(ctx, q.Task(jobID), asynqext.StateField, string(asynqext.TaskActive))
}

// A worker killed mid-task leaves its task "active" in asynq; with asynq
// alone it comes back after 60–120 s. The recoverer puts it back on the
// queue as soon as its lease has run out, or at once when it has none.
func TestAbandonedTaskIsRequeuedWithinSeconds(t *testing.T) {
	asynqOnly(t, "TestFairLapsedLeaseRunsTheJobAgainOnce")
	for name, leaseEnd := range map[string]int64{
		"lease ran out": time.Now().Add(-5 * time.Second).Unix(),
		"no lease":      0,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.tweak = func(w *Worker) { w.recoverEvery = 50 * time.Millisecond }
			job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/photo.png"}, "")
			h.fetcher.set("https://images.test/photo.png", &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png"})
			h.enqueue(job.ID)
			h.takeAsDeadServer(job.ID, leaseEnd)

			h.start()
			got := h.waitJob(job.ID, "completed", finished)
			if got.Status != connector.StatusCompleted || h.comp.Calls() != 1 {
				t.Fatalf("expected the abandoned job completed with one upstream call, got %s after %d calls", got.Status, h.comp.Calls())
			}
		})
	}
}

// The double run: a server has just dequeued a task (its lease
// is fresh) and no heartbeat lists it yet (they come every 5 s). No
// recoverer, in any process, may requeue it, however long it has watched
// the task id: only the lease says whether a task has a server.
func TestTaskWithALiveLeaseIsNeverRequeued(t *testing.T) {
	asynqOnly(t, "TestFairLapsedLeaseRunsTheJobAgainOnce")
	h := newHarness(t)
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/photo.png"}, "")
	h.enqueue(job.ID)
	h.takeAsDeadServer(job.ID, time.Now().Add(30*time.Second).Unix())
	log := slog.New(slog.DiscardHandler)
	recoverers := []*abandonedRecoverer{
		{rdb: h.redis.Client, queue: h.redis.Queue(), log: log},
		{rdb: h.redis.Client, queue: h.redis.Queue(), log: log},
	}
	ctx := context.Background()
	for range 20 {
		for _, r := range recoverers {
			if moved := r.pass(ctx); len(moved) > 0 {
				t.Fatalf("requeued %v while its lease is live: the task would run twice", moved)
			}
		}
	}
	if active, _ := h.redis.Client.LRange(ctx, asynqext.QueueOf(h.redis.Queue()).Active(), 0, -1).Result(); len(active) != 1 || active[0] != job.ID {
		t.Fatalf("active list: expected [%s], got %v", job.ID, active)
	}
}

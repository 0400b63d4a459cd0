package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
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
	if got.StartedAt == nil || got.FinishedAt == nil || got.Attempts != 1 {
		t.Errorf("expected started_at, finished_at and 1 attempt, got %v, %v, %d", got.StartedAt, got.FinishedAt, got.Attempts)
	}
	out, err := h.store.GetBlob(context.Background(), connector.OutputBlobKey(job.ID))
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
	if err := h.store.PutBlob(ctx, connector.InputBlobKey(job.ID), data, 0); err != nil {
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
	if out, err := h.store.GetBlob(ctx, connector.OutputBlobKey(job.ID)); err != nil || !bytes.Equal(out, data) {
		t.Errorf("output blob: expected %d bytes, got %d, err %v", len(data), len(out), err)
	}
	if _, err := h.store.GetBlob(ctx, connector.InputBlobKey(job.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
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
	if got.Attempts != 3 {
		t.Errorf("attempts: expected 3, got %d", got.Attempts)
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
		// A 200 with an unreadable body was charged: retrying would charge twice.
		{name: "200 unreadable", upstream: &connector.Error{Code: connector.EUPSTREAM, Message: "compression API answered 200 with an unreadable body", UpstreamStatus: 200, Retryable: true}, wantCode: connector.EUPSTREAM, status: 200, retryable: true},
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
			if calls := h.comp.Calls(); calls != wantCalls || got.Attempts != 1 {
				t.Errorf("expected %d upstream call(s) and 1 attempt, got %d and %d", wantCalls, calls, got.Attempts)
			}
		})
	}
}

func TestRetryableErrorOnTheLastAttemptFailsTheJobAsRetryable(t *testing.T) {
	h := newHarness(t)
	down := &connector.Error{Code: connector.EUPSTREAM, Message: "Bad gateway", UpstreamStatus: 502, Retryable: true}
	h.comp.setFailures(down, down, down, down)
	h.queue = NewQueue(h.queue.client, h.redis.Queue(), WithMaxCompressRetries(2))
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusFailed || got.Error == nil || !got.Error.Retryable ||
		got.Error.Code != connector.EUPSTREAM || got.Error.UpstreamStatus != 502 {
		t.Fatalf("expected failed upstream_error 502 retryable:true, got %s %+v", got.Status, got.Error)
	}
	if calls := h.comp.Calls(); calls != 3 || got.Attempts != 3 {
		t.Errorf("expected 3 attempts (1 + 2 retries) and 3 calls, got %d attempts, %d calls", got.Attempts, calls)
	}
}

func TestRetryAfterTheResultIsStoredDoesNotCallTheUpstreamAgain(t *testing.T) {
	h := newHarness(t)
	var crashed atomic.Bool
	h.tweak = func(w *Worker) {
		w.afterResultStored = func(jobID string) error {
			if crashed.Swap(true) {
				return nil
			}
			return errors.New("worker crashed right after storing the result")
		}
	}
	h.start()
	job := h.submitURLJob("")

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed, got %s (error %+v)", got.Status, got.Error)
	}
	if !crashed.Load() {
		t.Fatal("the test hook never ran")
	}
	if calls := h.comp.Calls(); calls != 1 {
		t.Errorf("upstream calls: expected exactly 1 (one credit per job), got %d", calls)
	}
	if got.Result == nil || got.Result.UpstreamJobID != "up-0" {
		t.Errorf("result: expected the first call's result up-0, got %+v", got.Result)
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
	again, err := h.store.GetJob(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if calls := h.comp.Calls(); calls != 1 {
		t.Errorf("upstream calls: expected 1, got %d", calls)
	}
	if !again.UpdatedAt.Equal(done.UpdatedAt) || again.Attempts != 1 {
		t.Errorf("job: expected untouched (updated_at %v, 1 attempt), got %v, %d attempts", done.UpdatedAt, again.UpdatedAt, again.Attempts)
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
	if got.Attempts != 1+maxFetchRetries || h.comp.Calls() != 0 {
		t.Errorf("expected %d attempts and no upstream call, got %d attempts, %d calls", 1+maxFetchRetries, got.Attempts, h.comp.Calls())
	}
}

package redisstore

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// FinishKept keeps the charged answer and its bytes and ends the job in
// one write; a stale run's end is refused but its answer is kept for the
// live run, as when keeping was a step of its own. After Redis forgot its
// scripts (a restart) it works again.
func TestFinishKeptKeepsTheAnswerAndEndsTheJob(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	start := func(t *testing.T) (*connector.Job, connector.CallRecord) {
		id := newJob(t, s, "tenant", connector.StatusQueued).ID
		if err := s.Blobs.Put(ctx, connector.InputBlobKey(id), bytes.NewReader([]byte("png")), 3, time.Hour); err != nil {
			t.Fatal(err)
		}
		job, rec, err := s.Runs.Start(ctx, id, func(j *connector.Job) error { j.Status = connector.StatusProcessing; j.Runs++; return nil }, true)
		if err != nil {
			t.Fatal(err)
		}
		return job, rec
	}
	answer := &connector.KeptAnswer{Result: &connector.JobResult{CompressedSize: 4, UpstreamJobID: "up-1"}}
	complete := func(j *connector.Job) { j.Status, j.Result = connector.StatusCompleted, answer.Result }
	for _, flush := range []bool{false, true} {
		job, rec := start(t)
		if flush {
			if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		got, hooks, err := s.Runs.FinishKept(ctx, job.ID, job.Runs, rec.Calls, answer, bytes.NewReader([]byte("tiny")), time.Hour, complete)
		if err != nil || got.Status != connector.StatusCompleted || hooks != connector.HooksNone {
			t.Fatalf("flush %v: FinishKept: %+v, %v, %v", flush, got, hooks, err)
		}
		calls, err := s.Runs.Calls(ctx, job.ID)
		if err != nil || calls.Kept == nil || calls.Kept.Result.UpstreamJobID != "up-1" || calls.Answered != 1 || calls.Unanswered() != 0 {
			t.Fatalf("flush %v: call record: expected the kept answer, 1 answered, none open, got %+v, %v", flush, calls, err)
		}
		if out, err := connector.ReadBlob(ctx, s.Blobs, connector.OutputBlobKey(job.ID)); err != nil || string(out) != "tiny" {
			t.Fatalf("flush %v: output blob: expected %q, got %q, %v", flush, "tiny", out, err)
		}
		if _, err := connector.ReadBlob(ctx, s.Blobs, connector.InputBlobKey(job.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Fatalf("flush %v: input of the finished job: expected ENOTFOUND, got %v", flush, err)
		}
		stored, err := s.Jobs.Get(ctx, job.ID)
		if err != nil || stored.Status != connector.StatusCompleted {
			t.Fatalf("flush %v: stored job: %+v, %v", flush, stored, err)
		}
	}

	// A stale run (a later run started meanwhile): refused, answer kept.
	job, rec := start(t)
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Runs++; return nil }); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Runs.FinishKept(ctx, job.ID, job.Runs, rec.Calls, answer, bytes.NewReader([]byte("tiny")), time.Hour, complete)
	if !errors.Is(err, connector.ErrStaleRun) {
		t.Fatalf("stale run: expected ErrStaleRun, got %v", err)
	}
	calls, err := s.Runs.Calls(ctx, job.ID)
	if err != nil || calls.Kept == nil || calls.Answered != 1 {
		t.Fatalf("stale run: expected its answer kept, got %+v, %v", calls, err)
	}
	if out, err := connector.ReadBlob(ctx, s.Blobs, connector.OutputBlobKey(job.ID)); err != nil || string(out) != "tiny" {
		t.Fatalf("stale run: output blob: expected %q, got %q, %v", "tiny", out, err)
	}
	if stored, err := s.Jobs.Get(ctx, job.ID); err != nil || stored.Status != connector.StatusProcessing {
		t.Fatalf("stale run: the job must stay the live run's, got %+v, %v", stored, err)
	}
}

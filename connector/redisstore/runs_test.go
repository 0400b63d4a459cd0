package redisstore

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func startRunForTest(j *connector.Job) error {
	j.Status = connector.StatusProcessing
	j.Runs++
	return nil
}

func failJob(j *connector.Job) {
	j.Status, j.Error = connector.StatusFailed, &connector.JobError{Code: connector.EINVALID, Message: "bad"}
}

// The end of a job is written under the run that started it: a run that a
// later one replaced cannot end the job, the live one can, and nothing
// ends a job twice.
func TestFinishRunIsFencedByTheRunNumber(t *testing.T) {
	s, _ := newStore(t, Options{})
	runs := s.Runs
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	first, _, err := runs.Start(ctx, job.ID, startRunForTest, false)
	if err != nil || first.Runs != 1 {
		t.Fatalf("run 1: expected run number 1, got %+v, %v", first, err)
	}
	second, _, err := runs.Start(ctx, job.ID, startRunForTest, false)
	if err != nil || second.Runs != 2 {
		t.Fatalf("run 2: expected run number 2, got %+v, %v", second, err)
	}
	if _, _, err := runs.Finish(ctx, job.ID, 1, failJob); !errors.Is(err, connector.ErrStaleRun) {
		t.Fatalf("stale run's end: expected ErrStaleRun, got %v", err)
	}
	if got, _ := s.Jobs.Get(ctx, job.ID); got.Status != connector.StatusProcessing {
		t.Fatalf("after the stale end: expected processing, got %s", got.Status)
	}
	done, _, err := runs.Finish(ctx, job.ID, 2, func(j *connector.Job) { j.Status = connector.StatusCompleted })
	if err != nil || done.Status != connector.StatusCompleted {
		t.Fatalf("live run's end: expected completed, got %+v, %v", done, err)
	}
	if _, _, err := runs.Finish(ctx, job.ID, 2, failJob); !errors.Is(err, connector.ErrJobFinished) {
		t.Fatalf("a second end: expected ErrJobFinished, got %v", err)
	}
}

// A failure yields to a charged answer kept in the call record (a stale
// run's), in the same write; a completion does not.
func TestFinishRunRefusesAFailureWhileAnAnswerIsKept(t *testing.T) {
	s, _ := newStore(t, Options{})
	runs := s.Runs
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	if _, _, err := runs.Start(ctx, job.ID, startRunForTest, true); err != nil {
		t.Fatal(err)
	}
	answer := &connector.KeptAnswer{Result: &connector.JobResult{CompressedSize: 3, MIMEType: "image/png"}}
	if err := runs.KeepAnswer(ctx, job.ID, 1, answer, bytes.NewReader([]byte("png")), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runs.Finish(ctx, job.ID, 1, failJob); !errors.Is(err, connector.ErrAnswerKept) {
		t.Fatalf("failure with a kept answer: expected ErrAnswerKept, got %v", err)
	}
	if got, _ := s.Jobs.Get(ctx, job.ID); got.Status != connector.StatusProcessing {
		t.Fatalf("after the refused failure: expected processing, got %s", got.Status)
	}
	rec, err := runs.Calls(ctx, job.ID)
	if err != nil || rec.Kept == nil {
		t.Fatalf("call record: expected the kept answer, got %+v, %v", rec, err)
	}
	done, _, err := runs.Finish(ctx, job.ID, 1, func(j *connector.Job) { j.Status, j.Result = connector.StatusCompleted, rec.Kept.Result })
	if err != nil || done.Status != connector.StatusCompleted {
		t.Fatalf("completion with the kept answer: expected completed, got %+v, %v", done, err)
	}
}

// With blobs elsewhere (S3), the executor's store puts the bytes there and
// deletes the input there at the end; Redis keeps none of them.
func TestRunsDelegateBlobsToAnotherStore(t *testing.T) {
	s, _ := newStore(t, Options{})
	other, _ := newStore(t, Options{Prefix: "elsewhere:"})
	runs := s.Runs.WithBlobs(other.Blobs)
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	if err := other.Blobs.Put(ctx, connector.InputBlobKey(job.ID), bytes.NewReader([]byte("in")), 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, in, err := runs.OpenJob(ctx, job.ID); err != nil || in != nil {
		t.Fatalf("OpenJob: expected the job and no input opened (it is elsewhere), got %v, %v", in, err)
	}
	if _, _, err := runs.Start(ctx, job.ID, startRunForTest, true); err != nil {
		t.Fatal(err)
	}
	if err := runs.KeepAnswer(ctx, job.ID, 1, &connector.KeptAnswer{Result: &connector.JobResult{}}, bytes.NewReader([]byte("out")), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.ReadBlob(ctx, other.Blobs, connector.OutputBlobKey(job.ID)); err != nil {
		t.Fatalf("output: expected it in the other store, got %v", err)
	}
	if _, err := connector.ReadBlob(ctx, s.Blobs, connector.OutputBlobKey(job.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("output: expected none in Redis, got %v", err)
	}
	if _, _, err := runs.Finish(ctx, job.ID, 1, func(j *connector.Job) { j.Status = connector.StatusCompleted }); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.ReadBlob(ctx, other.Blobs, connector.InputBlobKey(job.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("input: expected it deleted from the other store at the end, got %v", err)
	}
}

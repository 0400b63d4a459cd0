package redisstore

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The write that finishes a job deletes its input (inputs live until their
// job ends); an update that does not finish it leaves the input alone.
func TestFinishingAJobDeletesItsInputInTheSameWrite(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	in := connector.InputBlobKey(job.ID)
	if err := s.Blobs.Put(ctx, in, bytes.NewReader([]byte("png")), 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.ReadBlob(ctx, s.Blobs, in); err != nil {
		t.Fatalf("input of a running job: expected it kept, got %v", err)
	}
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.ReadBlob(ctx, s.Blobs, in); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("input of a finished job: expected ENOTFOUND, got %v", err)
	}
}

// keepAnswer leaves what Put and KeepAnswer leave, and works
// again after Redis forgot its scripts (a restart).
func TestKeepAnswerKeepsTheBytesAndTheAnswer(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	for i, flush := range []bool{false, true} {
		id := newJob(t, s, "tenant", connector.StatusProcessing).ID
		rec, err := s.Jobs.beginCall(ctx, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if flush {
			if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		answer := &connector.KeptAnswer{Result: &connector.JobResult{CompressedSize: 4, UpstreamJobID: "up-1"}}
		if err := s.Jobs.keepAnswer(ctx, id, rec.Calls, answer, bytes.NewReader([]byte("tiny")), time.Hour); err != nil {
			t.Fatalf("run %d: keepAnswer: %v", i, err)
		}
		got, err := s.Jobs.callRecord(ctx, id)
		if err != nil || got.Kept == nil || got.Kept.Result.UpstreamJobID != "up-1" || got.Answered != 1 {
			t.Fatalf("run %d: call record: expected the kept answer, 1 answered, got %+v, %v", i, got, err)
		}
		out, err := connector.ReadBlob(ctx, s.Blobs, connector.OutputBlobKey(id))
		if err != nil || string(out) != "tiny" {
			t.Fatalf("run %d: output blob: expected %q, got %q, %v", i, "tiny", out, err)
		}
	}
}

// CreateWithInput makes what Admit, Put and Create make, and
// a refused job leaves nothing: no record, no input, no listing entry.
func TestCreateJobWithInputAdmitsStoresAndLists(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	mk := func() *connector.Job {
		return &connector.Job{ID: newJob(t, s, "other", connector.StatusQueued).ID + "0", Status: connector.StatusQueued, Owner: "tenant",
			Input: connector.JobInput{Kind: connector.InputBase64}}
	}
	a := mk()
	if err := s.Jobs.CreateWithInput(ctx, a, bytes.NewReader([]byte("png-a")), time.Hour, 1); err != nil {
		t.Fatalf("first job: %v", err)
	}
	if got, err := s.Jobs.Get(ctx, a.ID); err != nil || got.Owner != "tenant" {
		t.Fatalf("record: expected the job, got %+v, %v", got, err)
	}
	if in, err := connector.ReadBlob(ctx, s.Blobs, connector.InputBlobKey(a.ID)); err != nil || string(in) != "png-a" {
		t.Fatalf("input: expected %q, got %q, %v", "png-a", in, err)
	}
	b := mk()
	wantCode(t, s.Jobs.CreateWithInput(ctx, b, bytes.NewReader([]byte("png-b")), time.Hour, 1), connector.ETOOMANY)
	if _, err := s.Jobs.Get(ctx, b.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("refused job's record: expected ENOTFOUND, got %v", err)
	}
	if _, err := connector.ReadBlob(ctx, s.Blobs, connector.InputBlobKey(b.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("refused job's input: expected ENOTFOUND, got %v", err)
	}
	c := mk()
	if err := s.Jobs.CreateWithInput(ctx, c, nil, time.Hour, 0); err != nil {
		t.Fatalf("uncapped job without input: %v", err)
	}
	page, err := s.Jobs.List(ctx, "tenant", connector.JobFilter{Limit: 10})
	if err != nil || len(page.Jobs) != 2 || page.Jobs[0].ID != c.ID || page.Jobs[1].ID != a.ID {
		t.Fatalf("listing: expected %s then %s, got %+v, %v", c.ID, a.ID, page, err)
	}
}

// finishJob tells, from its finishing write, whether the owner has hooks.
func TestFinishJobTellsWhetherTheOwnerHasHooks(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	finish := func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }
	run := func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }

	_, hint, err := s.Jobs.finishJob(ctx, newJob(t, s, "tenant", connector.StatusQueued).ID, finish)
	if err != nil || hint != connector.HooksNone {
		t.Fatalf("owner without hooks: expected HooksNone, got %v, %v", hint, err)
	}
	if err := s.Hooks.Create(ctx, &connector.Hook{ID: "h1", TargetURL: "https://hooks.example/x", Event: "job.finished", Owner: "tenant"}); err != nil {
		t.Fatal(err)
	}
	_, hint, err = s.Jobs.finishJob(ctx, newJob(t, s, "tenant", connector.StatusQueued).ID, finish)
	if err != nil || hint != connector.HooksSome {
		t.Fatalf("owner with a hook: expected HooksSome, got %v, %v", hint, err)
	}
	_, hint, err = s.Jobs.finishJob(ctx, newJob(t, s, "tenant", connector.StatusQueued).ID, run)
	if err != nil || hint != connector.HooksUnknown {
		t.Fatalf("a write that does not finish the job: expected HooksUnknown, got %v, %v", hint, err)
	}
}

// getJobWithInput reads the job and opens its input together; a job
// without an input blob (a URL job) comes without one.
func TestGetJobWithInputOpensTheInputBeside(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	got, in, err := s.Jobs.getJobWithInput(ctx, job.ID)
	if err != nil || got.ID != job.ID || in != nil {
		t.Fatalf("job without input: expected it and no blob, got %+v, %v, %v", got, in, err)
	}
	if err := s.Blobs.Put(ctx, connector.InputBlobKey(job.ID), bytes.NewReader([]byte("png-bytes")), 9, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, in, err = s.Jobs.getJobWithInput(ctx, job.ID)
	if err != nil || got.ID != job.ID || in == nil || in.Size != 9 {
		t.Fatalf("job with input: expected it and a 9-byte blob, got %+v, %+v, %v", got, in, err)
	}
	defer in.Close()
	data := make([]byte, 9)
	if _, err := io.ReadFull(in, data); err != nil || string(data) != "png-bytes" {
		t.Fatalf("input: expected %q, got %q, %v", "png-bytes", data, err)
	}
	if _, _, err := s.Jobs.getJobWithInput(ctx, "nope"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("unknown job: expected ENOTFOUND, got %v", err)
	}
}

// startJob begins the call only when its write lands: a start refused by
// fn (the job finished meanwhile) counts no call.
func TestStartJobBeginsTheCallWithTheStart(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "tenant", connector.StatusQueued)
	start := func(j *connector.Job) error {
		if j.Status.Finished() {
			return connector.Errorf(connector.ECONFLICT, "finished")
		}
		j.Status = connector.StatusProcessing
		j.Runs++
		return nil
	}
	got, rec, err := s.Jobs.startJob(ctx, job.ID, start)
	if err != nil || got.Status != connector.StatusProcessing || rec.Calls != 1 || rec.Answered != 0 {
		t.Fatalf("start: expected processing and 1 call begun, got %+v, %+v, %v", got, rec, err)
	}
	if stored, err := s.Jobs.callRecord(ctx, job.ID); err != nil || stored.Calls != 1 {
		t.Fatalf("call record: expected 1 call, got %+v, %v", stored, err)
	}
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusFailed; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Jobs.startJob(ctx, job.ID, start); connector.ErrorCodeOf(err) != connector.ECONFLICT {
		t.Fatalf("start of a finished job: expected fn's error, got %v", err)
	}
	if stored, _ := s.Jobs.callRecord(ctx, job.ID); stored.Calls != 1 {
		t.Fatalf("call record after a refused start: expected still 1 call, got %d", stored.Calls)
	}
}

package redisstore

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// Undo takes back a job no run started (record, input, listing entry,
// in-flight place) and leaves one that a run started.
func TestUndoJobRemovesOnlyAJobNoRunStarted(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	newJob := func() *connector.Job {
		job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: "o1",
			Input: connector.JobInput{Kind: connector.InputBase64}}
		if err := s.Jobs.CreateWithInput(ctx, job, bytes.NewReader([]byte("image bytes")), time.Hour, 10); err != nil {
			t.Fatal(err)
		}
		return job
	}
	queued, started := newJob(), newJob()
	if _, err := s.Jobs.Update(ctx, started.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Jobs.Undo(ctx, "o1", queued.ID); err != nil || !removed {
		t.Fatalf("undo of a queued job: %v %v, want removed", removed, err)
	}
	if _, err := s.Jobs.Get(ctx, queued.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("record after undo: %v", err)
	}
	if _, err := s.Blobs.Open(ctx, connector.InputBlobKey(queued.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("input after undo: %v", err)
	}
	if removed, err := s.Jobs.Undo(ctx, "o1", started.ID); err != nil || removed {
		t.Fatalf("undo of a started job: %v %v, want kept", removed, err)
	}
	if _, err := s.Jobs.Get(ctx, started.ID); err != nil {
		t.Errorf("a started job was taken back: %v", err)
	}
	page, err := s.Jobs.List(ctx, "o1", connector.JobFilter{})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != started.ID {
		t.Errorf("listing after undo: %+v %v, want the started job only", page, err)
	}
	if err := s.Jobs.Admit(ctx, "o1", "x", 2); err != nil {
		t.Errorf("the undone job still holds its place: %v", err)
	}
}

// Staged jobs are seen nowhere until committed; committing twice is a
// no-op; the batch's admission takes a place per item while the key is
// under its cap, and none when it is not.
func TestStagedJobsAreHiddenUntilCommitted(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	ids := []string{uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()}
	if err := s.Jobs.AdmitAll(ctx, "o1", ids, 2); err != nil {
		t.Fatalf("a key under its cap: %v", err)
	}
	if err := s.Jobs.AdmitAll(ctx, "o1", []string{"more"}, 2); connector.ErrorCodeOf(err) != connector.ETOOMANY {
		t.Errorf("a key over its cap: %v, want too many jobs", err)
	}
	for _, id := range ids {
		if err := s.Jobs.Stage(ctx, &connector.Job{ID: id, Status: connector.StatusQueued, Owner: "o1"}, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Jobs.Get(ctx, id); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Fatalf("a staged job is read: %v", err)
		}
	}
	for range 2 {
		if err := s.Jobs.CommitStaged(ctx, "o1", ids); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.Jobs.List(ctx, "o1", connector.JobFilter{})
	if err != nil || len(page.Jobs) != 3 {
		t.Fatalf("listing after commit: %d jobs %v, want 3", len(page.Jobs), err)
	}
	if err := s.Jobs.CommitStaged(ctx, "o1", []string{"never-staged"}); err == nil {
		t.Error("committing a job staged nowhere succeeded")
	}
}

// Making a job whose id is taken (two requests with one planned id) is
// ErrJobExists, refused or not, and leaves the job that exists whole: its
// record and input are not the failed call's to delete.
func TestCreateJobWithInputOfATakenIDLeavesTheJobThatExists(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	mk := func(id string) *connector.Job {
		return &connector.Job{ID: id, Status: connector.StatusQueued, Owner: "o1", Input: connector.JobInput{Kind: connector.InputBase64}}
	}
	taken := uuid.Must(uuid.NewV7()).String()
	if err := s.Jobs.CreateWithInput(ctx, mk(taken), bytes.NewReader([]byte("first")), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	intact := func(when string) {
		t.Helper()
		if got, err := s.Jobs.Get(ctx, taken); err != nil || got.ID != taken {
			t.Fatalf("%s: the existing job = %+v, %v; want it kept", when, got, err)
		}
		if in, err := connector.ReadBlob(ctx, s.Blobs, connector.InputBlobKey(taken)); err != nil || len(in) == 0 {
			t.Fatalf("%s: the existing job's input = %q, %v; want it kept", when, in, err)
		}
	}
	err := s.Jobs.CreateWithInput(ctx, mk(taken), bytes.NewReader([]byte("first")), time.Hour, 10)
	if !errors.Is(err, connector.ErrJobExists) {
		t.Fatalf("second making of the id = %v, want ErrJobExists", err)
	}
	intact("after an admitted second making")
	// The owner's one place is another job's (the failed making took none
	// for the taken id): the second making is refused as well, and must
	// not delete what it did not create.
	if err := s.Jobs.CreateWithInput(ctx, mk(uuid.Must(uuid.NewV7()).String()), nil, time.Hour, 1); err != nil {
		t.Fatalf("the owner's one place: %v", err)
	}
	err = s.Jobs.CreateWithInput(ctx, mk(taken), bytes.NewReader([]byte("first")), time.Hour, 1)
	if !errors.Is(err, connector.ErrJobExists) {
		t.Fatalf("refused second making of the id = %v, want ErrJobExists", err)
	}
	intact("after a refused second making")
}

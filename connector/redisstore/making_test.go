package redisstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// UndoJob takes back a job no run started (record, input, listing entry,
// in-flight place) and leaves one that a run started.
func TestUndoJobRemovesOnlyAJobNoRunStarted(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	newJob := func() *connector.Job {
		job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: "o1",
			Input: connector.JobInput{Kind: connector.InputBase64}}
		if err := s.Jobs.CreateJobWithInput(ctx, job, bytes.NewReader([]byte("image bytes")), time.Hour, 10); err != nil {
			t.Fatal(err)
		}
		return job
	}
	queued, started := newJob(), newJob()
	if _, err := s.Jobs.UpdateJob(ctx, started.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Jobs.UndoJob(ctx, "o1", queued.ID); err != nil || !removed {
		t.Fatalf("undo of a queued job: %v %v, want removed", removed, err)
	}
	if _, err := s.Jobs.GetJob(ctx, queued.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("record after undo: %v", err)
	}
	if _, err := s.Blobs.OpenBlob(ctx, connector.InputBlobKey(queued.ID)); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("input after undo: %v", err)
	}
	if removed, err := s.Jobs.UndoJob(ctx, "o1", started.ID); err != nil || removed {
		t.Fatalf("undo of a started job: %v %v, want kept", removed, err)
	}
	if _, err := s.Jobs.GetJob(ctx, started.ID); err != nil {
		t.Errorf("a started job was taken back: %v", err)
	}
	page, err := s.Jobs.ListJobs(ctx, "o1", connector.JobFilter{})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != started.ID {
		t.Errorf("listing after undo: %+v %v, want the started job only", page, err)
	}
	if err := s.Jobs.AdmitJob(ctx, "o1", "x", 2); err != nil {
		t.Errorf("the undone job still holds its place: %v", err)
	}
}

// A batch's decision is taken once: the first of made and removed wins,
// and a later call is told it.
func TestDecideBatchDecidesOnce(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a", "b"}}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingMade); err != nil || st != "" {
		t.Fatalf("decision of a batch never begun: %q %v, want none", st, err)
	}
	if err := s.Batches.BeginBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.BeginBatch(ctx, b); err == nil {
		t.Error("a batch begun twice")
	}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingRemoved); err != nil || st != connector.MakingRemoved {
		t.Fatalf("first decision: %q %v", st, err)
	}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingMade); err != nil || st != connector.MakingRemoved {
		t.Fatalf("a later decision: %q %v, want the first (removed)", st, err)
	}
	got, st, err := s.Batches.MakingBatch(ctx, b.ID)
	if err != nil || st != connector.MakingRemoved || len(got.JobIDs) != 2 {
		t.Fatalf("making batch: %+v %q %v", got, st, err)
	}
}

// Staged jobs are seen nowhere until committed; committing twice is a
// no-op; the batch's admission takes a place per item while the key is
// under its cap, and none when it is not.
func TestStagedJobsAreHiddenUntilCommitted(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	ids := []string{uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()}
	if err := s.Jobs.AdmitJobs(ctx, "o1", ids, 2); err != nil {
		t.Fatalf("a key under its cap: %v", err)
	}
	if err := s.Jobs.AdmitJobs(ctx, "o1", []string{"more"}, 2); connector.ErrorCodeOf(err) != connector.ETOOMANY {
		t.Errorf("a key over its cap: %v, want too many jobs", err)
	}
	for _, id := range ids {
		if err := s.Jobs.StageJob(ctx, &connector.Job{ID: id, Status: connector.StatusQueued, Owner: "o1"}, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Jobs.GetJob(ctx, id); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Fatalf("a staged job is read: %v", err)
		}
	}
	for range 2 {
		if err := s.Jobs.CommitStagedJobs(ctx, "o1", ids); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.Jobs.ListJobs(ctx, "o1", connector.JobFilter{})
	if err != nil || len(page.Jobs) != 3 {
		t.Fatalf("listing after commit: %d jobs %v, want 3", len(page.Jobs), err)
	}
	if err := s.Jobs.CommitStagedJobs(ctx, "o1", []string{"never-staged"}); err == nil {
		t.Error("committing a job staged nowhere succeeded")
	}
}

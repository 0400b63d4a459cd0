package redisstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// A run opened from a record read with its dispatch starts the job from
// it with no read of its own; a record changed since (canceled, its
// callback's state written) is read again by the start's compare-and-set,
// never written over with the old copy. RecordKeyAround names the key.
func TestARunOpenedFromItsDispatchedRecordStartsFromTheCurrentOne(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	job := makingJob("o1")
	if err := s.Jobs.CreateWithInput(ctx, job, bytes.NewReader([]byte("image bytes")), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	prefix, suffix, ok := s.Jobs.RecordKeyAround()
	if !ok || prefix+job.ID+suffix != s.Jobs.keys.job(job.ID) {
		t.Fatalf("RecordKeyAround = %q, %q, %v; want the record key %q around the id", prefix, suffix, ok, s.Jobs.keys.job(job.ID))
	}
	dispatched, err := r.Client.Get(ctx, prefix+job.ID+suffix).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// Changed after the dispatch read it.
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Metadata = []byte(`{"changed":true}`); return nil }); err != nil {
		t.Fatal(err)
	}
	runs := New(r.Client, Options{Prefix: r.Prefix}).Runs // a worker's store: nothing cached
	opened, err := runs.OpenRecord(job.ID, dispatched)
	if err != nil || opened.ID != job.ID || opened.Status != connector.StatusQueued {
		t.Fatalf("OpenRecord = %+v, %v", opened, err)
	}
	input, err := runs.OpenInput(ctx, job.ID)
	if err != nil || input == nil || input.Size != int64(len("image bytes")) {
		t.Fatalf("OpenInput = %+v, %v; want the input", input, err)
	}
	input.Close()
	started, _, err := runs.Start(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; j.Runs++; return nil }, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Jobs.Get(ctx, job.ID)
	if err != nil || got.Status != connector.StatusProcessing || got.Runs != 1 || string(got.Metadata) != `{"changed":true}` || string(started.Metadata) != `{"changed":true}` {
		t.Fatalf("after the start: %+v (started %+v), %v; want processing, run 1, the change made after the dispatch kept", got, started, err)
	}
	if in, err := runs.OpenInput(ctx, "no-such-job"); err != nil || in != nil {
		t.Errorf("OpenInput of a job without input = %v, %v; want nil, nil", in, err)
	}
}

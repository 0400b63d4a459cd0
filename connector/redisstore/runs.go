package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
)

var _ connector.JobRuns = (*Runs)(nil)

// Runs is the compress executor's store (connector.JobRuns) on this Redis:
// one method per step of a job's life, each fused with its neighbours'
// reads and writes where they share the job's hash slot, so a job costs as
// few round trips as it can (BENCHMARK.md). When blobs live in another
// store (S3), the blob halves of those steps are delegated to it and the
// rest stays one write.
type Runs struct {
	jobs *Jobs
	// blobs holds the jobs' blobs when they are not in this Redis; nil
	// when they are, and reads and writes of them join the job's.
	blobs connector.BlobStore
}

// WithBlobs is the executor's store with job blobs in blobs, when they are
// not in this Redis (IMGFLOW_BLOB_STORE=s3://...): Store.Runs keeps them
// here.
func (r *Runs) WithBlobs(blobs connector.BlobStore) *Runs { return &Runs{jobs: r.jobs, blobs: blobs} }

// OpenJob reads the job and, with blobs in this Redis, opens its input in
// the same round trip (nil when it has none); with blobs elsewhere the
// caller opens the input itself.
func (r *Runs) OpenJob(ctx context.Context, id string) (*connector.Job, *connector.Blob, error) {
	if r.blobs != nil {
		job, err := r.jobs.Get(ctx, id)
		return job, nil, err
	}
	return r.jobs.getJobWithInput(ctx, id)
}

var _ connector.RecordOpener = (*Runs)(nil)

// OpenRecord decodes a job's record as read with its dispatch
// (Jobs.RecordKeyAround), and keeps it as the record last seen: the
// start's compare-and-set is against it.
func (r *Runs) OpenRecord(id string, record []byte) (*connector.Job, error) {
	job, err := decodeJob(record)
	if err != nil {
		return nil, err
	}
	r.jobs.records.put(id, record, job.Status.Finished())
	return job, nil
}

// OpenInput opens the job's input as OpenJob does: nil when it has none,
// or when blobs live in another store (the caller opens it there).
func (r *Runs) OpenInput(ctx context.Context, id string) (*connector.Blob, error) {
	if r.blobs != nil {
		return nil, nil
	}
	return r.jobs.openInput(ctx, id)
}

// Calls returns the job's call record.
func (r *Runs) Calls(ctx context.Context, id string) (connector.CallRecord, error) {
	return r.jobs.callRecord(ctx, id)
}

// Start stores start's change of the job; with beginCall the same
// script begins a call.
func (r *Runs) Start(ctx context.Context, id string, start func(*connector.Job) error, beginCall bool) (*connector.Job, connector.CallRecord, error) {
	if beginCall {
		return r.jobs.startJob(ctx, id, start)
	}
	job, err := r.jobs.Update(ctx, id, start)
	return job, connector.CallRecord{}, err
}

// BeginCall counts a call about to begin in run number run, open until
// ctx's deadline.
func (r *Runs) BeginCall(ctx context.Context, id string, run int) (connector.CallRecord, error) {
	return r.jobs.beginCall(ctx, id, run)
}

// AnswerCall records call as answered without a charge.
func (r *Runs) AnswerCall(ctx context.Context, id string, call int) error {
	return r.jobs.answer(ctx, id, call, "")
}

// KeepAnswer stores the bytes and the answer: one round trip with blobs
// in this Redis, the bytes to the blob store first otherwise.
func (r *Runs) KeepAnswer(ctx context.Context, id string, call int, answer *connector.KeptAnswer, data connector.Bytes, ttl time.Duration) error {
	if r.blobs == nil {
		return r.jobs.keepAnswer(ctx, id, call, answer, data, ttl)
	}
	if err := r.blobs.Put(ctx, connector.OutputBlobKey(id), connector.BytesReader(data), data.Size(), ttl); err != nil {
		return err
	}
	return r.jobs.keepAnswerOnly(ctx, id, call, answer)
}

// Finish ends the job under the run guard: the job's record is
// compared and set as a whole (finishScript), so the guard below holds
// for the record the write replaces. The write deletes an input blob in
// this Redis; one in the blob store elsewhere is deleted after it.
func (r *Runs) Finish(ctx context.Context, id string, run int, end func(*connector.Job)) (*connector.Job, connector.HooksHint, error) {
	job, hooks, err := r.jobs.finishJob(ctx, id, runGuard(run, end))
	if err != nil || r.blobs == nil {
		return job, hooks, err
	}
	// A failure here does not undo the job's end: the input expires on its
	// own (and the S3 sweeper deletes it).
	_ = r.blobs.Delete(ctx, connector.InputBlobKey(id))
	return job, hooks, nil
}

// runGuard is Finish's change: end, only to an unfinished job still in
// run number run.
func runGuard(run int, end func(*connector.Job)) func(*connector.Job) error {
	return func(j *connector.Job) error {
		switch {
		case j.Status.Finished():
			return connector.ErrJobFinished
		case j.Runs != run:
			return connector.ErrStaleRun
		}
		end(j)
		return nil
	}
}

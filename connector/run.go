package connector

import (
	"context"
	"errors"
	"time"
)

// A job's run is one execution of its compress task by a worker. Runs may
// overlap (a handler outlives asynq's cancellation; a task whose lease
// lapsed is requeued while its first run still goes on), so each run is
// numbered when it starts (Job.Runs, the run count) and every end of
// the job is written under that number: a compare-and-set in the store,
// which a stale run loses (JobRuns.Finish).

// Errors of JobRuns.Finish: the write was refused, and why.
var (
	// ErrJobFinished: the job ended already; nothing was written.
	ErrJobFinished = errors.New("job already finished")
	// ErrStaleRun: a later run of the job started after this one; the
	// live run decides the job's end.
	ErrStaleRun = errors.New("a later run of the job started")
	// ErrAnswerKept: a failure refused because the job's call record keeps
	// a charged answer; the job completes with it instead.
	ErrAnswerKept = errors.New("a charged answer is kept for the job")
)

// CallRecord is a job's durable record of its calls of the compression
// API: written before each call and after each answer, so that a re-run of
// the job (a worker killed, a task retried) knows what earlier runs did.
type CallRecord struct {
	// Calls counts calls begun; Answered counts those whose answer was
	// recorded (any status, or a failure that sent nothing).
	Calls    int
	Answered int
	// Kept is the answer of a call that was charged (200), recorded before
	// the job's result; nil when no charged answer was kept.
	Kept *KeptAnswer
	// Open are the calls begun without a recorded answer yet, each with the
	// run that began it and until when it may still be answered.
	Open []OpenCall
}

// OpenCall is a call of the compression API that has no recorded answer:
// it may still be answered (and charged) until Until, its run's deadline;
// after that its run can keep nothing, or was killed.
type OpenCall struct {
	Call, Run int
	Until     time.Time
}

// OpenEarlier returns when the last call that an earlier run than run
// began stops being open, if one is open at now: run, about to fail the
// job, waits until then, since that call's charged answer would complete
// it. (A later run's calls are the live run's: it decides the end, and
// run's failure will be refused as stale.)
func (c CallRecord) OpenEarlier(run int, now time.Time) (until time.Time, open bool) {
	for _, o := range c.Open {
		if o.Run < run && o.Until.After(now) && o.Until.After(until) {
			until, open = o.Until, true
		}
	}
	return until, open
}

// Unanswered is how many calls began and never had an answer recorded: a
// worker died mid-call, or the call timed out. Each may have been charged.
func (c CallRecord) Unanswered() int { return c.Calls - c.Answered }

// KeptAnswer is what a charged call produced, kept so that no later run has
// to call the compression API again: the input as the bytes described it
// and the result. The compressed bytes are in the BlobStore under
// OutputBlobKey.
type KeptAnswer struct {
	Input  JobInput   `json:"input"`
	Result *JobResult `json:"result"`
	// DeduplicatedFrom is the job whose result this is, when it came from
	// the dedupe index instead of a call (never kept in a call record).
	DeduplicatedFrom string `json:"-"`
}

// JobRuns is the compress executor's store, one method per step of a
// job's life in the order the worker takes them: open the job, start a
// run, begin a call, record its answer or keep the charged one, finish
// under the run guard. An implementation fuses steps into fewer round
// trips where it can (redisstore does, and delegates blobs to another
// BlobStore when they live elsewhere); callers never choose.
type JobRuns interface {
	// OpenJob reads the job and, when it can in the same read, opens its
	// input blob (nil otherwise: the caller opens it from the BlobStore).
	OpenJob(ctx context.Context, id string) (*Job, *Blob, error)
	// Calls returns the job's call record (zero when there is none).
	Calls(ctx context.Context, id string) (CallRecord, error)
	// Start applies start to the current record (it numbers the run:
	// Job.Runs) and stores it; with beginCall it also begins a call
	// (BeginCall, in the run start numbered) in the same write and returns
	// the record with it.
	Start(ctx context.Context, id string, start func(*Job) error, beginCall bool) (*Job, CallRecord, error)
	// BeginCall records, before it starts, that a call of the compression
	// API is about to be made by run number run, open (CallRecord.Open)
	// until ctx's deadline or its answer, and returns the record with it.
	BeginCall(ctx context.Context, id string, run int) (CallRecord, error)
	// AnswerCall records that call number call (as BeginCall counted it)
	// was answered without a charge: an error status, or a failure before
	// anything was sent. Recording the same call twice counts it once.
	AnswerCall(ctx context.Context, id string, call int) error
	// KeepAnswer stores the charged call's compressed bytes under
	// OutputBlobKey for ttl, then records call as answered 200 with its
	// answer, for any later run of the job.
	KeepAnswer(ctx context.Context, id string, call int, answer *KeptAnswer, data Bytes, ttl time.Duration) error
	// Finish ends the job with end, only if it is unfinished and still
	// in run number run (ErrJobFinished, ErrStaleRun otherwise); a failure
	// is refused with ErrAnswerKept while the call record keeps a charged
	// answer. The write marks the job's finish for waiters and drops its
	// input blob. hooks tells, when the store could see it in passing,
	// whether the owner has hook subscriptions.
	Finish(ctx context.Context, id string, run int, end func(*Job)) (job *Job, hooks HooksHint, err error)
}

// RecordOpener is a JobRuns that can open a job from its record as read
// elsewhere, in the same round trip as something else (fair dispatch reads
// it with the job's handing out), and open the job's input on its own: the
// run then starts the job without a read of it, its input opened beside
// the start.
type RecordOpener interface {
	// OpenRecord decodes job id's record, as it was when read; a start
	// from it that finds it changed since reads it again.
	OpenRecord(id string, record []byte) (*Job, error)
	// OpenInput opens the job's input blob as OpenJob does (nil when it
	// has none, or when the caller opens it from the BlobStore).
	OpenInput(ctx context.Context, id string) (*Blob, error)
}

// KeepFinisher is a JobRuns that keeps a charged answer and finishes the
// job with it as one step: KeepAnswer then Finish, the answer kept even
// when Finish is refused. A store that can fuse the two writes saves the
// job a round trip; the executor uses it when the two steps have nothing
// between them.
type KeepFinisher interface {
	FinishKept(ctx context.Context, id string, run, call int, answer *KeptAnswer, data Bytes, ttl time.Duration, end func(*Job)) (job *Job, hooks HooksHint, err error)
}

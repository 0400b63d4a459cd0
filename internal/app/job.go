package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Input is one image to compress and how: a job's, or a batch item's.
type Input struct {
	Kind     connector.InputKind
	URL      string
	Filename string
	Metadata json.RawMessage
	// Dedupe false compresses even an image its key compressed already;
	// nil or true lets the job reuse that result, uncharged.
	Dedupe *bool
	// Image is the bytes of a base64 or upload input (nil for a URL), and
	// SHA256 their hex digest: the dedupe index's key.
	Image  connector.Bytes
	SHA256 string
	// Transform is what the worker does to the image before its one call
	// (resize, convert, keep metadata); it is part of the dedupe key.
	Transform connector.Transform
	// Variant is the id of the variant a responsive set's item makes
	// (set.go); "" otherwise.
	Variant string
}

// JobRequest asks for one job.
type JobRequest struct {
	Owner string // the key's owner id (keyring.Owner)
	Key   string // the caller's API key, checked and sealed into the job
	// IdempotencyKey, when set, makes the request safe to repeat: the same
	// Fingerprint gets the job made the first time.
	IdempotencyKey string
	Fingerprint    string
	Input          Input
	CallbackURL    string
	// BeforeQueue, when set, is told the job's id before it is queued:
	// a request that waits for the job starts watching it there.
	BeforeQueue func(id string)
}

// CreateJob admits, makes and queues a job, or, for a repeated
// Idempotency-Key with the same request, returns the job made the first
// time (replay true). Errors are connector.Errors: refusals (invalid URL,
// key, balance, too many jobs, 409 in flight, 422 key reused) and
// EUNAVAILABLE when Redis or the queue is down (nothing was made then).
func (s *Maker) CreateJob(ctx context.Context, r *JobRequest) (job *connector.Job, replay bool, err error) {
	return makeOnce(ctx, s, r.Owner, r.IdempotencyKey, r.Fingerprint, making[*connector.Job]{
		what: "request",
		make: func(ctx context.Context, id string) (*connector.Job, leftBehind, error) {
			if err := s.admitJob(ctx, r); err != nil {
				return nil, nothingLeft, err
			}
			return s.makeJob(ctx, id, r)
		},
		find: s.cfg.Jobs.Get,
		settle: func(ctx context.Context, id string) (*connector.Job, bool, error) {
			job, err := s.adoptJob(ctx, id)
			return job, job != nil, err
		},
		lostKey: s.takeBackLost,
		id:      func(job *connector.Job) string { return job.ID },
	})
}

// takeBackLost takes back the job of a request whose key a retry took over
// while it stalled: the retry makes its own job, and this one would be a
// second for one key. Taken back (unless a run started it), the answer
// sends the client to the retry's.
func (s *Maker) takeBackLost(ctx context.Context, job *connector.Job) error {
	switch s.undo(ctx, job, false) {
	case undoRemoved:
		return &connector.Error{Code: connector.ECONFLICT, RetryAfter: time.Second,
			Message: "a retry with this Idempotency-Key took this request over; retry to get its job"}
	case undoKept:
		s.log.Warn("a request whose Idempotency-Key a retry took over made a job that started already; both run", "job_id", job.ID)
	}
	return nil
}

func (s *Maker) admitJob(ctx context.Context, r *JobRequest) error {
	return s.Admit(ctx, r.Key, FieldURL{"image_url", r.Input.URL}, FieldURL{"callback_url", r.CallbackURL})
}

// leftBehind is what a making left under its id: it decides whether the
// request's Idempotency-Key may go (making.go).
type leftBehind int

const (
	// nothingLeft: refused, or failed and taken back; a retry makes it.
	nothingLeft leftBehind = iota
	// made: this request's job, the answer.
	made
	// adopted: another request made a job with the id (the same planned
	// id of a key); it is the answer, a replay, never taken back here.
	adopted
	// mayBeLeft: failed, and whether the job is gone is unknown (its
	// taking back failed, or a run started it): the key is kept for a
	// retry to take over and adopt the job if it exists.
	mayBeLeft
)

// makeJob stores the job (its place under the key's cap, its input, its
// record: one round trip) and queues it, in that same round trip when the
// store queues at making (JobStore.QueuesAtMaking). A job whose making failed is
// taken back (JobStore.Undo) unless a run started it already, in which case it is
// made and is the answer; one that cannot be taken back now is left to the
// retry that takes its Idempotency-Key over (it adopts the job), or, without
// a key, tried again in the background; should it still have no task by
// the worker's sweep, the sweeper queues it (only a job's own request ever
// removes it). An id that is another request's job already is adopted.
func (s *Maker) makeJob(ctx context.Context, id string, r *JobRequest) (*connector.Job, leftBehind, error) {
	job := s.jobRecord(id, r.Owner, s.cfg.Keyring.Seal(r.Key), &r.Input, s.cfg.Now().UTC())
	job.CallbackURL = r.CallbackURL
	if r.CallbackURL != "" {
		job.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
	}
	input, err := s.putInput(ctx, job.ID, r.Input.Image)
	if err != nil {
		return nil, nothingLeft, err
	}
	// A job left under a key is the key's retry's to adopt: a background
	// undo could take it back after the retry answered it.
	undoLater := r.IdempotencyKey == "" || s.cfg.Idempotency == nil
	queued := s.cfg.Jobs.QueuesAtMaking()
	if queued && r.BeforeQueue != nil {
		r.BeforeQueue(job.ID)
	}
	if err := s.cfg.Jobs.CreateWithInput(ctx, job, input, s.cfg.InputTTL, s.cfg.MaxJobsPerKey); err != nil {
		switch {
		case errors.Is(err, connector.ErrJobExists):
			return s.adoptMade(ctx, id)
		case connector.ErrorCodeOf(err) == connector.ETOOMANY, connector.ErrorCodeOf(err) == connector.EFAILBUDGET:
			return nil, nothingLeft, err // a refusal left nothing
		}
		// A failed round trip may have written part of the job: it must
		// not run. Queued at its making, it may have started already: it
		// is made then, as when its enqueue below fails.
		switch s.undo(ctx, job, undoLater) {
		case undoRemoved:
			return nil, nothingLeft, err
		case undoKept:
			if queued {
				return job, made, nil
			}
		}
		return nil, mayBeLeft, err
	}
	if queued {
		return job, made, nil
	}
	if r.BeforeQueue != nil {
		r.BeforeQueue(job.ID)
	}
	if err := s.enqueue(ctx, job); err != nil {
		switch s.undo(ctx, job, undoLater) {
		case undoKept:
			return job, made, nil // its task was queued after all, and a run started it
		case undoUnknown:
			return nil, mayBeLeft, err
		}
		return nil, nothingLeft, err
	}
	return job, made, nil
}

// adoptMade answers a making whose id another request made meanwhile with
// that request's job.
func (s *Maker) adoptMade(ctx context.Context, id string) (*connector.Job, leftBehind, error) {
	job, err := s.adoptJob(ctx, id)
	switch {
	case err != nil:
		return nil, mayBeLeft, err
	case job == nil: // taken back by its own request since
		return nil, nothingLeft, &connector.Error{Code: connector.EUNAVAILABLE, RetryAfter: time.Second, Retryable: true,
			Message: "the job could not be made; retry shortly"}
	}
	return job, adopted, nil
}

// putInput stores an input in Inputs when they live apart from the store
// (S3) and returns what the store's own round trip is to keep (nil then).
func (s *Maker) putInput(ctx context.Context, id string, image connector.Bytes) (connector.Bytes, error) {
	if image == nil || s.cfg.Inputs == nil {
		return image, nil
	}
	err := s.cfg.Inputs.Put(ctx, connector.InputBlobKey(id), connector.BytesReader(image), image.Size(), s.cfg.InputTTL)
	return nil, err
}

// undone is what undo knows of a job it took back.
type undone int

const (
	undoRemoved undone = iota // gone, with its input
	undoKept                  // a run started it: it stays, made
	undoUnknown               // the store could not be reached
)

// undo takes back a job whose request is answered with an error. When the
// store cannot be reached its outcome is unknown, and it is tried again in
// the background when later is set.
func (s *Maker) undo(ctx context.Context, job *connector.Job, later bool) undone {
	do := func(ctx context.Context) error {
		removed, err := s.cfg.Jobs.Undo(ctx, job.Owner, job.ID)
		if err == nil && removed && s.cfg.Inputs != nil && job.Input.Size > 0 {
			s.cfg.Inputs.Delete(ctx, connector.InputBlobKey(job.ID))
		}
		if err == nil && !removed {
			s.log.Warn("a job whose request failed had started already; it runs", "job_id", job.ID)
		}
		return err
	}
	removed, err := s.cfg.Jobs.Undo(context.WithoutCancel(ctx), job.Owner, job.ID)
	if err != nil {
		if later {
			s.retryLater(time.Minute, "job of a failed request not taken back yet; trying again (the sweeper queues it if it has no task by then)", do, "job_id", job.ID)
		} else {
			s.log.Warn("job of a failed request not taken back; a retry with its Idempotency-Key adopts it, else the sweeper queues it", "job_id", job.ID)
		}
		return undoUnknown
	}
	if !removed {
		return undoKept
	}
	if s.cfg.Inputs != nil && job.Input.Size > 0 {
		s.cfg.Inputs.Delete(context.WithoutCancel(ctx), connector.InputBlobKey(job.ID))
	}
	return undoRemoved
}

// adoptJob returns the job a dead request made under an Idempotency-Key,
// listed and queued (both no-ops when done before: the task id is the job
// id); nil when it never made it.
func (s *Maker) adoptJob(ctx context.Context, id string) (*connector.Job, error) {
	job, err := s.cfg.Jobs.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Jobs.EnsureListed(ctx, job.Owner, job.ID); err != nil {
		return nil, err
	}
	if !job.Status.Finished() {
		if err := s.enqueue(ctx, job); err != nil {
			return nil, err
		}
	}
	return job, nil
}

// jobRecord is a new job's record, queued: a single job's, or (with
// BatchID and BatchIndex set by the caller) a batch item's.
func (s *Maker) jobRecord(id, owner string, sealed []byte, in *Input, now time.Time) *connector.Job {
	job := &connector.Job{
		ID:        id,
		Status:    connector.StatusQueued,
		CreatedAt: now,
		UpdatedAt: now,
		Input:     connector.JobInput{Kind: in.Kind, URL: in.URL, Filename: in.Filename},
		Metadata:  in.Metadata,
		Owner:     owner,
		SealedKey: sealed,
		Dedupe:    in.Dedupe,
		Transform: in.Transform,
		Variant:   in.Variant,
	}
	if in.Image != nil {
		job.Input.Size = in.Image.Size()
		job.Input.MIMEType = connector.SniffBytes(in.Image)
		job.Input.SHA256 = in.SHA256
	}
	return job
}

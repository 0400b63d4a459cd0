package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	// Decodes a job record 4x as fast as encoding/json (read four or five
	// times in a job's life; BenchmarkJobRecordCodec). Records are encoded
	// with encoding/json (the same bytes): goccy's encoder has a 3 KiB
	// frame, which in a job's goroutines (asynq's, net/http's, with small
	// stacks) grew and copied the stack on most calls, costing more than
	// it saved (BENCHMARK.md, fourth round).
	goccy "github.com/goccy/go-json"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Jobs keeps job records (connector.JobStore): each job's record, its
// owner's listing, its finish published to waiters (jobwait.go), the
// owner's cap of unfinished jobs (inflight.go, admitted in the round trip
// that makes a job: createjob.go), batch items stored hidden until their
// batch is made (jobmaking.go), and the notes of jobs whose task may not be
// queued (unqueued.go).
type Jobs struct {
	*conn
	// blobs writes and opens a job's input in the round trip of its record.
	blobs *Blobs
	// hub is the one subscription every Jobs.Wait, Jobs.Watch and Batches.Wait
	// shares (waithub.go).
	hub *waitHub
	// records are unfinished job records last seen, for Update.
	records *jobCache
	// listings remembers when this process last set each listing's expiry
	// (listingexpiry.go).
	listings *listingMemo
	// inflightTTL is Options.InflightTTL.
	inflightTTL time.Duration
	// freeFailuresPerHour is Options.FreeFailuresPerHour (failbudget.go).
	freeFailuresPerHour int
	// making, when set, queues each job CreateWithInput makes, in its
	// script (makequeued.go).
	making *makingQueue
}

var _ connector.JobStore = (*Jobs)(nil)

// storedJob is a job as kept in Redis: the public record plus the fields
// connector.Job hides from JSON (json:"-"), which the store must keep. The job
// is nested rather than embedded so that a field added to connector.Job can
// never collide with these.
type storedJob struct {
	Job         *connector.Job `json:"job"`
	Owner       string         `json:"owner"`
	SealedKey   []byte         `json:"sealed_key,omitempty"`
	CallbackURL string         `json:"callback_url,omitempty"`
	Unplaced    bool           `json:"unplaced,omitempty"`
}

func encodeJob(j *connector.Job) ([]byte, error) {
	return json.Marshal(storedJob{Job: j, Owner: j.Owner, SealedKey: j.SealedKey, CallbackURL: j.CallbackURL, Unplaced: j.Unplaced})
}

func decodeJob(data []byte) (*connector.Job, error) {
	var sj storedJob
	if err := goccy.Unmarshal(data, &sj); err != nil {
		return nil, internalErr(fmt.Errorf("decode job: %w", err))
	}
	if sj.Job == nil {
		return nil, internalErr(errors.New("decode job: no job in record"))
	}
	sj.Job.Owner, sj.Job.SealedKey, sj.Job.CallbackURL, sj.Job.Unplaced = sj.Owner, sj.SealedKey, sj.CallbackURL, sj.Unplaced
	return sj.Job, nil
}

// Create stores a new job for JobTTL and adds it to its owner's listing.
// A zero CreatedAt or UpdatedAt is set to now (on job itself). An id that
// already exists is an internal error: ids are fresh UUIDv7s.
//
// The record and the index entry go in one pipeline (one round trip), not
// one MULTI: they may live in different cluster slots. Should the index
// writes fail, the job is still readable by id and expires unlisted.
func (s *Jobs) Create(ctx context.Context, job *connector.Job) error {
	now := s.now()
	data, err := newJobRecord(job, now)
	if err != nil {
		return err
	}
	// The record (slot of {id}) and the index (slot of {owner}) live in
	// different cluster slots, so they go in one pipeline (one round trip),
	// not one MULTI. A job whose index writes failed is still readable by
	// id; it expires unlisted.
	idx := s.keys.jobIndex(job.Owner)
	var created *redis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		created = p.SetNX(ctx, s.keys.job(job.ID), data, s.jobTTL)
		s.noteUnqueued(ctx, p, job.ID, now)
		p.ZAdd(ctx, idx, redis.Z{Member: job.ID})
		p.ZRemRangeByLex(ctx, idx, "-", "("+idFloor(now.Add(-s.jobTTL)))
		p.PExpire(ctx, idx, s.listingTTL())
		return nil
	})
	if err != nil {
		return storageErr(err)
	}
	if !created.Val() {
		return internalErr(fmt.Errorf("create job: id %s already exists", job.ID))
	}
	return nil
}

// newJobRecord stamps a new job's times (when unset) and encodes it.
func newJobRecord(job *connector.Job, now time.Time) ([]byte, error) {
	if job.ID == "" {
		return nil, internalErr(errors.New("create job: empty id"))
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt = now
	}
	if job.UpdatedAt.IsZero() {
		job.UpdatedAt = job.CreatedAt
	}
	data, err := encodeJob(job)
	if err != nil {
		return nil, internalErr(err)
	}
	return data, nil
}

// Get returns the job, or ENOTFOUND when it is unknown or expired.
func (s *Jobs) Get(ctx context.Context, id string) (*connector.Job, error) {
	return s.getJob(ctx, id)
}

func (s *Jobs) getJob(ctx context.Context, id string) (*connector.Job, error) {
	data, err := s.rdb.Get(ctx, s.keys.job(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		s.records.forget(id)
		return nil, notFound("job", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	job, err := decodeJob(data)
	if err == nil {
		s.records.put(id, data, job.Status.Finished())
	}
	return job, err
}

// Update applies fn to the current record and stores the result only if
// the record did not change meanwhile (casScript), retrying otherwise, so fn
// may run more than once and must only change the job it is given. An error
// from fn aborts the update and comes back unchanged. UpdatedAt is set to
// now; the record keeps its expiry. When the job moves to a finished status,
// the new record is published on done:{id} by the same script, which wakes
// Wait without another read. The script touches job:{id} alone (PUBLISH
// names no key), so this works on a cluster.
//
// One round trip when this process read or wrote the unfinished record last
// (jobCache), two (GET, then the script) otherwise.
func (s *Jobs) Update(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, error) {
	return s.updateJob(ctx, id, fn, casExtras{})
}

// finishJob is Update for a run's write that ends the job (Runs.
// Finish), which also tells, from the same round trip, whether the
// job's owner has any hook subscription at that moment: HooksNone lets the
// worker skip listing them. HooksUnknown when it could not tell (the write
// did not finish the job). A failure is refused (connector.ErrAnswerKept) while the
// job's call record keeps a charged answer, in the same script.
func (s *Jobs) finishJob(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, connector.HooksHint, error) {
	hooks := connector.HooksUnknown
	job, err := s.updateJob(ctx, id, fn, casExtras{hooks: &hooks, runEnd: true})
	return job, hooks, err
}

// casExtras are what a caller of updateJob asks for beside the write.
type casExtras struct {
	hooks *connector.HooksHint  // finishJob: whether the owner has hooks
	begun *connector.CallRecord // startJob: begin a call in the same script
	// runEnd: a run ends the job (finishJob): a failure yields to a kept
	// charged answer.
	runEnd bool
	// keep: the charged answer to keep in the end's own script
	// (Runs.FinishKept); done once a script kept it.
	keep *keepWrite
}

func (s *Jobs) updateJob(ctx context.Context, id string, fn func(*connector.Job) error, extras casExtras) (*connector.Job, error) {
	key := s.keys.job(id)
	old := s.records.get(id)
	cached := old != nil
	for range maxTxAttempts {
		if old == nil {
			data, err := s.rdb.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				s.records.forget(id)
				return nil, notFound("job", id)
			}
			if err != nil {
				return nil, storageErr(err)
			}
			old, cached = data, false
		}
		job, err := decodeJob(old)
		if err != nil {
			return nil, err
		}
		wasFinished := job.Status.Finished()
		if err := fn(job); err != nil {
			if cached {
				// fn refused what may be an old copy: ask Redis.
				old = nil
				continue
			}
			return nil, err
		}
		job.ID = id
		job.UpdatedAt = s.now()
		data, err := encodeJob(job)
		if err != nil {
			return nil, internalErr(err)
		}
		finishing := !wasFinished && job.Status.Finished()
		sum := sha1.Sum(old)
		res, err := s.casJob(ctx, key, id, job, finishing, hex.EncodeToString(sum[:]), data, extras)
		if err != nil {
			s.records.forget(id)
			return nil, storageErr(err)
		}
		switch v := res.(type) {
		case int64:
			if v == -2 {
				// A run's failure refused: the call record keeps a charged answer.
				s.records.forget(id)
				return nil, connector.ErrAnswerKept
			}
			if v == -1 {
				// Expired meanwhile: it must not come back without a TTL.
				s.records.forget(id)
				return nil, notFound("job", id)
			}
			s.records.put(id, data, job.Status.Finished())
			if finishing && job.FreeFailure() {
				// Counted once, by the write that finished the job; a
				// lost count only leaves the key more room.
				if err := s.spendFailure(ctx, job.Owner); err != nil {
					slog.Warn("a free failure was not counted against its key's budget", "job_id", id, "err", err)
				}
			}
			return job, nil
		case string:
			old, cached = []byte(v), false // changed meanwhile: retry on the current record
		default:
			return nil, internalErr(fmt.Errorf("update job: unexpected script answer %T", res))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage busy", RetryAfter: time.Second, Retryable: true,
		Err: fmt.Errorf("redisstore: %s still contended after %d attempts", key, maxTxAttempts)}
}

// casJob runs casScript for Update. A write that finishes the job runs
// endJobScript instead, which also publishes it on done:{id}, deletes its
// input blob (the job's slot; inputs live until their job ends) and, for a
// run's failure, yields to a kept charged answer, and, in the same round
// trip, frees the key's in-flight place (a job made without a cap has none:
// Unplaced): another slot, so a ZREM beside the script, not in it. That ZREM
// runs even when the compare-and-set loses; then the retry finishes the job
// a moment later, and a lost ZREM is pruned at its deadline anyway. With a
// charged answer to keep (casExtras.keep), keepEndScript keeps it first.
//
// With hooks set it also asks, in that pipeline, whether the owner's hook
// index exists (EXISTS, the owner's slot) and says so in *hooks.
//
// This one round trip spans aggregates on purpose: the job's end and its
// key's place (Jobs), the call record's kept answer (Runs), the input blob
// (Blobs) and a peek at the owner's hooks (Hooks). It stays here, the step
// that ends a job (Runs.Finish), so that a job's end costs one trip
// (.ci/perf.sh counts them); the batch count and the fan-out are the
// worker's follow-ups after it.
func (s *Jobs) casJob(ctx context.Context, key, id string, job *connector.Job, finishing bool, seen string, data []byte, extras casExtras) (any, error) {
	hooks := extras.hooks
	if extras.begun != nil && !finishing {
		return s.casBeginCall(ctx, key, id, job.Runs, seen, data, extras.begun)
	}
	if !finishing {
		return casScript.Run(ctx, s.rdb, []string{key}, seen, data, "").Result()
	}
	keys := []string{key, s.keys.calls(id), s.keys.blob(connector.InputBlobKey(id))}
	keptWins := "0"
	if extras.runEnd && job.Status == connector.StatusFailed {
		keptWins = "1"
	}
	args := []any{seen, data, s.keys.done(id), keptWins}
	script := endJobScript
	if k := extras.keep; k != nil && !k.done && job.Status == connector.StatusCompleted {
		script = keepEndScript
		keys = append(keys, s.keys.blob(connector.OutputBlobKey(id)))
		args = []any{seen, data, s.keys.done(id), strconv.Itoa(k.call), k.kept, k.out, max(k.ttl, 0).Milliseconds()}
		// Whatever the script answers, it kept the answer: a retry on a
		// changed record only ends the job.
		defer func() { k.done = true }()
	}
	rdb := s.rdb
	if extras.keep != nil {
		rdb = s.clientFor(int64(len(extras.keep.out)))
	}
	if job.Owner == "" {
		return script.Run(ctx, rdb, keys, args...).Result()
	}
	var cas *redis.Cmd
	var hookIndex *redis.IntCmd
	askHooks := hooks != nil
	_, err := s.pipelinedScriptsOn(ctx, rdb, func(p redis.Pipeliner) {
		cas = script.EvalSha(ctx, p, keys, args...)
		if !job.Unplaced {
			p.ZRem(ctx, s.keys.inflight(job.Owner), id)
		}
		if job.Paid() {
			s.earnFailure(ctx, p, job.Owner)
		}
		if askHooks {
			hookIndex = p.Exists(ctx, s.keys.hookIndex(job.Owner))
		}
	})
	if askHooks && hookIndex.Err() == nil {
		*hooks = connector.HooksNone
		if hookIndex.Val() > 0 {
			*hooks = connector.HooksSome
		}
	}
	if err != nil && cas.Err() == nil {
		return cas.Val(), nil // only the ZREM or EXISTS failed: pruned at its deadline / unknown
	}
	return cas.Result()
}

// Delete forgets a job that never ran (its enqueue failed): the record
// and its listing entry, so no polling trigger sees a job its caller was
// told does not exist. Unknown ids are not an error.
func (s *Jobs) Delete(ctx context.Context, id string) error {
	job, err := s.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	// Two slots, so a pipeline, not a MULTI; on a cluster its halves run on
	// different nodes in no set order. Either half alone is safe: a listing
	// entry without its record is dropped by List, a record without its
	// entry expires unlisted.
	s.records.forget(id)
	s.listings.unlisted(job.Owner, id)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.keys.jobIndex(job.Owner), id)
		p.ZRem(ctx, s.keys.inflight(job.Owner), id)
		p.Del(ctx, s.keys.job(id))
		return nil
	})
	return storageErr(err)
}

// casScript replaces a record only if it is still the one the caller saw
// (compared by SHA-1, so the old bytes need not travel), keeps its expiry,
// and publishes the new record when asked: one round trip where WATCH, GET
// and MULTI/SET/EXEC took three. When the record differs it answers with
// the current one, so the caller can retry without another read.
//
// KEYS[1] record, KEYS[2...] keys to delete once written (a finished
// job's input); ARGV[1] SHA-1 hex of the value seen; ARGV[2] new value;
// ARGV[3] channel to publish the new value on, "" for none.
// Returns 1 when written, -1 when the record is gone, else the record.
var casScript = redis.NewScript(luaWriteRecord + luaRecordUnchanged + `
writeRecord(ARGV[2], ARGV[3], 2, #KEYS)
return 1
`)

// endJobScript is casScript for a write that ends a job: it publishes the
// new record, deletes the job's input, and, asked to, refuses a failure
// while the job's call record keeps a charged answer (a stale run kept it
// after this run began), so that the answer is never dropped.
//
// KEYS[1] record, KEYS[2] call record, KEYS[3...] keys to delete once
// written; ARGV[1] SHA-1 hex of the value seen; ARGV[2] new value; ARGV[3]
// channel to publish on; ARGV[4] "1" to refuse when an answer is kept.
// Returns 1 when written, -1 when the record is gone, -2 when refused for
// the kept answer, else the current record.
var endJobScript = redis.NewScript(luaWriteRecord + luaRecordUnchanged + `
if ARGV[4] == '1' and redis.call('HEXISTS', KEYS[2], 'kept') == 1 then return -2 end
writeRecord(ARGV[2], ARGV[3], 3, #KEYS)
return 1
`)

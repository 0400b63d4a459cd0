package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// storedJob is a job as kept in Redis: the public record plus the fields
// connector.Job hides from JSON (json:"-"), which the store must keep. The job
// is nested rather than embedded so that a field added to connector.Job can
// never collide with these.
type storedJob struct {
	Job         *connector.Job `json:"job"`
	Owner       string         `json:"owner"`
	SealedKey   []byte         `json:"sealed_key,omitempty"`
	CallbackURL string         `json:"callback_url,omitempty"`
}

func encodeJob(j *connector.Job) ([]byte, error) {
	return json.Marshal(storedJob{Job: j, Owner: j.Owner, SealedKey: j.SealedKey, CallbackURL: j.CallbackURL})
}

func decodeJob(data []byte) (*connector.Job, error) {
	var sj storedJob
	if err := json.Unmarshal(data, &sj); err != nil {
		return nil, internalErr(fmt.Errorf("decode job: %w", err))
	}
	if sj.Job == nil {
		return nil, internalErr(errors.New("decode job: no job in record"))
	}
	sj.Job.Owner, sj.Job.SealedKey, sj.Job.CallbackURL = sj.Owner, sj.SealedKey, sj.CallbackURL
	return sj.Job, nil
}

// CreateJob stores a new job for JobTTL and adds it to its owner's listing.
// A zero CreatedAt or UpdatedAt is set to now (on job itself). An id that
// already exists is an internal error: ids are fresh UUIDv7s.
func (s *Store) CreateJob(ctx context.Context, job *connector.Job) error {
	if job.ID == "" {
		return internalErr(errors.New("create job: empty id"))
	}
	now := s.now()
	if job.CreatedAt.IsZero() {
		job.CreatedAt = now
	}
	if job.UpdatedAt.IsZero() {
		job.UpdatedAt = job.CreatedAt
	}
	data, err := encodeJob(job)
	if err != nil {
		return internalErr(err)
	}
	ok, err := s.rdb.SetNX(ctx, s.jobKey(job.ID), data, s.jobTTL).Result()
	if err != nil {
		return storageErr(err)
	}
	if !ok {
		return internalErr(fmt.Errorf("create job: id %s already exists", job.ID))
	}
	// The record and the index may live in different cluster slots, so they
	// are written one after the other rather than in one MULTI. A job whose
	// index entry failed is still readable by id; it expires unlisted.
	idx := s.jobIndexKey(job.Owner)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, idx, redis.Z{Member: job.ID})
		p.ZRemRangeByLex(ctx, idx, "-", "("+idFloor(now.Add(-s.jobTTL)))
		p.Expire(ctx, idx, s.jobTTL)
		return nil
	})
	return storageErr(err)
}

// GetJob returns the job, or ENOTFOUND when it is unknown or expired.
func (s *Store) GetJob(ctx context.Context, id string) (*connector.Job, error) {
	data, err := s.rdb.Get(ctx, s.jobKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notFound("job", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	return decodeJob(data)
}

// UpdateJob applies fn to the current record under WATCH and stores the
// result with MULTI/EXEC, retrying when another writer got in first, so fn
// may run more than once and must only change the job it is given. An error
// from fn aborts the update and comes back unchanged. UpdatedAt is set to now;
// the record keeps its expiry. When the job moves to a finished status, a
// message on done:{id} in the same transaction wakes WaitJob.
func (s *Store) UpdateJob(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, error) {
	key := s.jobKey(id)
	var updated *connector.Job
	err := s.watch(ctx, key, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return notFound("job", id)
		}
		if err != nil {
			return err
		}
		job, err := decodeJob(data)
		if err != nil {
			return err
		}
		wasFinished := job.Status.Finished()
		if err := fn(job); err != nil {
			return callerErr{err}
		}
		job.ID = id
		job.UpdatedAt = s.now()
		if data, err = encodeJob(job); err != nil {
			return internalErr(err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			// XX: a record that expired meanwhile must not come back without a TTL.
			p.SetArgs(ctx, key, data, redis.SetArgs{Mode: "XX", KeepTTL: true})
			if !wasFinished && job.Status.Finished() {
				p.Publish(ctx, s.doneChannel(id), string(job.Status))
			}
			return nil
		})
		if errors.Is(err, redis.Nil) {
			return notFound("job", id)
		}
		if err != nil {
			return err
		}
		updated = job
		return nil
	})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// DeleteJob forgets a job that never ran (its enqueue failed): the record
// and its listing entry, so no polling trigger sees a job its caller was
// told does not exist. Unknown ids are not an error.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	job, err := s.GetJob(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.jobIndexKey(job.Owner), id)
		p.Del(ctx, s.jobKey(id))
		return nil
	})
	return storageErr(err)
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Listing limits.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// List returns owner's jobs newest first.
//
// The index jobs:{owner} is a sorted set whose members all have score 0, so
// Redis orders them by id; ids are lowercase UUIDv7 strings, whose order is
// their creation order. A page is read with ZREVRANGEBYLEX from just below the
// cursor (exclusive), so jobs created while a caller pages through land above
// the cursor and are neither skipped nor repeated.
//
// With a status filter the index is scanned in batches until Limit jobs match
// or it runs out. Entries whose record has expired are skipped and removed.
// Limit <= 0 means DefaultListLimit; above MaxListLimit it is capped.
// NextCursor is the id of the last job returned when older entries remain,
// "" otherwise.
func (s *Jobs) List(ctx context.Context, owner string, f connector.JobFilter) (*connector.JobPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	batch := int64(limit + 1) // one more tells whether another page exists
	if f.Status != "" {
		batch = int64(max(2*limit, 50))
	}

	idx := s.keys.jobIndex(owner)
	upper := "+"
	if f.Cursor != "" {
		upper = "(" + f.Cursor
	}
	page := &connector.JobPage{Jobs: make([]*connector.Job, 0, limit)}
	var dead []any
	more := false
scan:
	for {
		ids, err := s.rdb.ZRevRangeByLex(ctx, idx, &redis.ZRangeBy{Max: upper, Min: "-", Count: batch}).Result()
		if err != nil {
			return nil, storageErr(err)
		}
		jobs, err := s.getJobs(ctx, ids)
		if err != nil {
			return nil, err
		}
		for i, job := range jobs {
			if len(page.Jobs) == limit {
				more = true // ids[i] and maybe others remain
				break scan
			}
			if job == nil {
				dead = append(dead, ids[i])
				continue
			}
			if job.Owner != owner || (f.Status != "" && job.Status != f.Status) {
				continue // the owner check is defence in depth: ids are unique
			}
			page.Jobs = append(page.Jobs, job)
		}
		if int64(len(ids)) < batch {
			break // the index is exhausted
		}
		upper = "(" + ids[len(ids)-1]
		if len(page.Jobs) == limit {
			// The batch ended exactly on the last job wanted: ask whether any
			// entry is left below it.
			n, err := s.rdb.ZLexCount(ctx, idx, "-", upper).Result()
			if err != nil {
				return nil, storageErr(err)
			}
			more = n > 0
			break
		}
	}
	if more {
		page.NextCursor = page.Jobs[len(page.Jobs)-1].ID
	}
	if len(dead) > 0 {
		if err := s.rdb.ZRem(ctx, idx, dead...).Err(); err != nil {
			return nil, storageErr(err)
		}
	}
	return page, nil
}

// getJobs reads the records of ids (a listing's page, a batch's items):
// nil where a record is gone, an error when one does not decode.
func (s *Jobs) getJobs(ctx context.Context, ids []string) ([]*connector.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	values, err := s.recordValues(ctx, ids)
	if err != nil {
		return nil, err
	}
	jobs := make([]*connector.Job, len(ids))
	for i, data := range values {
		if data == nil {
			continue
		}
		if jobs[i], err = decodeJob(data); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// recordValues is the record of each of ids, nil where there is none. On
// a single Redis it is one MGET; on a cluster each record is in its job's
// own slot, so it is a pipeline of GETs.
func (s *Jobs) recordValues(ctx context.Context, ids []string) ([][]byte, error) {
	values := make([][]byte, len(ids))
	if len(ids) == 0 {
		return values, nil
	}
	if s.onCluster() {
		cmds := make([]*redis.StringCmd, len(ids))
		s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.Get(ctx, s.keys.job(id))
			}
			return nil
		})
		for i, cmd := range cmds {
			data, err := cmd.Bytes()
			switch {
			case err == nil:
				values[i] = data
			case !errors.Is(err, redis.Nil):
				return nil, storageErr(err) // a node that did not answer says nothing of its records
			}
		}
		return values, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.job(id)
	}
	got, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, storageErr(err)
	}
	for i, v := range got {
		if data, ok := v.(string); ok {
			values[i] = []byte(data)
		}
	}
	return values, nil
}

// idFloor is the smallest UUIDv7 string of time t: its first 12 hex digits
// are the Unix time in milliseconds. Every id created before t sorts below it,
// which lets Create drop listing entries older than JobTTL with one
// ZREMRANGEBYLEX.
func idFloor(t time.Time) string {
	ms := uint64(max(t.UnixMilli(), 0))
	return fmt.Sprintf("%08x-%04x", ms>>16&0xffffffff, ms&0xffff)
}

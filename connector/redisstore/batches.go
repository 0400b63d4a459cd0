package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Batches keeps batches, counts their items as they start and end, and
// holds the one decision of each batch's making (batchmaking.go). Keys,
// besides the jobs of the items:
//
//	batch:{id}       JSON batch record (owner, callback URL, item job ids), TTL JobTTL
//	batchn:{id}      hash: total, started, completed, failed, saved,
//	                 finished_at, event_queued, and one field per item seen
//	                 ("s:<job id>" started, "e:<job id>" ended), TTL JobTTL
//	batches:{owner}  sorted set of the owner's batch ids (score 0, ordered by id)
//
// The record never changes but for its callback state; counts live in the
// hash, whose per-item fields make counting idempotent: a task retried or
// run twice counts its job once.
type Batches struct {
	*conn
	jobs *Jobs    // the items' records (GetJobs)
	hub  *waitHub // Batches.Wait's, shared with Jobs
	// lease is how long a making request holds its batch unrenewed: the
	// Idempotency-Key lease (Options.IdempotencyLease).
	lease time.Duration
}

// storedBatch is a batch as kept in Redis, with the fields connector.Batch
// hides from JSON.
type storedBatch struct {
	Batch       *connector.Batch `json:"batch"`
	Owner       string           `json:"owner"`
	CallbackURL string           `json:"callback_url,omitempty"`
	JobIDs      []string         `json:"job_ids"`
	VariantIDs  []string         `json:"variant_ids,omitempty"`
}

func encodeBatch(b *connector.Batch) ([]byte, error) {
	rec := *b
	rec.Counts, rec.SavedBytes, rec.FinishedAt, rec.Links = connector.BatchCounts{}, 0, nil, nil // from the hash
	return json.Marshal(storedBatch{Batch: &rec, Owner: b.Owner, CallbackURL: b.CallbackURL, JobIDs: b.JobIDs, VariantIDs: b.VariantIDs})
}

func decodeBatch(data []byte) (*connector.Batch, error) {
	var sb storedBatch
	if err := json.Unmarshal(data, &sb); err != nil {
		return nil, internalErr(fmt.Errorf("decode batch: %w", err))
	}
	if sb.Batch == nil {
		return nil, internalErr(errors.New("decode batch: no batch in record"))
	}
	sb.Batch.Owner, sb.Batch.CallbackURL, sb.Batch.JobIDs, sb.Batch.VariantIDs = sb.Owner, sb.CallbackURL, sb.JobIDs, sb.VariantIDs
	return sb.Batch, nil
}

// Create publishes a batch whose items exist: its record, its
// counters and its listing entry. Publishing again is a no-op: whoever
// finishes a batch's making (connector.MakingState) may meet another.
func (s *Batches) Create(ctx context.Context, b *connector.Batch) error {
	if b.ID == "" || len(b.JobIDs) == 0 {
		return internalErr(errors.New("create batch: no id or no items"))
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = s.now().UTC()
	}
	data, err := encodeBatch(b)
	if err != nil {
		return internalErr(err)
	}
	idx := s.keys.batchIndex(b.Owner)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, s.keys.batch(b.ID), data, s.jobTTL)
		p.HSetNX(ctx, s.keys.batchCount(b.ID), "total", len(b.JobIDs))
		p.Expire(ctx, s.keys.batchCount(b.ID), s.jobTTL)
		p.ZAdd(ctx, idx, redis.Z{Member: b.ID})
		p.ZRemRangeByLex(ctx, idx, "-", "("+idFloor(s.now().Add(-s.jobTTL)))
		p.Expire(ctx, idx, s.jobTTL)
		p.ZAddNX(ctx, s.keys.runningBatches(), redis.Z{Score: float64(s.now().UnixMilli()), Member: b.ID})
		return nil
	})
	if err != nil {
		return storageErr(err)
	}
	return nil
}

// Running batches, for the worker's sweeper: every published batch is
// noted (running, by when it was last looked at) until its batch.finished
// event is queued, so that an item's end that was never counted (the
// worker's count met a Redis outage and its task was lost) is counted
// late rather than never, and the batch still finishes.

// Running returns up to limit batches last looked at before before,
// oldest first, and marks them looked at now.
func (s *Batches) Running(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.keys.runningBatches(), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil || len(ids) == 0 {
		return nil, storageErr(err)
	}
	now := make([]redis.Z, len(ids))
	for i, id := range ids {
		now[i] = redis.Z{Score: float64(s.now().UnixMilli()), Member: id}
	}
	return ids, storageErr(s.rdb.ZAddXX(ctx, s.keys.runningBatches(), now...).Err())
}

// ForgetRunning forgets a running batch: its event is queued, or it is gone.
func (s *Batches) ForgetRunning(ctx context.Context, id string) error {
	return storageErr(s.rdb.ZRem(ctx, s.keys.runningBatches(), id).Err())
}

// EndsCounted reports, for each of a batch's jobs ids, whether its
// end was counted, and whether the batch.finished event is queued.
func (s *Batches) EndsCounted(ctx context.Context, batchID string, ids []string) (counted []bool, eventQueued bool, err error) {
	fields := make([]string, 0, len(ids)+1)
	fields = append(fields, "event_queued")
	for _, id := range ids {
		fields = append(fields, "e:"+id)
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.batchCount(batchID), fields...).Result()
	if err != nil {
		return nil, false, storageErr(err)
	}
	counted = make([]bool, len(ids))
	for i := range ids {
		counted[i] = vals[i+1] != nil
	}
	return counted, vals[0] != nil, nil
}

// batchCountFields are the hash fields a read of a batch needs.
var batchCountFields = []string{"total", "started", "completed", "failed", "saved", "finished_at"}

// Get reads the record and its counters in one round trip.
func (s *Batches) Get(ctx context.Context, id string) (*connector.Batch, error) {
	var rec *redis.StringCmd
	var counts *redis.SliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.Get(ctx, s.keys.batch(id))
		counts = p.HMGet(ctx, s.keys.batchCount(id), batchCountFields...)
		return nil
	})
	if errors.Is(err, redis.Nil) || errors.Is(rec.Err(), redis.Nil) {
		return nil, notFound("batch", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	data, _ := rec.Bytes()
	b, err := decodeBatch(data)
	if err != nil {
		return nil, err
	}
	applyCounts(b, counts.Val())
	return b, nil
}

// applyCounts fills a batch's counts, saving and status from the hash
// fields read in batchCountFields' order.
func applyCounts(b *connector.Batch, vals []any) {
	n := func(i int) int64 {
		str, _ := vals[i].(string)
		v, _ := strconv.ParseInt(str, 10, 64)
		return v
	}
	total, started, completed, failed := int(n(0)), int(n(1)), int(n(2)), int(n(3))
	if total == 0 {
		total = len(b.JobIDs)
	}
	ended := completed + failed
	started = max(started, ended)
	b.Counts = connector.BatchCounts{Total: total, Queued: max(total-started, 0), Processing: started - ended,
		Completed: completed, Failed: failed}
	b.SavedBytes = n(4)
	b.Status = connector.BatchRunning
	if ended >= total {
		b.Status = connector.BatchFinished
		if str, ok := vals[5].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
				b.FinishedAt = &t
			}
		}
	}
}

// List pages through owner's batches, newest first (ids are UUIDv7).
func (s *Batches) List(ctx context.Context, owner string, f connector.BatchFilter) (*connector.BatchPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	upper := "+"
	if f.Cursor != "" {
		upper = "(" + f.Cursor
	}
	ids, err := s.rdb.ZRevRangeByLex(ctx, s.keys.batchIndex(owner), &redis.ZRangeBy{Max: upper, Min: "-", Count: int64(limit + 1)}).Result()
	if err != nil {
		return nil, storageErr(err)
	}
	more := len(ids) > limit
	ids = ids[:min(len(ids), limit)]
	recs := make([]*redis.StringCmd, len(ids))
	counts := make([]*redis.SliceCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			recs[i] = p.Get(ctx, s.keys.batch(id))
			counts[i] = p.HMGet(ctx, s.keys.batchCount(id), batchCountFields...)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	page := &connector.BatchPage{Batches: make([]*connector.Batch, 0, len(ids))}
	for i := range ids {
		data, err := recs[i].Bytes()
		if err != nil {
			continue // expired
		}
		b, err := decodeBatch(data)
		if err != nil {
			return nil, err
		}
		if b.Owner != owner {
			continue
		}
		applyCounts(b, counts[i].Val())
		page.Batches = append(page.Batches, b)
	}
	if more && len(ids) > 0 {
		page.NextCursor = ids[len(ids)-1]
	}
	return page, nil
}

// Delete forgets a batch and its counters.
func (s *Batches) Delete(ctx context.Context, id string) error {
	b, err := s.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.keys.batch(id), s.keys.batchCount(id))
		p.ZRem(ctx, s.keys.batchIndex(b.Owner), id)
		return nil
	})
	return storageErr(err)
}

// batchStartedScript counts an item as started once.
// KEYS[1] the counters; ARGV[1] job id.
var batchStartedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[1], 's:' .. ARGV[1], 1) == 1 then redis.call('HINCRBY', KEYS[1], 'started', 1) end
return 1
`)

// batchEndedScript counts an item as ended once (started too, if it was
// not), stamps finished_at when the last one ends and publishes that on
// the batch's done channel (waiters read it: Wait), and says whether
// the batch.finished event is due: every item ended, the event not queued.
// KEYS[1] the counters; ARGV[1] job id, ARGV[2] "completed" or "failed",
// ARGV[3] bytes saved, ARGV[4] now (RFC 3339), ARGV[5] the done channel.
// Returns -1 when the batch is gone, 1 when the event is due, else 0.
var batchEndedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[1], 's:' .. ARGV[1], 1) == 1 then redis.call('HINCRBY', KEYS[1], 'started', 1) end
if redis.call('HSETNX', KEYS[1], 'e:' .. ARGV[1], 1) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  if ARGV[2] == 'completed' then redis.call('HINCRBY', KEYS[1], 'saved', ARGV[3]) end
end
local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
local ended = tonumber(redis.call('HGET', KEYS[1], 'completed') or '0') + tonumber(redis.call('HGET', KEYS[1], 'failed') or '0')
if ended < total then return 0 end
if redis.call('HSETNX', KEYS[1], 'finished_at', ARGV[4]) == 1 then redis.call('PUBLISH', ARGV[5], '') end
if redis.call('HEXISTS', KEYS[1], 'event_queued') == 1 then return 0 end
return 1
`)

// ItemStarted counts jobID as processing.
func (s *Batches) ItemStarted(ctx context.Context, batchID, jobID string) error {
	err := batchStartedScript.Run(ctx, s.rdb, []string{s.keys.batchCount(batchID)}, jobID).Err()
	return storageErr(err)
}

// ItemEnded counts jobID as completed (saved bytes) or failed. It
// reports whether the batch.finished event is due: every item has ended
// and the event is not yet marked queued (EventQueued), so a caller
// that fails to queue it, and runs again, is told again.
func (s *Batches) ItemEnded(ctx context.Context, batchID, jobID string, completed bool, saved int64, now time.Time) (bool, error) {
	field := "failed"
	if completed {
		field = "completed"
	}
	n, err := batchEndedScript.Run(ctx, s.rdb, []string{s.keys.batchCount(batchID)},
		jobID, field, max(saved, 0), now.UTC().Format(time.RFC3339Nano), s.keys.done(batchID)).Int()
	if err != nil {
		return false, storageErr(err)
	}
	if n < 0 {
		return false, notFound("batch", batchID)
	}
	return n == 1, nil
}

// EventQueued marks the batch.finished deliveries as queued.
func (s *Batches) EventQueued(ctx context.Context, batchID string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.keys.batchCount(batchID), "event_queued", 1)
		p.ZRem(ctx, s.keys.runningBatches(), batchID)
		return nil
	})
	return storageErr(err)
}

// UpdateCallback changes the record's callback state, keeping its
// expiry (optimistic, with WATCH on the record).
func (s *Batches) UpdateCallback(ctx context.Context, batchID string, set func(*connector.DeliveryState)) error {
	key := s.keys.batch(batchID)
	for range maxTxAttempts {
		err := s.bulk.Watch(ctx, func(tx *redis.Tx) error {
			data, err := tx.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				return notFound("batch", batchID)
			}
			if err != nil {
				return err
			}
			b, err := decodeBatch(data)
			if err != nil {
				return err
			}
			if b.Callback == nil {
				b.Callback = &connector.DeliveryState{}
			}
			set(b.Callback)
			out, err := encodeBatch(b)
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetArgs(ctx, key, out, redis.SetArgs{KeepTTL: true})
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return storageErr(err)
	}
	return storageErr(redis.TxFailedErr)
}

// GetJobs reads many jobs in one round trip, nil for those gone: the items
// of a batch's page or archive. The records are Jobs'; the batch routes
// read them through the batch that names them.
func (s *Batches) GetJobs(ctx context.Context, ids []string) ([]*connector.Job, error) {
	return s.jobs.getJobs(ctx, ids)
}

package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Idempotency record lifetimes.
const (
	// IdempotencyTTL is how long an Idempotency-Key is remembered, counted
	// from the request that reserved it.
	IdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyLease is how long a reservation stays held without
	// being renewed: the request renews it every few seconds while it lives
	// (Renew), so a server that crashed mid-request blocks the
	// key (409) for at most this long.
	DefaultIdempotencyLease = 10 * time.Second
)

// Idempotency keeps Idempotency-Key records per owner for 24 hours, each
// held by its request through a short lease it renews (the creation
// service's IdempotencyStore).
type Idempotency struct {
	*conn
	// lease is how long a reservation lives unrenewed
	// (Options.IdempotencyLease).
	lease time.Duration
}

// storedIdem is an idempotency record as kept in Redis: the domain record and
// when it was reserved, which fixes its 24-hour expiry. ReservedMS is the
// same instant in Unix milliseconds, for completeIdemScript.
type storedIdem struct {
	connector.IdempotencyRecord
	ReservedAt time.Time `json:"reserved_at"`
	ReservedMS int64     `json:"reserved_ms"`
}

func decodeIdem(data []byte) (*storedIdem, error) {
	var r storedIdem
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, internalErr(fmt.Errorf("decode idempotency record: %w", err))
	}
	return &r, nil
}

// Reserve claims owner's key for a request with fingerprint
// that would make job jobID. The record (idem:{owner}:key) lives 24 hours
// from the first reservation; who holds it in flight is a separate lease
// (idemlease:{owner}:key, holding jobID) of a few seconds that the request
// renews. It returns:
//
//   - (record, true, nil) when the caller now holds the key: a fresh
//     reservation (record.PlannedID == jobID), or one taken over from a
//     request whose lease ran out (record.PlannedID is that request's
//     job, which the caller must find or make);
//   - (earlier record, false, nil) otherwise: the caller compares
//     fingerprints (422 when they differ) and job ids (409 while "", a
//     replay otherwise).
func (s *Idempotency) Reserve(ctx context.Context, owner, key, fingerprint, jobID string) (*connector.IdempotencyRecord, bool, error) {
	rkey, lkey := s.keys.idem(owner, key), s.keys.idemLease(owner, key)
	now := s.now().UTC()
	fresh := storedIdem{
		IdempotencyRecord: connector.IdempotencyRecord{Fingerprint: fingerprint, PlannedID: jobID},
		ReservedAt:        now,
		ReservedMS:        now.UnixMilli(),
	}
	data, err := json.Marshal(fresh)
	if err != nil {
		return nil, false, internalErr(err)
	}
	// The earlier record may expire between the SET NX and the GET: try again.
	for range 3 {
		ok, err := s.reserve(ctx, owner, key, data)
		if err != nil {
			return nil, false, err
		}
		if ok {
			// A crash right here leaves a record without a lease: the next
			// request with the key takes it over at once.
			if err := s.rdb.Set(ctx, lkey, jobID, s.lease).Err(); err != nil {
				return nil, false, storageErr(err)
			}
			return &fresh.IdempotencyRecord, true, nil
		}
		var rec *connector.IdempotencyRecord
		var took bool
		err = s.watch(ctx, rkey, func(tx *redis.Tx) error {
			rec, took = nil, false
			old, err := tx.Get(ctx, rkey).Bytes()
			if errors.Is(err, redis.Nil) {
				return nil // gone meanwhile: reserve again
			}
			if err != nil {
				return err
			}
			r, err := decodeIdem(old)
			if err != nil {
				return err
			}
			rec = &r.IdempotencyRecord
			if r.MadeID != "" || r.Fingerprint != fingerprint {
				return nil
			}
			held, err := tx.Exists(ctx, lkey).Result()
			if err != nil || held == 1 {
				return err
			}
			// The holder died: take the key over, with its planned job.
			if data, err = json.Marshal(r); err != nil {
				return internalErr(err)
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetArgs(ctx, rkey, data, redis.SetArgs{KeepTTL: true})
				p.Set(ctx, lkey, jobID, s.lease)
				return nil
			})
			took = err == nil
			return err
		})
		if err != nil {
			return nil, false, err
		}
		if rec != nil {
			return rec, took, nil
		}
	}
	return nil, false, &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage busy", RetryAfter: time.Second, Retryable: true,
		Err: fmt.Errorf("redisstore: idempotency key kept vanishing")}
}

// renewLeaseScript extends the lease KEYS[1] when it still holds ARGV[1].
var renewLeaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// Renew extends the lease of the request that reserved key
// with jobID; held is false when it was lost.
func (s *Idempotency) Renew(ctx context.Context, owner, key, jobID string) (bool, error) {
	n, err := renewLeaseScript.Run(ctx, s.rdb, []string{s.keys.idemLease(owner, key)}, jobID, s.lease.Milliseconds()).Int()
	if err != nil {
		return false, storageErr(err)
	}
	return n == 1, nil
}

// reserve is SET NX of the record key.
func (s *Idempotency) reserve(ctx context.Context, owner, key string, data []byte) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.keys.idem(owner, key), data, IdempotencyTTL).Result()
	return ok, storageErr(err)
}

// Complete records jobID as what the request holding owner's
// key (its lease holds token) made, keeps the record until 24 hours after
// the reservation and drops the lease. held is false, and nothing is
// written, when another request holds the key now or completed it with
// another job: the key is that request's. A record that is gone is
// ENOTFOUND: the job exists, but a retry with the same key will not be
// recognised; the caller should log it.
func (s *Idempotency) Complete(ctx context.Context, owner, key, token, jobID string) (held bool, err error) {
	// One script, one round trip; a record without reserved_ms (or a clock
	// far off) is remembered for a full day from now.
	n, err := completeIdemScript.Run(ctx, s.rdb, []string{s.keys.idem(owner, key), s.keys.idemLease(owner, key)},
		jobID, s.now().UnixMilli(), IdempotencyTTL.Milliseconds(), token, s.lease.Milliseconds()).Int()
	if err != nil {
		return false, storageErr(err)
	}
	if n == 0 {
		return false, notFound("idempotency key", key)
	}
	return n == 1, nil
}

// Release forgets a reservation whose request failed, so that a
// retry can go through, when the request still holds it (its lease holds
// token): a request that lost its lease leaves the key to the one that took
// it over. A completed record (job id set) is kept; a missing one is not an
// error.
func (s *Idempotency) Release(ctx context.Context, owner, key, token string) error {
	err := releaseIdemScript.Run(ctx, s.rdb, []string{s.keys.idem(owner, key), s.keys.idemLease(owner, key)}, token).Err()
	return storageErr(err)
}

// Lease is how long a reservation stays held without being renewed
// (Options.IdempotencyLease): a request renews well inside it, and a
// request waiting for a key in flight waits past it, to take over from one
// that died.
func (s *Idempotency) Lease() time.Duration { return s.lease }

// Replan records planned as what the request holding owner's
// key (its lease holds token) makes now: a request that took the key over
// and found the dead request's work removed makes its own, and a request
// taking the key over from it in turn must find that one. held is false
// when the lease is no longer this request's.
func (s *Idempotency) Replan(ctx context.Context, owner, key, token, planned string) (held bool, err error) {
	rkey, lkey := s.keys.idem(owner, key), s.keys.idemLease(owner, key)
	err = s.watch(ctx, rkey, func(tx *redis.Tx) error {
		held = false
		if lease, err := tx.Get(ctx, lkey).Result(); err != nil || lease != token {
			if errors.Is(err, redis.Nil) {
				return nil
			}
			return err
		}
		data, err := tx.Get(ctx, rkey).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		r, err := decodeIdem(data)
		if err != nil {
			return err
		}
		if r.MadeID != "" {
			return nil
		}
		r.PlannedID = planned
		if data, err = json.Marshal(r); err != nil {
			return internalErr(err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, rkey, data, redis.SetArgs{KeepTTL: true})
			return nil
		})
		held = err == nil
		return err
	})
	return held, err
}

// completeIdemScript writes the job id into a pending idempotency record
// and gives it its 24-hour life, counted from the reservation, when the
// completing request still holds the key: its lease holds ARGV[4], or no
// request holds it and the record names no job yet (the lease lapsed and
// nobody took the key over). One round trip where WATCH, GET and
// MULTI/SET/EXEC took three. GETDEL reads and drops the lease in one
// command; a lease of another request is put back (for a full lease: its
// holder renews it anyway).
//
// KEYS[1] record, KEYS[2] its in-flight lease (same slot); ARGV[1] job id;
// ARGV[2] now in Unix ms; ARGV[3] IdempotencyTTL in ms; ARGV[4] the
// request's lease token; ARGV[5] the lease in ms. Returns 1 when recorded
// (or recorded before with this job id), 0 when the record is gone, -1
// when the key is another request's.
var completeIdemScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local lease = redis.call('GETDEL', KEYS[2])
if not cur then
  if lease then redis.call('SET', KEYS[2], lease, 'PX', ARGV[5]) end
  return 0
end
local rec = cjson.decode(cur)
if lease ~= ARGV[4] then
  if lease then
    redis.call('SET', KEYS[2], lease, 'PX', ARGV[5])
    return -1
  end
  if rec.job_id == ARGV[1] then return 1 end
  if rec.job_id and rec.job_id ~= '' then return -1 end
end
rec.job_id = ARGV[1]
local now = tonumber(ARGV[2])
local at = (tonumber(rec.reserved_ms) or 0) + tonumber(ARGV[3])
if at <= now then at = now + tonumber(ARGV[3]) end
redis.call('SET', KEYS[1], cjson.encode(rec), 'PXAT', at)
return 1
`)

// releaseIdemScript forgets a pending idempotency record and its lease
// when the lease still holds the releasing request's token: a request
// that lost its lease must not free the key of the request that took it
// over. A completed record (job id set) is kept.
//
// KEYS[1] record, KEYS[2] its lease (same slot); ARGV[1] the token.
// Returns 1 when released, 0 otherwise.
var releaseIdemScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur then
  local rec = cjson.decode(cur)
  if rec.job_id and rec.job_id ~= '' then return 0 end
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)

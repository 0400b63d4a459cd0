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
	// IdempotencyTTL is how long a completed Idempotency-Key is remembered,
	// counted from the request that reserved it.
	IdempotencyTTL = 24 * time.Hour
	// PendingTTL is how long a reservation lives before its request
	// completes: long enough for any request, short enough that a server that
	// crashed mid-request does not block the key (409) for a day.
	PendingTTL = 5 * time.Minute
)

// storedIdem is an idempotency record as kept in Redis: the domain record and
// when it was reserved, which fixes its 24-hour expiry.
type storedIdem struct {
	connector.IdempotencyRecord
	ReservedAt time.Time `json:"reserved_at"`
}

func decodeIdem(data []byte) (*storedIdem, error) {
	var r storedIdem
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, internalErr(fmt.Errorf("decode idempotency record: %w", err))
	}
	return &r, nil
}

// ReserveIdempotencyKey claims owner's key for a request with fingerprint
// (SET NX, for PendingTTL). It returns (nil, true, nil) when the caller now
// holds the key, and (earlier record, false, nil) when another request did:
// the caller compares fingerprints (422 when they differ) and job ids (409
// while "", a replay otherwise).
func (s *Store) ReserveIdempotencyKey(ctx context.Context, owner, key, fingerprint string) (*connector.IdempotencyRecord, bool, error) {
	rkey := s.idemKey(owner, key)
	data, err := json.Marshal(storedIdem{
		IdempotencyRecord: connector.IdempotencyRecord{Fingerprint: fingerprint},
		ReservedAt:        s.now().UTC(),
	})
	if err != nil {
		return nil, false, internalErr(err)
	}
	// The earlier record may expire between the SET NX and the GET: try again.
	for range 3 {
		ok, err := s.rdb.SetNX(ctx, rkey, data, PendingTTL).Result()
		if err != nil {
			return nil, false, storageErr(err)
		}
		if ok {
			return nil, true, nil
		}
		old, err := s.rdb.Get(ctx, rkey).Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, false, storageErr(err)
		}
		rec, err := decodeIdem(old)
		if err != nil {
			return nil, false, err
		}
		return &rec.IdempotencyRecord, false, nil
	}
	return nil, false, &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage busy", RetryAfter: time.Second, Retryable: true,
		Err: fmt.Errorf("redisstore: idempotency key kept vanishing")}
}

// CompleteIdempotencyKey records the job the reserving request created and
// keeps the record until 24 hours after the reservation. A reservation that
// is gone (it outlived PendingTTL) is ENOTFOUND: the job exists, but a retry
// with the same key will not be recognised; the caller should log it.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, owner, key, jobID string) error {
	rkey := s.idemKey(owner, key)
	return s.watch(ctx, rkey, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, rkey).Bytes()
		if errors.Is(err, redis.Nil) {
			return notFound("idempotency key", key)
		}
		if err != nil {
			return err
		}
		rec, err := decodeIdem(data)
		if err != nil {
			return err
		}
		rec.JobID = jobID
		if data, err = json.Marshal(rec); err != nil {
			return internalErr(err)
		}
		expireAt := rec.ReservedAt.Add(IdempotencyTTL)
		if now := s.now(); !expireAt.After(now) {
			// No reservation time, or a clock far off: remember a full day.
			expireAt = now.Add(IdempotencyTTL)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, rkey, data, redis.SetArgs{ExpireAt: expireAt})
			return nil
		})
		return err
	})
}

// ReleaseIdempotencyKey forgets a reservation whose request failed, so that a
// retry can go through. A completed record (job id set) is kept; a missing
// one is not an error.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, owner, key string) error {
	rkey := s.idemKey(owner, key)
	return s.watch(ctx, rkey, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, rkey).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := decodeIdem(data)
		if err != nil {
			return err
		}
		if rec.JobID != "" {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, rkey)
			return nil
		})
		return err
	})
}

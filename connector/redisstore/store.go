// Package redisstore keeps imgflow's state in Redis: job records and their
// per-key listing, image blobs, Idempotency-Key records, the preflight account
// cache and REST hook subscriptions. One *Store implements every storage
// interface of package connector, so the server and the worker can share a
// Redis (or a Sentinel / Cluster set-up through redis.UniversalClient).
//
// Every failure to reach Redis comes back as a *connector.Error with code
// EUNAVAILABLE and a RetryAfter hint, which the HTTP layer answers with 503.
//
// Keys, all under Options.Prefix:
//
//	job:{id}               JSON job record (with owner, sealed key, callback URL), TTL JobTTL
//	jobs:{owner}           sorted set of the owner's job ids (score 0, ordered by id)
//	done:{id}              pub/sub channel: a message when the job finishes
//	blob:{key}             raw bytes, TTL chosen by the caller
//	idem:{owner}:{key}     JSON idempotency record, 5 min while pending, 24 h once complete
//	acct:{owner}           JSON account check, TTL chosen by the caller
//	hook:{id}              JSON hook subscription, no TTL
//	hooks:{owner}          set of the owner's hook ids
package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Compile-time checks that *Store is every store the domain asks for.
var (
	_ connector.JobStore         = (*Store)(nil)
	_ connector.BlobStore        = (*Store)(nil)
	_ connector.IdempotencyStore = (*Store)(nil)
	_ connector.AccountCache     = (*Store)(nil)
	_ connector.HookStore        = (*Store)(nil)
)

// Default option values.
const (
	DefaultPrefix = "imgflow:"
	DefaultJobTTL = 7 * 24 * time.Hour
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key and channel name the store uses, so that imgflow
	// can share a Redis with other programs (and tests with each other).
	// Default "imgflow:".
	Prefix string
	// JobTTL is how long a job record and its listing entry live, counted from
	// the job's creation; updates do not extend it. Default 7 days.
	JobTTL time.Duration
	// Now is the clock used for UpdatedAt, CreatedAt when unset, and the age
	// of listing entries. Default time.Now.
	Now func() time.Time
}

// Store is the Redis implementation of connector.JobStore, BlobStore,
// IdempotencyStore, AccountCache and HookStore. It is safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	jobTTL time.Duration
	now    func() time.Time
	hub    *waitHub // shared by every WaitJob
}

// New returns a Store over rdb. It does not contact Redis; see Ping.
func New(rdb redis.UniversalClient, opts Options) *Store {
	s := &Store{rdb: rdb, prefix: opts.Prefix, jobTTL: opts.JobTTL, now: opts.Now, hub: newWaitHub()}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.jobTTL <= 0 {
		s.jobTTL = DefaultJobTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Ping reports whether Redis answers, as EUNAVAILABLE when it does not. The
// server's /ready uses it.
func (s *Store) Ping(ctx context.Context) error {
	return storageErr(s.rdb.Ping(ctx).Err())
}

func (s *Store) jobKey(id string) string         { return s.prefix + "job:" + id }
func (s *Store) jobIndexKey(owner string) string { return s.prefix + "jobs:" + owner }
func (s *Store) doneChannel(id string) string    { return s.prefix + "done:" + id }
func (s *Store) blobKey(key string) string       { return s.prefix + "blob:" + key }
func (s *Store) idemKey(owner, key string) string {
	return s.prefix + "idem:" + owner + ":" + key
}
func (s *Store) acctKey(owner string) string      { return s.prefix + "acct:" + owner }
func (s *Store) hookKey(id string) string         { return s.prefix + "hook:" + id }
func (s *Store) hookIndexKey(owner string) string { return s.prefix + "hooks:" + owner }

// Package redisstore keeps imgflow's state in Redis, split by aggregate:
// New returns a Store whose fields are the aggregates, each owning its keys,
// scripts and files over one shared connection (conn.go), and each caller
// takes the one it needs:
//
//	Jobs         job records, their listing, waits, the per-key cap, batch items' staging (jobs.go)
//	Runs         the compress executor's steps, fused into few round trips (runs.go, calls.go)
//	Batches      batches, their counts and the decision of their making (batches.go, batchmaking.go)
//	Hooks        subscriptions, endpoints, messages, delivery logs, secret versions (hooks.go)
//	Idempotency  Idempotency-Key records and their leases (idempotency.go)
//	Accounts     key checks, confirmed keys, outbound budgets (accounts.go)
//	Blobs        image bytes, and the S3 objects' deadlines (blobs.go)
//	Dedupe       the content dedupe index (dedupe.go)
//
// The server and the worker can share a Redis (or a Sentinel / Cluster
// set-up through redis.UniversalClient). A step that touches keys of two
// aggregates in one round trip (a job's end, its making) stays whole, in
// the aggregate whose step it is, and says so. Tests: go test
// ./connector/redisstore (miniredis; REDIS_URL for a real Redis; the
// cluster tests start their own redis-server when one is installed).
//
// Every failure to reach Redis comes back as a *connector.Error with code
// EUNAVAILABLE and a RetryAfter hint, which the HTTP layer answers with 503.
//
// Every key, its type, hash slot, TTL and aggregate: the table in keys.go.
package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
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
	// IdempotencyLease is how long an Idempotency-Key reservation stays
	// held without renewal. Default DefaultIdempotencyLease (10 s).
	IdempotencyLease time.Duration
	// InflightTTL is how long an admitted job counts against its key's
	// in-flight cap if nothing frees its place. Default DefaultInflightTTL.
	InflightTTL time.Duration
	// FreeFailuresPerHour is each key's budget of free failures
	// (failbudget.go): a burst of this many, then this many an hour, and one
	// back per paid job; a key past it gets EFAILBUDGET on a new job.
	// 0 (the default): no budget.
	FreeFailuresPerHour int
	// Unbatched sends every command on a pooled connection of its own, as
	// go-redis does by default. Otherwise (the default, on a single Redis
	// server) the store's small commands (records, scripts, indexes) go
	// through one go-redis autopipeliner: what concurrent jobs send at the
	// same moment leaves in one write on one connection, instead of a
	// round trip each. Blob bytes and pub/sub stay on the pooled client.
	Unbatched bool
	// Now is the clock used for UpdatedAt, CreatedAt when unset, and the age
	// of listing entries. Default time.Now.
	Now func() time.Time
}

// Store is imgflow's state in Redis, one aggregate per field, all on one
// client and key prefix. Each caller takes the aggregate it needs. It is
// safe for concurrent use.
type Store struct {
	conn *conn // schema.go's version and lock, Ping

	// Jobs keeps job records, their listing, their finish for waiters and
	// the key's cap of unfinished jobs (jobs.go).
	Jobs *Jobs
	// Runs is the compress executor's store, a job's life step by step
	// with blobs in this Redis (runs.go; Runs.WithBlobs for S3).
	Runs *Runs
	// Batches keeps batches and their making (batches.go, batchmaking.go).
	Batches *Batches
	// Hooks keeps subscriptions, endpoints, messages and delivery logs
	// (hooks.go).
	Hooks *Hooks
	// Idempotency keeps Idempotency-Key records (idempotency.go).
	Idempotency *Idempotency
	// Accounts keeps key checks and outbound budgets (accounts.go).
	Accounts *Accounts
	// Blobs keeps image bytes (blobs.go).
	Blobs *Blobs
	// Dedupe is the content dedupe index (dedupe.go).
	Dedupe *Dedupe
}

// New returns a Store over rdb. It does not contact Redis; see Ping.
func New(rdb redis.UniversalClient, opts Options) *Store {
	batchedRDB := rdb
	if !opts.Unbatched {
		batchedRDB = Batched(rdb)
	}
	c := &conn{rdb: batchedRDB, bulk: rdb, keys: keyspace{prefix: opts.Prefix}, jobTTL: opts.JobTTL, now: opts.Now}
	if c.keys.prefix == "" {
		c.keys.prefix = DefaultPrefix
	}
	if c.jobTTL <= 0 {
		c.jobTTL = DefaultJobTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	idemLease := opts.IdempotencyLease
	if idemLease <= 0 {
		idemLease = DefaultIdempotencyLease
	}
	inflightTTL := opts.InflightTTL
	if inflightTTL <= 0 {
		inflightTTL = DefaultInflightTTL
	}
	hub := newWaitHub(c.bulk, c.keys.doneChannels())
	blobs := &Blobs{conn: c}
	jobs := &Jobs{conn: c, blobs: blobs, hub: hub, records: newJobCache(), listings: newListingMemo(),
		inflightTTL: inflightTTL, freeFailuresPerHour: max(opts.FreeFailuresPerHour, 0)}
	return &Store{conn: c, Jobs: jobs, Runs: &Runs{jobs: jobs},
		Batches:     &Batches{conn: c, jobs: jobs, hub: hub, lease: idemLease},
		Hooks:       &Hooks{c},
		Idempotency: &Idempotency{conn: c, lease: idemLease},
		Accounts:    &Accounts{c}, Blobs: blobs, Dedupe: &Dedupe{c}}
}

// Batched is the autopipeliner of rdb (see Options.Unbatched), or rdb
// itself on a cluster, where commands already fan out per node. There is
// one per client: the store and anything else batched on the same client
// (main's asynq client) share its stream. Full duplex: one connection with
// a writer and a reader, so a batch is written while the replies of the one
// before it are read.
func Batched(rdb redis.UniversalClient) redis.UniversalClient {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return rdb
	}
	ap, err := c.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil { // a client closed already: its own errors will say so
		return rdb
	}
	return ap
}

// Ping reports whether Redis answers, as EUNAVAILABLE when it does not. The
// server's /ready uses it.
func (s *Store) Ping(ctx context.Context) error {
	return storageErr(s.conn.rdb.Ping(ctx).Err())
}

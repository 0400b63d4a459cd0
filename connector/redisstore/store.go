// Package redisstore keeps imgflow's state in Redis, split by aggregate:
// New returns a Store whose fields are small types on one client, key
// prefix and set of scripts, and each caller takes the one it needs:
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
// Keys, all under Options.Prefix. The part in braces is the Redis Cluster
// hash tag: a job's keys share the job id's slot and an owner's keys the
// owner's, so every MULTI/WATCH or script of the store touches one slot and
// work across slots goes through plain pipelines:
//
//	job:{id}               JSON job record (with owner, sealed key, callback URL), TTL JobTTL
//	done:{id}              pub/sub channel: a message when the job or batch finishes
//	blob:in:{id}           raw bytes of job id's input (blob key "in:id"), TTL chosen by the caller
//	blob:out:{id}          raw bytes of job id's result (blob key "out:id")
//	jobs:{owner}           sorted set of the owner's job ids (score 0, ordered by id)
//	idem:{owner}:key       JSON idempotency record, 24 h from its reservation
//	idemlease:{owner}:key  the in-flight request's lease on it (its job id), seconds, renewed
//	acct:{owner}           JSON account check, TTL chosen by the caller
//	hooks:{owner}          set of the owner's hook ids
//	hook:{id}              JSON hook subscription, no TTL
//	blobdue:{minute}       set of external blob names due in that unix minute (blobdeadlines.go)
//	deliveries:{id}        list of the job's delivery attempts (JSON), expiring with the job
//	attempts:{id}          hash: the job's call record, its calls of the compression API (calls.go), TTL JobTTL
//	inflight:{owner}       sorted set of the owner's unfinished job ids, scored by a deadline (inflight.go)
//	dedupe:{owner}:…       the dedupe index and its claims (dedupe.go)
//	endpoint:{id}          hash: a delivery endpoint's failures, pause, disabling and rate slot (endpoints.go), TTL JobTTL
//	msg:{id}               JSON event that is not a job's (hook.disabled, ...), TTL JobTTL; its log is deliveries:{id}
//	dlvidx:{owner}         sorted set of the owner's deliveries by first attempt (messages.go), trimmed to JobTTL
//	cbsecret:{owner}       hash: the version of the owner's callback secret and the previous one's end
//	batch…, batchn…        batches and their counts (batches.go); the making of a batch and its staged
//	                       items (batchmaking.go, jobmaking.go); the notes of new jobs (unqueued.go)
//	schema, schema:lock    the key layout's version (SchemaVersion) and imgflow migrate's lock (schema.go)
//
// The prefix itself must not contain braces, or it would become the tag of
// every key.
package redisstore

import (
	"context"
	"strings"
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
	*base // unexported: nothing of it is promoted outside the package

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

// base is what every aggregate of the store shares: the client, the key
// prefix, the options and the scripts' helpers.
type base struct {
	// rdb sends the small commands: the autopipeliner over bulk, or bulk
	// itself (Options.Unbatched, a cluster).
	rdb redis.UniversalClient
	// bulk is the client as given: blob bytes, pub/sub, WATCH.
	bulk   redis.UniversalClient
	prefix string
	jobTTL time.Duration
	// idemLease is how long an Idempotency-Key reservation lives unrenewed.
	idemLease   time.Duration
	inflightTTL time.Duration
	// freeFailuresPerHour is Options.FreeFailuresPerHour.
	freeFailuresPerHour int
	now                 func() time.Time
	hub                 *waitHub  // shared by every WaitJob
	records             *jobCache // unfinished job records last seen, for UpdateJob
}

// New returns a Store over rdb. It does not contact Redis; see Ping.
func New(rdb redis.UniversalClient, opts Options) *Store {
	batchedRDB := rdb
	if !opts.Unbatched {
		batchedRDB = Batched(rdb)
	}
	s := &base{rdb: batchedRDB, bulk: rdb, prefix: opts.Prefix, jobTTL: opts.JobTTL, now: opts.Now, hub: newWaitHub(), records: newJobCache()}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.jobTTL <= 0 {
		s.jobTTL = DefaultJobTTL
	}
	s.freeFailuresPerHour = max(opts.FreeFailuresPerHour, 0)
	s.idemLease = opts.IdempotencyLease
	if s.idemLease <= 0 {
		s.idemLease = DefaultIdempotencyLease
	}
	s.inflightTTL = opts.InflightTTL
	if s.inflightTTL <= 0 {
		s.inflightTTL = DefaultInflightTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	jobs := &Jobs{s}
	return &Store{base: s, Jobs: jobs, Runs: &Runs{jobs: jobs}, Batches: &Batches{s}, Hooks: &Hooks{s},
		Idempotency: &Idempotency{s}, Accounts: &Accounts{s}, Blobs: &Blobs{base: s}, Dedupe: &Dedupe{s}}
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

// smallValue is the largest value the store writes or reads through the
// autopipeliner: larger ones go on a pooled connection of their own, so a
// 10 MiB upload never holds up other jobs' commands queued behind it.
const smallValue = 32 << 10

// clientFor is the client for a round trip that carries n bytes of blob.
func (s *base) clientFor(n int64) redis.UniversalClient {
	if n <= smallValue {
		return s.rdb
	}
	return s.bulk
}

// Ping reports whether Redis answers, as EUNAVAILABLE when it does not. The
// server's /ready uses it.
func (s *Store) Ping(ctx context.Context) error {
	return storageErr(s.rdb.Ping(ctx).Err())
}

func (s *base) jobKey(id string) string          { return s.prefix + "job:{" + id + "}" }
func (s *base) jobIndexKey(owner string) string  { return s.prefix + "jobs:{" + owner + "}" }
func (s *base) doneChannel(id string) string     { return s.prefix + "done:{" + id + "}" }
func (s *base) hookKey(id string) string         { return s.prefix + "hook:{" + id + "}" }
func (s *base) hookIndexKey(owner string) string { return s.prefix + "hooks:{" + owner + "}" }

// blobKey tags the last segment of a blob key ("in:<job id>", see
// connector.InputBlobKey), so a job's blobs live in its slot.
func (s *base) blobKey(key string) string {
	i := strings.LastIndexByte(key, ':')
	return s.prefix + "blob:" + key[:i+1] + "{" + key[i+1:] + "}"
}

func (s *base) callsKey(id string) string { return s.prefix + "attempts:{" + id + "}" }

package redisstore

import (
	"strconv"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// The key layout, every key the store writes, all under Options.Prefix. The
// part in braces is the Redis Cluster hash tag: a job's keys share the job
// id's slot and an owner's keys the owner's, so every MULTI/WATCH or script
// touches one slot and work across slots goes through plain pipelines. The
// prefix itself must not contain braces, or it would become every key's tag.
// A change to this table is a schema change (schema.go: SchemaVersion and a
// Migration); keys_test.go pins the names.
//
//	key                          type        slot     TTL                          owner
//	job:{id}                     string JSON job id   JobTTL from creation         Jobs (jobs.go)
//	jobs:{owner}                 zset        owner    JobTTL+10m, set on add       Jobs (joblist.go, listingexpiry.go)
//	jobmaking:{id}               string JSON job id   makingTTL                    Jobs (jobmaking.go): a batch item staged
//	inflight:{owner}             zset        owner    InflightTTL                  Jobs (inflight.go, failbudget.go)
//	unqueued                     zset        -        none, swept                  Jobs (unqueued.go)
//	attempts:{id}                hash        job id   JobTTL                       Jobs (calls.go): the call record Runs keeps
//	done:{id}                    channel     job id   -                            Jobs, Batches (jobwait.go, waithub.go)
//	batch:{id}                   string JSON batch id JobTTL                       Batches (batches.go)
//	batchn:{id}                  hash        batch id JobTTL                       Batches (batches.go): item counts
//	batches:{owner}              zset        owner    JobTTL, renewed on add       Batches (batches.go)
//	batches:running              zset        -        none, swept                  Batches (batches.go)
//	batchmaking:{id}             hash        batch id makingTTL, JobTTL once made  Batches (batchmaking.go)
//	batchlease:{id}              string      batch id the Idempotency-Key lease    Batches (batchmaking.go)
//	making                       zset        -        none, swept                  Batches (batchmaking.go)
//	hook:{id}                    string JSON hook id  none                         Hooks (hooks.go)
//	hooks:{owner}                set         owner    none                         Hooks (hooks.go)
//	deliveries:{id}              list JSON   job id   JobTTL                       Hooks (deliveries.go): a job's or message's log
//	msg:{id}                     string JSON msg id   JobTTL                       Hooks (messages.go)
//	dlvidx:{owner}               zset        owner    JobTTL, trimmed              Hooks (messages.go)
//	cbsecret:{owner}             hash        owner    none                         Hooks (messages.go)
//	endpoint:{id}                hash        endpoint JobTTL from last write       Hooks (endpoints.go)
//	idem:{owner}:key             string JSON owner    24 h from reservation        Idempotency (idempotency.go)
//	idemlease:{owner}:key        string      owner    the lease, renewed           Idempotency (idempotency.go)
//	acct:{owner}                 string JSON owner    the caller's                 Accounts (accounts.go)
//	acctok:{owner}               string      owner    the grace                    Accounts (accounts.go)
//	outbudget:{owner}            string      owner    a minute past the last use   Accounts (accounts.go)
//	blob:in:{id}, blob:out:{id}  string      job id   the caller's                 Blobs (blobs.go)
//	blobdue:{minute}             set         minute   a week past the minute       Blobs (blobdeadlines.go)
//	claim:{name}                 string      name     the claim's                  Blobs (claims.go)
//	dedupe:{owner}:sha:opts      string      owner    the result's                 Dedupe (dedupe.go)
//	dedupeclaim:{owner}:sha:opts string      owner    the claim's lease            Dedupe (dedupe.go)
//	schema, schema:lock          string      -        none, schemaLockTTL          Store (schema.go)
type keyspace struct{ prefix string }

func (k keyspace) job(id string) string              { return k.prefix + "job:{" + id + "}" }
func (k keyspace) jobIndex(owner string) string      { return k.prefix + "jobs:{" + owner + "}" }
func (k keyspace) stagedJob(id string) string        { return k.prefix + "jobmaking:{" + id + "}" }
func (k keyspace) inflight(owner string) string      { return k.prefix + "inflight:{" + owner + "}" }
func (k keyspace) unqueued() string                  { return k.prefix + "unqueued" }
func (k keyspace) calls(id string) string            { return k.prefix + "attempts:{" + id + "}" }
func (k keyspace) done(id string) string             { return k.doneChannels() + "{" + id + "}" }
func (k keyspace) doneChannels() string              { return k.prefix + "done:" }
func (k keyspace) batch(id string) string            { return k.prefix + "batch:{" + id + "}" }
func (k keyspace) batchCount(id string) string       { return k.prefix + "batchn:{" + id + "}" }
func (k keyspace) batchIndex(owner string) string    { return k.prefix + "batches:{" + owner + "}" }
func (k keyspace) runningBatches() string            { return k.prefix + "batches:running" }
func (k keyspace) batchMaking(id string) string      { return k.prefix + "batchmaking:{" + id + "}" }
func (k keyspace) batchLease(id string) string       { return k.prefix + "batchlease:{" + id + "}" }
func (k keyspace) making() string                    { return k.prefix + "making" }
func (k keyspace) hook(id string) string             { return k.prefix + "hook:{" + id + "}" }
func (k keyspace) hookIndex(owner string) string     { return k.prefix + "hooks:{" + owner + "}" }
func (k keyspace) deliveries(id string) string       { return k.prefix + "deliveries:{" + id + "}" }
func (k keyspace) msg(id string) string              { return k.prefix + "msg:{" + id + "}" }
func (k keyspace) deliveryIndex(owner string) string { return k.prefix + "dlvidx:{" + owner + "}" }
func (k keyspace) cbSecret(owner string) string      { return k.prefix + "cbsecret:{" + owner + "}" }
func (k keyspace) endpoint(id string) string         { return k.prefix + "endpoint:{" + id + "}" }
func (k keyspace) idem(owner, key string) string     { return k.prefix + "idem:{" + owner + "}:" + key }
func (k keyspace) idemLease(owner, key string) string {
	return k.prefix + "idemlease:{" + owner + "}:" + key
}
func (k keyspace) acct(owner string) string      { return k.prefix + "acct:{" + owner + "}" }
func (k keyspace) confirmed(owner string) string { return k.prefix + "acctok:{" + owner + "}" }
func (k keyspace) outbound(owner string) string  { return k.prefix + "outbudget:{" + owner + "}" }
func (k keyspace) blobDue(minute int64) string {
	return k.prefix + "blobdue:{" + strconv.FormatInt(minute, 10) + "}"
}
func (k keyspace) claim(name string) string { return k.prefix + "claim:{" + name + "}" }
func (k keyspace) dedupe(d connector.DedupeKey) string {
	return k.prefix + "dedupe:{" + d.Owner + "}:" + d.SHA256 + ":" + d.Options
}
func (k keyspace) dedupeClaim(d connector.DedupeKey) string {
	return k.prefix + "dedupeclaim:{" + d.Owner + "}:" + d.SHA256 + ":" + d.Options
}
func (k keyspace) schema() string     { return k.prefix + "schema" }
func (k keyspace) schemaLock() string { return k.prefix + "schema:lock" }

// blob tags the last segment of a blob key ("in:<job id>", see
// connector.InputBlobKey), so a job's blobs live in its slot.
func (k keyspace) blob(key string) string {
	i := strings.LastIndexByte(key, ':')
	return k.prefix + "blob:" + key[:i+1] + "{" + key[i+1:] + "}"
}

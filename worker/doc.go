// Package worker runs imgflow's background work on asynq: it compresses
// queued jobs through the compression API (once per job, whatever the
// retries), stores their results, and delivers each finished job to its
// callback URL and to the owner's hook subscriptions, signed the Standard
// Webhooks way and retried on their own schedule.
//
// Queue is the producer side (the HTTP server enqueues with it); Worker is
// the consumer side (`imgflow work`). Task payloads carry ids, never image
// bytes: the bytes live in the BlobStore.
//
// Where to read, each file one part of the story:
//
//	compress.go      a job's life, run-fenced: its outcome, its one end, its follow-ups
//	transform.go     resize/convert/metadata before the one call (connector/imaging)
//	dedupe.go        an identical image's result reused, uncharged
//	batch.go         a batch item counted; the last one queues batch.finished
//	deliver*.go      every event's one delivery path: endpoint policy, log, budget
//	fairshare.go     one key's share of the workers, so another key is never stalled
//	unqueued.go      the sweeper: jobs without a task, batches left half made (batchsweep.go)
//	recover.go       tasks whose worker died (asynq's private layout: internal/asynqext)
//	schedule.go      the retry policy
//
// Tests: go test ./worker (miniredis; REDIS_URL for a real Redis). The
// system tests here (*_system_test.go) run the whole imgflow in-process
// (internal/systemtest).
package worker

// Package worker runs imgflow's background work on asynq: it compresses
// queued jobs through the compression API (once per job, whatever the
// retries), stores their results, and delivers each finished job to its
// callback URL and to the owner's hook subscriptions, signed the Standard
// Webhooks way and retried on their own schedule.
//
// Queue is the producer side (the HTTP server enqueues with it); Worker is
// the consumer side (`imgflow work`). Task payloads carry ids, never image
// bytes: the bytes live in the BlobStore.
package worker

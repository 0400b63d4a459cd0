// Package connector is imgflow's domain: compress jobs and their states, the
// inputs a flow may send, the error codes every layer speaks, and the
// interfaces that have more than one implementation or a fake in tests
// (JobStore, JobRuns, BlobStore, Queue, Compressor, ImageFetcher). A store
// with one implementation (redisstore's Hooks, Batches, Idempotency, ...) is
// described by its users, shaped by their calls: server/stores.go,
// worker/stores.go, internal/app. It imports nothing of the project and no
// framework, so the HTTP server, the asynq worker and the Redis store all
// depend on it and it on none of them.
package connector

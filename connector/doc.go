// Package connector is imgflow's domain: compress jobs and their states, the
// inputs a flow may send, the error codes every layer speaks, and the
// interfaces (JobStore, BlobStore, Queue, ...) that the outside packages
// implement. It imports nothing of the project and no framework, so the HTTP
// server, the asynq worker and the Redis store all depend on it and it on none
// of them.
package connector

// Package asynqext is the one place where imgflow relies on what asynq keeps
// private: the names and shapes of the Redis keys of a queue, the state field
// of a task's hash, and which Lua script asynq sends for what. asynq's API has
// no way to requeue a task whose worker died before asynq's own recoverer
// (60–120 s), to tell an idle dequeue from a busy one, or to read a task's
// state for hundreds of ids in one round trip; imgflow does all three (worker/
// recover.go, wake.go, wakehook.go, serverclient.go, unqueued.go), and the
// test helpers clean up and inspect asynq's keys. Everything they assume about
// asynq's internals is spelled here, behind small functions of a Queue, and
// nowhere else in Go; the Helm chart's KEDA scaler names the pending and
// active lists in its template, which a contract test holds to Pending and
// Active (deploy/helm/chartcheck, a module of its own, checks the rendered
// chart's names by pattern).
//
// Verified against asynq VerifiedVersion (v0.26.0; the layout is asynq's
// internal/base/base.go and the scripts internal/rdb/rdb.go). The package has
// no mutable state: a Queue is a value, the only package-level values are
// constants and one compiled script.
//
// The contract tests (contract_test.go) fail first of all when the asynq
// linked into the binary is not VerifiedVersion, then drive the real asynq
// client, server and inspector against Redis to prove each assumption. To
// upgrade asynq: bump it in go.mod, read the diff of asynq's
// internal/base/base.go and internal/rdb/rdb.go (key names, the enqueue,
// dequeue, forward and requeue scripts, the lease's units), change this
// package to match, bump VerifiedVersion and run
//
//	go test ./internal/asynqext/
//	REDIS_URL=redis://127.0.0.1:6379/DB go test ./internal/asynqext/
//
// (miniredis by default; a real Redis with REDIS_URL).
package asynqext

package worker

import (
	"context"
	"reflect"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// One-trip store operations. The worker's stores are interfaces (the blob
// store may be S3), but in the usual set-up one Redis store is all of them,
// and then steps that touch several can share a round trip: a Redis round
// trip is the unit of a job's cost (BENCHMARK.md). Each step checks, with
// sameStore, that the stores it would merge are one object, and falls back
// to the separate calls otherwise.

// jobStarter is a job store whose write that starts a run also begins the
// call in the attempt record (redisstore.Store), used when it is the
// attempt store too.
type jobStarter interface {
	StartJob(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, connector.Attempts, error)
}

// jobInputReader is a job store that reads a job and opens its input blob
// in one round trip (redisstore.Store).
type jobInputReader interface {
	GetJobWithInput(ctx context.Context, id string) (*connector.Job, *connector.Blob, error)
}

// answerKeeper is an attempt store that also keeps the compressed bytes, in
// the same round trip as the answer (redisstore.Store), used when it is the
// blob store too.
type answerKeeper interface {
	KeepAnswerWithBytes(ctx context.Context, jobID string, call int, answer *connector.KeptAnswer, data connector.Bytes, ttl time.Duration) error
}

// jobFinisher is a job store whose finishing write also tells whether the
// owner has hook subscriptions (redisstore.Store), used when it is the hook
// store too: most owners have none, and fanOut then skips listing them.
type jobFinisher interface {
	FinishJob(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, connector.HooksHint, error)
}

// inputDropper is a job store whose write that finishes a job deletes the
// job's input blob (redisstore.Store), when it is the blob store too.
type inputDropper interface {
	DeletesInputOnFinish() bool
}

// sameStore reports whether two of the worker's stores are one object (one
// Redis store), so that one may do the other's write in its round trip.
func sameStore(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

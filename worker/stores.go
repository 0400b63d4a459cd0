package worker

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// The stores the worker reads and writes besides the executor's
// (connector.JobRuns), each shaped by what the worker calls:
// redisstore's aggregates fit them, and main wires one field each.

// JobStore keeps job records (redisstore.Jobs): what the worker reads
// and updates besides the executor's steps, and what its sweeper needs to
// queue jobs left without a task (unqueued.go) and to finish batches left
// half made through the creation service (app.JobStore).
type JobStore interface {
	connector.JobStore
	app.JobStore
	// Unqueued returns up to limit ids of jobs created before before
	// whose notes the sweeper has not forgotten yet, oldest first.
	Unqueued(ctx context.Context, before time.Time, limit int) ([]string, error)
	// ForgetUnqueued drops the notes of ids: their tasks are queued, or
	// they are gone or finished.
	ForgetUnqueued(ctx context.Context, ids ...string) error
	// GetMany reads the records of ids at once: jobs[i], or errs[i]
	// (ENOTFOUND when gone).
	GetMany(ctx context.Context, ids []string) (jobs []*connector.Job, errs []error)
}

// OutboundBudget keeps each key's budget of deliveries of free jobs
// (redisstore.Accounts).
type OutboundBudget interface {
	// SpendOutbound reserves one of owner's free deliveries under
	// perMinute (a burst of perMinute, then perMinute a minute, evenly) if
	// its turn comes within maxWait, and says how long to wait for it; ok
	// is false, with the wait, when it is further off (nothing reserved).
	SpendOutbound(ctx context.Context, owner string, perMinute int, maxWait time.Duration) (wait time.Duration, ok bool, err error)
}

// HookStore keeps what deliveries need (redisstore.Hooks): hook
// subscriptions, the endpoints events are sent to, events that are not a
// job's (messages), the delivery log, and callback secret versions.
type HookStore interface {
	Get(ctx context.Context, id string) (*connector.Hook, error)
	List(ctx context.Context, owner string) ([]*connector.Hook, error)
	// DisableFor disables the hook with reason at at; changed is false
	// when it already was disabled.
	DisableFor(ctx context.Context, id, reason string, at time.Time) (changed bool, err error)

	// TakeSlot reserves the endpoint's next delivery slot under rate
	// (deliveries per second, 1/rate apart) if it comes within maxWait,
	// and says how long to wait for it; ok is false, with the wait, when
	// the slot is further off (nothing is reserved then).
	TakeSlot(ctx context.Context, id string, rate float64, maxWait time.Duration) (wait time.Duration, ok bool, err error)
	// AdmitEndpoint reads the endpoint's state and, unless it is disabled
	// or paused (or rate <= 0), takes a slot as TakeSlot, in one step.
	AdmitEndpoint(ctx context.Context, id string, rate float64, maxWait time.Duration) (st connector.EndpointState, wait time.Duration, reserved bool, err error)
	// EndpointFailed records a failed attempt at now (pausing the endpoint
	// until now+retryAfter when retryAfter > 0) and returns the state.
	EndpointFailed(ctx context.Context, id string, now time.Time, retryAfter time.Duration) (connector.EndpointState, error)
	// EndpointSucceeded records a 2xx answer: the run of failures ends, and
	// a disabled endpoint (reached by its owner's redelivery) is enabled.
	EndpointSucceeded(ctx context.Context, id string) error
	// DisableEndpoint marks the endpoint disabled; changed is false when it
	// already was (so that one owner hears of it once).
	DisableEndpoint(ctx context.Context, id, reason string, at time.Time) (changed bool, err error)
	// MarkCreditsLow records whether the balance an account.credits_low
	// hook watches is at or below its threshold; crossed is true only on
	// the change from above to at-or-below, so the event fires once per
	// crossing.
	MarkCreditsLow(ctx context.Context, id string, low bool) (crossed bool, err error)

	PutMessage(ctx context.Context, m *connector.Message) error
	// GetMessage returns the message, or ENOTFOUND.
	GetMessage(ctx context.Context, id string) (*connector.Message, error)
	// RecordDeliveryAttempt appends a to job's delivery log;
	// RecordMessageAttempt to a message's, indexing it for the owner.
	RecordDeliveryAttempt(ctx context.Context, job *connector.Job, a *connector.DeliveryAttempt) error
	RecordMessageAttempt(ctx context.Context, m *connector.Message, a *connector.DeliveryAttempt) error

	CallbackSecretVersion(ctx context.Context, owner string) (connector.SecretVersion, error)
}

// BatchStore keeps batches and counts their items (redisstore.Batches).
// Counting is idempotent per job: a job started or ended twice (a task
// retried, a duplicate) is counted once. The sweeper settles batches left
// half made through the creation service (app.BatchStore).
type BatchStore interface {
	app.BatchStore
	// ItemStarted counts job as processing.
	ItemStarted(ctx context.Context, batchID, jobID string) error
	// ItemEnded counts job as completed (saved bytes) or failed. It
	// reports eventDue while every item has ended and the batch.finished
	// event is not yet marked queued (EventQueued): so a caller that
	// fails to queue it, and runs again, is told again.
	ItemEnded(ctx context.Context, batchID, jobID string, completed bool, saved int64, now time.Time) (eventDue bool, err error)
	// EventQueued marks the batch.finished deliveries as queued.
	EventQueued(ctx context.Context, batchID string) error
	// UpdateCallback applies set to the callback's delivery state.
	UpdateCallback(ctx context.Context, batchID string, set func(*connector.DeliveryState)) error
	// GetJobs reads the items' jobs in one go (nil for a job gone).
	GetJobs(ctx context.Context, ids []string) ([]*connector.Job, error)

	// Running, ForgetRunning and EndsCounted serve the sweeper's
	// count of missed ends (batchsweep.go): the batches not looked at
	// since before, forgetting one, and which items' ends are counted.
	Running(ctx context.Context, before time.Time, limit int) ([]string, error)
	ForgetRunning(ctx context.Context, id string) error
	EndsCounted(ctx context.Context, batchID string, ids []string) (counted []bool, eventQueued bool, err error)
}

// DedupeIndex remembers, per connector.DedupeKey, the last completed job
// whose result is stored, and lets one job at a time compress a given image
// (the claim) while identical jobs wait for it (redisstore.Dedupe).
type DedupeIndex interface {
	// Enter, in one step, returns the job recorded for k (source),
	// or else lets jobID be the one job compressing k's image for at most
	// lease (holder == jobID; a re-run of it renews its claim), or else
	// names the job that is (holder).
	Enter(ctx context.Context, k connector.DedupeKey, jobID string, lease time.Duration) (source, holder string, err error)
	// Finish records jobID, completed, as k's source for ttl (how
	// long its result is kept). jobID's claim on k may stay until its
	// lease ends: Enter reads the source first, so a claim beside one
	// decides nothing (Release it when it could outlive the source).
	Finish(ctx context.Context, k connector.DedupeKey, jobID string, ttl time.Duration) error
	// Forget drops k's entry and claim where they still name jobID, a
	// job that cannot serve (its result gone, or it failed).
	Forget(ctx context.Context, k connector.DedupeKey, jobID string) error
	// Release drops jobID's claim on k; another job's claim stays.
	Release(ctx context.Context, k connector.DedupeKey, jobID string) error
}

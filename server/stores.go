package server

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// The stores the API reads and writes, each shaped by what the routes
// call: redisstore's aggregates (Jobs, Batches, Accounts, Hooks, ...) fit
// them, and main wires one field each. Interfaces with more than one
// implementation (BlobStore) stay in package connector.

// JobStore is what the API reads of jobs and what its creation service
// makes them with (redisstore.Jobs).
type JobStore interface {
	connector.JobStore
	app.JobStore
}

// BatchStore is what the batch routes read and what the creation service
// makes batches with (redisstore.Batches).
type BatchStore interface {
	app.BatchStore
	// List returns owner's batches newest first.
	List(ctx context.Context, owner string, filter connector.BatchFilter) (*connector.BatchPage, error)
	// GetJobs reads the items' jobs in one go (nil for a job gone).
	GetJobs(ctx context.Context, ids []string) ([]*connector.Job, error)
	// Wait blocks until batch b is finished or ctx ends, then returns
	// it as it is (with ctx's error when ctx ended first), as
	// connector.JobStore's Wait does for a job.
	Wait(ctx context.Context, b *connector.Batch) (*connector.Batch, error)
}

// HookStore keeps hook subscriptions and what operating them needs
// (redisstore.Hooks).
type HookStore interface {
	Get(ctx context.Context, id string) (*connector.Hook, error)
	List(ctx context.Context, owner string) ([]*connector.Hook, error)
	Delete(ctx context.Context, owner, id string) error // ENOTFOUND if not owner's
	// CreateLimited stores a new hook, refusing with ETOOMANYHOOKS one
	// beyond max for its owner (max <= 0: no cap).
	CreateLimited(ctx context.Context, h *connector.Hook, max int) error
	// Enable turns owner's hook back on; ENOTFOUND if not owner's.
	Enable(ctx context.Context, owner, id string) (*connector.Hook, error)
	// RotateSecret raises owner's hook's SecretVersion; the previous
	// secret keeps signing until now+overlap.
	RotateSecret(ctx context.Context, owner, id string, now time.Time, overlap time.Duration) (*connector.Hook, error)

	// CallbackSecretVersion and RotateCallbackSecret keep the version of
	// each owner's callback signing secret (the secrets themselves derive
	// from IMGFLOW_SECRET).
	CallbackSecretVersion(ctx context.Context, owner string) (connector.SecretVersion, error)
	RotateCallbackSecret(ctx context.Context, owner string, now time.Time, overlap time.Duration) (connector.SecretVersion, error)

	// PutMessage stores an event that is not a job's (hook.test).
	PutMessage(ctx context.Context, m *connector.Message) error
	// RecordMessageAttempt appends a to the message's delivery log and
	// indexes it for the owner.
	RecordMessageAttempt(ctx context.Context, m *connector.Message, a *connector.DeliveryAttempt) error
	// DeliveryAttempts returns a job's delivery attempts, oldest first;
	// none (and no error) for a job that has none.
	DeliveryAttempts(ctx context.Context, jobID string) ([]*connector.DeliveryAttempt, error)
	// ListDeliveries pages through owner's deliveries by first attempt,
	// newest first.
	ListDeliveries(ctx context.Context, owner string, f connector.DeliveryFilter) (*connector.DeliveryPage, error)
}

// DedupeIndex is the content dedupe index as a dry run reads it
// (redisstore.Dedupe).
type DedupeIndex interface {
	// Source returns the job recorded for k, else the job holding its
	// claim (which may not have completed), "" when neither.
	Source(ctx context.Context, k connector.DedupeKey) (jobID string, err error)
}

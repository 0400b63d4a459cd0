package mcp

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Backend is what the tools need of imgflow: the REST API's operations,
// each called with the caller's API key. HTTPBackend implements it over the
// API's own handler; a creation service can implement it directly.
type Backend interface {
	// Compress creates a compress job (POST /v1/jobs) and waits up to
	// req.Wait for it; an unfinished job comes back as it stands.
	Compress(ctx context.Context, key string, req Request) (*connector.Job, error)
	// CompressMany creates a batch (POST /v1/batches) and waits up to
	// req.Wait for it, answered with every item's job.
	CompressMany(ctx context.Context, key string, req Request) (*connector.BatchAnswer, error)
	// GetJob is GET /v1/jobs/{id}.
	GetJob(ctx context.Context, key, id string) (*connector.Job, error)
	// ListJobs is GET /v1/jobs, newest first.
	ListJobs(ctx context.Context, key string, filter connector.JobFilter) (*connector.JobList, error)
	// DryRun checks an image as a job of req would see it, charging
	// nothing (POST /v1/jobs/dry-run).
	DryRun(ctx context.Context, key string, req Request) (*connector.ImageCheck, error)
	// Account is GET /v1/account: the key check and the balance.
	Account(ctx context.Context, key string) (*connector.AccountAnswer, error)
	// JobFile is a completed job's compressed bytes (GET /v1/jobs/{id}/file),
	// for previews.
	JobFile(ctx context.Context, key, id string) ([]byte, error)
}

// Request is a job or batch request: its body fields as the catalog names
// them (image_url, image_base64, filename, metadata, dedupe, items, and
// whatever fields the catalog adds), sent on unchanged.
type Request struct {
	Body map[string]any
	// IdempotencyKey is sent as the Idempotency-Key header: the same key
	// and body make one job, charged once, however often they are sent.
	IdempotencyKey string
	// Wait is how long to wait for the result (0 to 25 s).
	Wait time.Duration
}

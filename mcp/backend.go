package mcp

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Backend is what the tools need of imgflow: the API's operations, each
// called in-process with the caller's API key, on the creation service and
// the API's read paths (server.Operations), answered with the domain's
// values and errors (*connector.Error) as they are.
type Backend interface {
	// Compress makes a compress job and waits up to req.Wait for it; an
	// unfinished job comes back as it stands.
	Compress(ctx context.Context, key string, req ImageRequest) (*connector.Job, error)
	// CompressMany makes a batch and waits up to req.Wait for it,
	// answered with every item's job.
	CompressMany(ctx context.Context, key string, req BatchRequest) (*connector.BatchAnswer, error)
	// CompressVariants makes a responsive set of one image (req.Fields
	// carry "variants") and waits up to req.Wait for it, answered with
	// every variant's job.
	CompressVariants(ctx context.Context, key string, req ImageRequest) (*connector.VariantSetAnswer, error)
	// GetJob is the key's job, waited for up to wait while it is
	// unfinished, on the store's finish publication (as REST's ?wait).
	GetJob(ctx context.Context, key, id string, wait time.Duration) (*connector.Job, error)
	// ListJobs is the key's jobs, newest first.
	ListJobs(ctx context.Context, key string, filter connector.JobFilter) (*connector.JobList, error)
	// DryRun checks an image as a job of req would see it, charging
	// nothing.
	DryRun(ctx context.Context, key string, req ImageRequest) (*connector.ImageCheck, error)
	// Account is the key's account as last checked (cached per key, at
	// most seconds old): no call to the compression API per question.
	Account(ctx context.Context, key string) (*connector.Account, error)
	// OpenJobFile opens a completed job's compressed file, for previews.
	OpenJobFile(ctx context.Context, key, id string) (*connector.Blob, error)
}

// ImageRequest is a job request: the catalog's body fields (image_url,
// image_base64, filename, metadata, dedupe, resize, convert, preserve and
// whatever fields the catalog adds), bound as the REST body is, and an
// uploaded image streamed in beside them.
type ImageRequest struct {
	// Fields is the JSON object of the body fields.
	Fields json.RawMessage
	// Upload is the image when it was uploaded (prepare_upload); nil when
	// Fields carry the image.
	Upload *Upload
	// IdempotencyKey makes the same key and fields one job, charged once,
	// however often they are sent.
	IdempotencyKey string
	// Wait is how long to wait for the result (0 to 25 s).
	Wait time.Duration
}

// Upload is an uploaded image, read once from the blob store as the job
// takes it.
type Upload struct {
	io.Reader
	// Size is its length in bytes, known before it is read.
	Size int64
	// Name is the file name the handle carries ("" when none).
	Name string
}

// BatchRequest is a batch request: Fields is the JSON object of the batch
// (its items among them), Uploads the uploaded images of items by index.
type BatchRequest struct {
	Fields         json.RawMessage
	Uploads        map[int]*Upload
	IdempotencyKey string
	Wait           time.Duration
}

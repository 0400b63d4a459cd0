package connector

import (
	"encoding/json"
	"time"
)

// JobStatus is where a compress job is in its life.
type JobStatus string

const (
	StatusQueued     JobStatus = "queued"
	StatusProcessing JobStatus = "processing"
	StatusCompleted  JobStatus = "completed"
	StatusFailed     JobStatus = "failed"
)

// Finished reports whether the job has reached a final state.
func (s JobStatus) Finished() bool { return s == StatusCompleted || s == StatusFailed }

// Valid reports whether s is one of the four statuses.
func (s JobStatus) Valid() bool {
	switch s {
	case StatusQueued, StatusProcessing, StatusCompleted, StatusFailed:
		return true
	}
	return false
}

// InputKind says how the flow handed over the image.
type InputKind string

const (
	InputURL    InputKind = "url"
	InputBase64 InputKind = "base64"
	InputUpload InputKind = "upload"
)

// JobInput describes the image a job compresses. The bytes of base64 and
// upload inputs live in the BlobStore under InputBlobKey(job id).
type JobInput struct {
	Kind     InputKind `json:"kind"`
	URL      string    `json:"url,omitempty"`
	Filename string    `json:"filename,omitempty"`
	Size     int64     `json:"size,omitempty"` // bytes, once known
	MIMEType string    `json:"mime_type,omitempty"`
	// SHA256 is the hex SHA-256 of the input's bytes, taken while they
	// streamed in (dedupe.go); "" until they came.
	SHA256 string `json:"sha256,omitempty"`
	// Type, Width and Height are what the image is (orientation applied),
	// told when the job transforms it (Job.Transform).
	Type   string `json:"type,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// JobResult is what a completed job produced. The compressed bytes live in
// the BlobStore under OutputBlobKey(job id).
type JobResult struct {
	OriginalSize     int64   `json:"original_size"`
	CompressedSize   int64   `json:"compressed_size"`
	CompressionRatio float64 `json:"compression_ratio"`
	// CreditsRemaining is null when the upstream answered with the older
	// listing that omits it.
	CreditsRemaining *int64 `json:"credits_remaining"`
	MIMEType         string `json:"mime_type"`
	Filename         string `json:"filename"`
	UpstreamJobID    string `json:"upstream_job_id,omitempty"`
	// Type, Width and Height are what came out, told when the job
	// transformed the image (Job.Transform): Type is MIMEType again.
	Type   string `json:"type,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	// Quality is the encoder quality a job with a target chose (1–100;
	// for PNG, the palette quantizer's), and Colours a quantized PNG's
	// palette size; absent when the image went losslessly or without a
	// target.
	Quality int `json:"quality,omitempty"`
	Colours int `json:"colours,omitempty"`
	// Score is the SSIMULACRA2 score of the delivered file against the
	// image it encodes (the source transformed as asked, at the file's
	// dimensions), when the target asked for a min_score.
	Score *float64 `json:"score,omitempty"`
	// FileURL and CompressedData are filled when the job is rendered for a
	// caller, never stored.
	FileURL        string `json:"file_url,omitempty"`
	CompressedData string `json:"compressed_data,omitempty"`
}

// JobError is why a job failed.
type JobError struct {
	Code             ErrorCode `json:"code"`
	Message          string    `json:"message"`
	UpstreamStatus   int       `json:"upstream_status,omitempty"`
	CreditsRemaining *int64    `json:"credits_remaining,omitempty"`
	Retryable        bool      `json:"retryable"`
	// Details name what decided, when the code has more to say
	// (target_unreachable: the smallest size reached).
	Details []FieldError `json:"details,omitempty"`
}

// JobErrorFrom turns any error into the JobError a caller sees.
func JobErrorFrom(err error) *JobError {
	e := AsError(err)
	je := &JobError{
		Code:             e.Code,
		Message:          e.Message,
		UpstreamStatus:   e.UpstreamStatus,
		CreditsRemaining: e.CreditsRemaining,
		Retryable:        e.Retryable,
	}
	if e.Code == ETARGETUNREACHABLE {
		je.Details = e.Details
	}
	return je
}

// DeliveryStatus is the state of a callback or hook delivery.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliveryState is what a caller sees of a job's callback delivery.
type DeliveryState struct {
	Status      DeliveryStatus `json:"status"`
	Attempts    int            `json:"attempts"`
	LastStatus  int            `json:"last_status,omitempty"`
	LastError   string         `json:"last_error,omitempty"`
	DeliveredAt *time.Time     `json:"delivered_at,omitempty"`
}

// Job is one compression of one image for one API key.
type Job struct {
	ID        string    `json:"id"`
	Status    JobStatus `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// StartedAt is when a worker first picked the job up.
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	Input      JobInput        `json:"input"`
	Result     *JobResult      `json:"result,omitempty"`
	Error      *JobError       `json:"error,omitempty"`
	Callback   *DeliveryState  `json:"callback,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// Runs counts the runs of the job's compress task that started (the
	// run number of the latest); "attempts" in the API, as it always was.
	Runs int `json:"attempts"`
	// UpstreamCalls counts calls of the compression API made for this job,
	// answered or not (from its call record).
	UpstreamCalls int `json:"upstream_calls"`
	// ChargeUncertain is set when an earlier call of the compression API
	// for this job never got an answer (a worker died mid-call, or the call
	// timed out) and the job was compressed again: that earlier call may
	// have been charged too, so the account may show one credit more than
	// the job's result.
	ChargeUncertain bool `json:"charge_uncertain"`
	// Dedupe is the request's "dedupe" field when it sent one: false makes
	// this job call the compression API even when the same image was
	// compressed before (dedupe.go).
	Dedupe *bool `json:"dedupe,omitempty"`
	// DeduplicatedFrom is the completed job of the same key, image and
	// options whose result this job took, without calling the compression
	// API (no credit charged); "" for a job that was compressed.
	DeduplicatedFrom string `json:"deduplicated_from,omitempty"`
	// BatchID and BatchIndex place a batch's item: the batch and the
	// item's position in the request (batch.go).
	BatchID    string `json:"batch_id,omitempty"`
	BatchIndex *int   `json:"index,omitempty"`
	// Variant is the id of the variant a responsive set's item makes
	// (Variant.ID); "" for a job that is not one.
	Variant string `json:"variant,omitempty"`
	// Transform is the request's resize, convert and preserve, shown at
	// the job's top level as they were sent (transform.go).
	Transform

	// Owner is the hash of the key that made the job (KeyHash); jobs of
	// another key are not found.
	Owner string `json:"-"`
	// SealedKey is the compression API key encrypted at rest, for the worker.
	SealedKey []byte `json:"-"`
	// CallbackURL is where the finished job is POSTed; it may carry a
	// signature in its query string, so it is never shown back.
	CallbackURL string `json:"-"`
	// Unplaced: the job was made without a cap on its key's unfinished
	// jobs, so it holds no in-flight place for its end to free.
	Unplaced bool `json:"-"`
}

// Deduplicates reports whether the job may complete from an earlier job's
// result: it did not turn dedupe off.
func (j *Job) Deduplicates() bool { return j.Dedupe == nil || *j.Dedupe }

// Event types sent to callbacks and hooks.
const (
	EventJobCompleted = "job.completed"
	EventJobFailed    = "job.failed"
	EventJobFinished  = "job.finished" // subscription filter matching both
)

// EventType is the event a finished job emits.
func (j *Job) EventType() string {
	if j.Status == StatusFailed {
		return EventJobFailed
	}
	return EventJobCompleted
}

// InputBlobKey and OutputBlobKey name a job's blobs in the BlobStore.
func InputBlobKey(jobID string) string  { return "in:" + jobID }
func OutputBlobKey(jobID string) string { return "out:" + jobID }

// Event is the body POSTed to callbacks and hooks: the finished job as a
// caller sees it (with file_url, never the bytes).
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      *Job      `json:"data"`
}

package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrJobExists is wrapped by a store's making of a job whose id is taken:
// another request made that job (the same planned id of an
// Idempotency-Key), and it is the answer, never to be taken back by the
// request that failed to make it.
var ErrJobExists = errors.New("a job with this id exists already")

// JobStore keeps job records. Implementations return ENOTFOUND for an
// unknown or expired id.
type JobStore interface {
	Create(ctx context.Context, job *Job) error
	Get(ctx context.Context, id string) (*Job, error)
	// Update applies fn to the current record atomically (optimistic
	// locking) and stores the result; fn may be called more than once. When
	// the job moves to a finished status, waiters (Wait, Watch) are woken.
	Update(ctx context.Context, id string, fn func(*Job) error) (*Job, error)
	// ListJobs returns owner's jobs newest first. The cursor is the last id of
	// the previous page; ids are time-ordered (UUIDv7) so a page neither skips
	// nor repeats a job while new ones arrive.
	List(ctx context.Context, owner string, filter JobFilter) (*JobPage, error)
	// Wait blocks until the job is finished or ctx ends, then returns the
	// job as it is. It is event-driven (pub/sub), not a sleep loop.
	Wait(ctx context.Context, id string) (*Job, error)
	// Watch starts a wait on job id's finish before the caller queues
	// the job, so that its Wait needs no read of the job: whatever finishes
	// it afterwards is seen. Stop must follow.
	Watch(ctx context.Context, id string) (JobWatch, error)
	// Delete forgets a job that never ran, listing entry included.
	Delete(ctx context.Context, id string) error
}

// HooksHint is what a store could tell about an owner's hook subscriptions
// in passing (JobRuns.Finish).
type HooksHint int

const (
	HooksUnknown HooksHint = iota // not asked, or could not tell: list them
	HooksNone                     // the owner had no hook
	HooksSome                     // the owner had at least one hook: list them
)

// JobWatch is a wait on one job's finish begun by JobStore.Watch.
type JobWatch interface {
	// Wait blocks until the job is finished or ctx ends and returns the job
	// as JobStore.Wait does. last is the job as the caller made it, returned
	// (with ctx's error) when ctx ends and a fresh read fails.
	Wait(ctx context.Context, last *Job) (*Job, error)
	// Stop ends the watch.
	Stop()
}

// JobFilter selects a page of jobs.
type JobFilter struct {
	Status JobStatus // "" for all
	Limit  int       // 1..100
	Cursor string    // id of the last job of the previous page, "" for the first page
}

// JobPage is one page of ListJobs.
type JobPage struct {
	Jobs       []*Job
	NextCursor string // "" on the last page
}

// BlobStore keeps image bytes: inputs until their job ends, outputs for the
// result TTL. Bytes stream both ways, so an implementation holds at most a
// bounded chunk of a blob in memory (Redis: 1 MiB ranges; S3: the object
// stream). Keys come from InputBlobKey and OutputBlobKey.
type BlobStore interface {
	// Put stores the size bytes read from r under key for ttl (ttl <= 0:
	// no expiry), replacing an earlier blob. size -1 means unknown; a reader
	// that ends before or after size bytes is an error and stores nothing.
	// Readers see the old blob or the whole new one, never a part.
	Put(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error
	// Open returns the blob for reading; the caller closes it. ENOTFOUND
	// when it is gone.
	Open(ctx context.Context, key string) (*Blob, error)
	// Delete removes the blob; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

// Blob is a stored blob opened for reading.
type Blob struct {
	io.ReadCloser
	Size int64 // in bytes
}

// ReadBlob reads a whole blob into one slice: for tests and small blobs.
// The API and the worker stream blobs instead (GET .../file and
// ?include=data, the upload sent to the compression API), since holding a
// 10 MiB image beside the store's own reads of it doubles its cost.
func ReadBlob(ctx context.Context, bs BlobStore, key string) ([]byte, error) {
	b, err := bs.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data := make([]byte, b.Size)
	if _, err := io.ReadFull(b, data); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", key, err)
	}
	return data, nil
}

// IdempotencyRecord is what an Idempotency-Key maps to.
// The record's ids are of the key's kind: a job's, or a batch's for a key
// of POST /v1/batches (the service scopes those apart, "batch:").
type IdempotencyRecord struct {
	Fingerprint string `json:"fingerprint"` // hash of the request body and its parameters
	// MadeID is the job or batch the first request made; "" while it is in
	// flight.
	MadeID string `json:"job_id"`
	// PlannedID is the id the request holding the key makes its job or
	// batch under, so that a request taking over from one that died finds
	// what it made; finding nothing, it names its own.
	PlannedID string `json:"planned_job_id,omitempty"`
}

// Account is the compression API's key check (/validate) as imgflow sees it.
type Account struct {
	Valid            bool   `json:"valid"`
	UserID           string `json:"user_id,omitempty"`
	SubscriptionType string `json:"subscription_type,omitempty"`
	CreditsRemaining int64  `json:"credits_remaining"`
	MaxImageSize     int64  `json:"max_image_size,omitempty"`
	// CanCompress is the older listing's optional field; nil when absent.
	CanCompress *bool `json:"can_compress,omitempty"`
}

// Compressed is a successful compression by the upstream API.
type Compressed struct {
	UpstreamJobID    string
	Data             Bytes // the compressed image
	OriginalSize     int64
	CompressedSize   int64
	CompressionRatio float64
	CreditsRemaining *int64 // nil when the upstream omitted it (older listing)
	// IdempotencyHonoured: the answer echoed the call's Idempotency-Key, so
	// the upstream charges a key once (fixtures/upstream/README.md).
	IdempotencyHonoured bool
	// Replayed: the upstream answered from an earlier call with the key.
	Replayed bool
	// Width and Height of the result, when the job transformed the image
	// (worker/transform.go); 0 otherwise.
	Width, Height int
	// Quality and Colours: how a job with a target encoded the image it
	// sent (worker/fit.go); 0 otherwise.
	Quality, Colours int
	// Score: the delivered file's SSIMULACRA2 score when the target has a
	// min_score (worker/fit.go); nil otherwise.
	Score *float64
}

// Compressor is the compression API (connector/upstream implements it).
// Errors are *Error: 400 -> EINVALID/EFORMAT, 401 -> EUNAUTHORIZED, 413 ->
// ETOOLARGE, 429 -> ENOCREDITS (with CreditsRemaining), anything else ->
// EUPSTREAM with Retryable set; UpstreamStatus and the upstream's text kept.
//
// idempotencyKey, when not "", goes out as the Idempotency-Key header: the
// same for every call of one job, so an upstream that honours it charges
// the job once however often it is called.
type Compressor interface {
	Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*Compressed, error)
	// Validate checks a key. An invalid key is EUNAUTHORIZED, whichever way
	// the upstream says it (401, 400, or 200 with valid:false).
	Validate(ctx context.Context, apiKey string) (*Account, error)
	Health(ctx context.Context) error
}

// Image is an image fetched or decoded from a flow's input.
type Image struct {
	Data     Bytes
	MIMEType string // sniffed from the bytes
	Filename string // from the URL path or Content-Disposition, may be ""
	SHA256   string // hex SHA-256 of Data, taken while it was read
}

// ImageFetcher gets an image from a URL through the SSRF guard, with the
// MaxImageSize cap. Errors: EURLREFUSED, EFETCH, ETOOLARGE, EFORMAT.
type ImageFetcher interface {
	FetchImage(ctx context.Context, url string) (*Image, error)
}

// Hook is a REST hook subscription: events of Owner whose type matches
// are POSTed to TargetURL, signed with the hook's secret.
type Hook struct {
	ID        string `json:"id"`
	TargetURL string `json:"target_url"`
	// Event is job.completed, job.failed, job.finished (both),
	// hook.disabled or account.credits_low.
	Event string `json:"event"`
	// Threshold is the balance at or below which an account.credits_low
	// hook fires; nil for other events.
	Threshold *int64    `json:"threshold,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Status is enabled or disabled; Disabled says the same, for older
	// clients. DisabledReason (gone, failing) and DisabledAt say why and
	// when deliveries stopped.
	Status         string     `json:"status"`
	Disabled       bool       `json:"disabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	Owner          string     `json:"-"`
	// SecretVersion numbers the hook's signing secret (0 at creation); a
	// rotation raises it. Until PreviousSecretUntil deliveries are signed
	// with version SecretVersion-1 as well.
	SecretVersion       int        `json:"-"`
	PreviousSecretUntil *time.Time `json:"-"`
}

// Hook statuses.
const (
	HookEnabled  = "enabled"
	HookDisabled = "disabled"
)

// DefaultCreditsThreshold is an account.credits_low hook's threshold when
// the subscription names none.
const DefaultCreditsThreshold = 50

// Matches reports whether an event of this type goes to the hook: it is
// enabled and Subscribed to the type.
func (h *Hook) Matches(eventType string) bool {
	return !h.Disabled && h.Subscribed(eventType)
}

// Subscribed reports whether the hook asked for events of this type,
// enabled or not: job.finished matches both job events, every other
// subscription its own type only.
func (h *Hook) Subscribed(eventType string) bool {
	if h.Event == EventJobFinished {
		return eventType == EventJobCompleted || eventType == EventJobFailed
	}
	return h.Event == eventType
}

// SecretVersion is the version of an owner's callback secret and, until
// PreviousUntil, that the previous version still signs.
type SecretVersion struct {
	Version       int
	PreviousUntil time.Time
}

// SigningVersions are the secret versions a delivery is signed with at
// now: the current one, and the previous one during the overlap.
func SigningVersions(current int, previousUntil *time.Time, now time.Time) []int {
	if current > 0 && previousUntil != nil && now.Before(*previousUntil) {
		return []int{current, current - 1}
	}
	return []int{current}
}

// Queue hands work to the workers.
type Queue interface {
	// EnqueueCompress queues the job's compression; the task id is the job
	// id, so a second enqueue of the same job is a no-op.
	EnqueueCompress(ctx context.Context, jobID, owner string) error
	// EnqueueDelivery queues one delivery; its id makes it unique. A
	// redelivery (d.Redeliver) is one attempt, at most one queued at a time
	// per delivery.
	EnqueueDelivery(ctx context.Context, d Delivery) error
}

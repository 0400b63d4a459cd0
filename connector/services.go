package connector

import (
	"context"
	"io"
	"time"
)

// JobStore keeps job records. Implementations return ENOTFOUND for an
// unknown or expired id.
type JobStore interface {
	CreateJob(ctx context.Context, job *Job) error
	GetJob(ctx context.Context, id string) (*Job, error)
	// UpdateJob applies fn to the current record atomically (optimistic
	// locking) and stores the result; fn may be called more than once. When
	// the job moves to a finished status, waiters (WaitJob) are woken.
	UpdateJob(ctx context.Context, id string, fn func(*Job) error) (*Job, error)
	// ListJobs returns owner's jobs newest first. The cursor is the last id of
	// the previous page; ids are time-ordered (UUIDv7) so a page neither skips
	// nor repeats a job while new ones arrive.
	ListJobs(ctx context.Context, owner string, filter JobFilter) (*JobPage, error)
	// WaitJob blocks until the job is finished or ctx ends, then returns the
	// job as it is. It is event-driven (pub/sub), not a sleep loop.
	WaitJob(ctx context.Context, id string) (*Job, error)
	// DeleteJob forgets a job that never ran, listing entry included.
	DeleteJob(ctx context.Context, id string) error
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
// result TTL. Get returns ENOTFOUND when the blob is gone.
type BlobStore interface {
	PutBlob(ctx context.Context, key string, data []byte, ttl time.Duration) error
	GetBlob(ctx context.Context, key string) ([]byte, error)
	DeleteBlob(ctx context.Context, key string) error
}

// IdempotencyRecord is what an Idempotency-Key maps to.
type IdempotencyRecord struct {
	Fingerprint string `json:"fingerprint"` // hash of the request body and its parameters
	JobID       string `json:"job_id"`      // "" while the first request is in flight
}

// IdempotencyStore remembers Idempotency-Keys per owner for 24 hours.
type IdempotencyStore interface {
	// ReserveIdempotencyKey claims key for a request with this fingerprint.
	// reserved is true when the caller holds it now; otherwise rec is the
	// earlier request's record.
	ReserveIdempotencyKey(ctx context.Context, owner, key, fingerprint string) (rec *IdempotencyRecord, reserved bool, err error)
	// CompleteIdempotencyKey records the job the request created.
	CompleteIdempotencyKey(ctx context.Context, owner, key, jobID string) error
	// ReleaseIdempotencyKey forgets a reservation whose request failed, so a
	// retry can go through.
	ReleaseIdempotencyKey(ctx context.Context, owner, key string) error
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

// AccountCache keeps recent key checks briefly, per key hash.
type AccountCache interface {
	CachedAccount(ctx context.Context, owner string) (*Account, bool, error)
	CacheAccount(ctx context.Context, owner string, acct *Account, ttl time.Duration) error
}

// Compressed is a successful compression by the upstream API.
type Compressed struct {
	UpstreamJobID    string
	Data             []byte
	OriginalSize     int64
	CompressedSize   int64
	CompressionRatio float64
	CreditsRemaining *int64 // nil when the upstream omitted it (older listing)
}

// Compressor is the compression API (connector/upstream implements it).
// Errors are *Error: 400 -> EINVALID/EFORMAT, 401 -> EUNAUTHORIZED, 413 ->
// ETOOLARGE, 429 -> ENOCREDITS (with CreditsRemaining), anything else ->
// EUPSTREAM with Retryable set; UpstreamStatus and the upstream's text kept.
type Compressor interface {
	Compress(ctx context.Context, apiKey string, image io.Reader, filename string) (*Compressed, error)
	// Validate checks a key. An invalid key is EUNAUTHORIZED, whichever way
	// the upstream says it (401, 400, or 200 with valid:false).
	Validate(ctx context.Context, apiKey string) (*Account, error)
	Health(ctx context.Context) error
}

// Image is an image fetched or decoded from a flow's input.
type Image struct {
	Data     []byte
	MIMEType string // sniffed from the bytes
	Filename string // from the URL path or Content-Disposition, may be ""
}

// ImageFetcher gets an image from a URL through the SSRF guard, with the
// MaxImageSize cap. Errors: EURLREFUSED, EFETCH, ETOOLARGE, EFORMAT.
type ImageFetcher interface {
	FetchImage(ctx context.Context, url string) (*Image, error)
}

// Hook is a REST hook subscription: finished jobs of Owner whose event
// matches are POSTed to TargetURL, signed with the hook's secret.
type Hook struct {
	ID        string    `json:"id"`
	TargetURL string    `json:"target_url"`
	Event     string    `json:"event"` // job.completed, job.failed or job.finished
	CreatedAt time.Time `json:"created_at"`
	Disabled  bool      `json:"disabled"` // set when a delivery got 410 Gone
	Owner     string    `json:"-"`
}

// Matches reports whether an event of this type goes to the hook.
func (h *Hook) Matches(eventType string) bool {
	return !h.Disabled && (h.Event == eventType || h.Event == EventJobFinished)
}

// HookStore keeps hook subscriptions per owner.
type HookStore interface {
	CreateHook(ctx context.Context, h *Hook) error
	GetHook(ctx context.Context, id string) (*Hook, error)
	ListHooks(ctx context.Context, owner string) ([]*Hook, error)
	DeleteHook(ctx context.Context, owner, id string) error // ENOTFOUND if not owner's
	DisableHook(ctx context.Context, id string) error
}

// Delivery is one event for one target: a job's callback, or one hook.
type Delivery struct {
	ID     string `json:"id"`      // webhook-id: stable across retries
	JobID  string `json:"job_id"`  // the job whose event this is
	HookID string `json:"hook_id"` // "" for the job's own callback_url
	Event  string `json:"event"`
}

// Queue hands work to the workers.
type Queue interface {
	// EnqueueCompress queues the job's compression; the task id is the job
	// id, so a second enqueue of the same job is a no-op.
	EnqueueCompress(ctx context.Context, jobID string) error
	// EnqueueDelivery queues one delivery; its id makes it unique.
	EnqueueDelivery(ctx context.Context, d Delivery) error
}

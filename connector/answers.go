package connector

// The JSON of the API's answers and messages that are not a job or a batch
// as such: what the server, the worker and the MCP server send and read, and
// what the catalog's samples (package catalog) show.

// AccountAnswer is the JSON of GET /v1/account: the compression API's key
// check plus the key's webhook signing secret.
type AccountAnswer struct {
	Account
	WebhookSecret string `json:"webhook_secret"`
}

// HookAnswer is the JSON of a hook subscription; Secret is shown only when
// the hook is created.
type HookAnswer struct {
	Hook
	Secret string `json:"secret,omitempty"`
}

// DeliveryBody is what imgflow POSTs to a callback_url or hook target.
type DeliveryBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      *Job   `json:"data"`
}

// JobList is the JSON of GET /v1/jobs.
type JobList struct {
	Jobs       []*Job `json:"jobs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// RedeliveryAnswer is the JSON of a redelivery request (202).
type RedeliveryAnswer struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

// IncludeJobs is the include value that makes POST /v1/batches and GET
// /v1/batches/{id} answer the batch with its items' jobs (BatchAnswer).
const IncludeJobs = "jobs"

// BatchAnswer is a batch with every item's job in index order, each as GET
// /v1/jobs/{id} shows it: the answer with ?include=jobs.
type BatchAnswer struct {
	*Batch
	Jobs []*Job `json:"jobs"`
}

// ImageCheck is the answer of a dry run (POST /v1/jobs?dry_run=1): what a
// job of the same request would cost, and the image as its bytes tell.
type ImageCheck struct {
	// WouldCharge is the credits the job would cost: 0 when it would
	// complete from an identical job's result (DeduplicatedFrom).
	WouldCharge      int             `json:"would_charge"`
	DeduplicatedFrom string          `json:"deduplicated_from,omitempty"`
	CreditsRemaining int64           `json:"credits_remaining"`
	Input            ImageCheckInput `json:"input"`
	// Output is what the job would make of the image when it transforms
	// it (resize, convert, HEIC input); nil otherwise.
	Output *ImageCheckOutput `json:"output,omitempty"`
	// Target says whether a job with a target would reach it (nil
	// without one): unreachable, it would fail target_unreachable and
	// charge nothing (WouldCharge 0).
	Target *TargetCheck `json:"target,omitempty"`
	// Variants is the check of each member of a responsive set, in the
	// request's order (nil without variants); WouldCharge is their sum.
	Variants []VariantCheck `json:"variants,omitempty"`
}

// VariantCheck is the dry run's look at one variant of a set: what it
// would make and cost, deduplicated and priced on its own as the set's
// jobs are.
type VariantCheck struct {
	ID               string            `json:"id"`
	WouldCharge      int               `json:"would_charge"`
	DeduplicatedFrom string            `json:"deduplicated_from,omitempty"`
	Output           *ImageCheckOutput `json:"output,omitempty"`
	Target           *TargetCheck      `json:"target,omitempty"`
}

// TargetCheck is the dry run's look at a target.
type TargetCheck struct {
	MaxBytes  int64 `json:"max_bytes"`
	Reachable bool  `json:"reachable"`
	// SmallestBytes is the smallest the image came to in the check (at
	// the lowest quality, and the smallest size when resizing is allowed).
	SmallestBytes int64 `json:"smallest_bytes"`
	// Score, with a min_score: the SSIMULACRA2 score of the file the search
	// found, or the best it reached when the floor is out of reach.
	Score *float64 `json:"score,omitempty"`
}

// ImageCheckInput is the image a dry run looked at.
type ImageCheckInput struct {
	Type   string `json:"type"` // media type sniffed from the bytes
	Size   int64  `json:"size"` // bytes
	Width  int    `json:"width"`
	Height int    `json:"height"`
	SHA256 string `json:"sha256"` // hex; what dedupe compares
}

// CreditsLowData is the data of an account.credits_low event: the balance
// the job's answer reported, the hook's threshold, and that job.
type CreditsLowData struct {
	CreditsRemaining int64  `json:"credits_remaining"`
	Threshold        int64  `json:"threshold"`
	JobID            string `json:"job_id"`
}

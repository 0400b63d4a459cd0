package connector

import (
	"encoding/json"
	"time"
)

// The catalog describes, once, every action and trigger that the automation
// platforms offer for imgflow: what the user fills in, what comes out, and a
// realistic sample. The definitions package renders it for Zapier, n8n, Make,
// Power Automate and OpenAPI, so that no platform's file drifts from the API.

// FieldType is the kind of value an input or output field holds, in terms
// every platform can map: string, text (multi-line), integer, number,
// boolean, datetime, file (a URL a platform hands over for a file),
// object (free key/value data) and list (records, each described by the
// field's own Fields: Zapier line items, Make's array, an array in Swagger,
// n8n's input items).
type FieldType string

const (
	FieldString   FieldType = "string"
	FieldText     FieldType = "text"
	FieldInteger  FieldType = "integer"
	FieldNumber   FieldType = "number"
	FieldBoolean  FieldType = "boolean"
	FieldDateTime FieldType = "datetime"
	FieldFile     FieldType = "file"
	FieldObject   FieldType = "object"
	FieldList     FieldType = "list"
)

// Field is one input a user fills in for an action, a trigger or the
// connection. Key is the name the API takes (a JSON body field, a query
// parameter or a path parameter, as In says).
type Field struct {
	Key      string
	Label    string
	Help     string
	Type     FieldType
	Required bool
	// In says where the value goes: "body" (the default), "query" or "path".
	In string
	// Choices restricts the value to a list; Default is preselected.
	Choices []string
	Default string
	// Example is a realistic value, shown as a placeholder.
	Example string
	// Fields describe each record of a FieldList field; their In is unused.
	Fields []Field
}

// Where a field's value goes in the request.
const (
	InBody  = "body"
	InQuery = "query"
	InPath  = "path"
)

// OutputField is one value an operation returns. Key is its path in the
// answer, dotted for nested values ("result.compressed_size").
type OutputField struct {
	Key   string
	Label string
	Help  string
	Type  FieldType
	// Fields describe each record of a FieldList output, keyed inside
	// the record.
	Fields []OutputField
}

// OperationKind says how a platform runs an operation.
type OperationKind string

const (
	// KindAction is a plain request and its answer (waits inline if needed).
	KindAction OperationKind = "action"
	// KindCallbackAction creates a job with a platform-supplied callback_url
	// and resumes when imgflow POSTs the finished job there.
	KindCallbackAction OperationKind = "callback_action"
	// KindPollingTrigger lists recent items; the platform dedupes on "id".
	KindPollingTrigger OperationKind = "polling_trigger"
	// KindHookTrigger subscribes a platform URL with POST /v1/hooks and
	// receives {"type","timestamp","data"} deliveries.
	KindHookTrigger OperationKind = "hook_trigger"
)

// Operation is one action or trigger.
type Operation struct {
	Key         string // snake_case, unique in the catalog
	Noun        string // what it is about: "Job", "Account"
	Label       string // "Compress Image"
	Description string // one sentence, shown under the label
	Help        string // longer guidance: limits, what happens on failure
	Kind        OperationKind
	Method      string // HTTP method
	Path        string // path with {placeholders}, relative to the base URL
	// Query holds fixed query parameters (like wait=25).
	Query   map[string]string
	Inputs  []Field
	Outputs []OutputField
	// Sample is a realistic answer (for triggers: one item), as it would be
	// JSON-encoded by the server.
	Sample any
	// File, when set, says that a completed job in the answer carries the
	// compressed image, which the platforms hand on as their own file type
	// (a Zapier file, Make's fileName/data pair, Power Automate file
	// content, n8n binary data) next to result.file_url.
	File *FileOutput
	// Upload, when set, says the operation also takes the image as a file
	// (a multipart part or file content) instead of a URL or base64.
	Upload *FileInput
	// HookEvents, for a hook trigger, are the events its POST /v1/hooks
	// subscribes: one, always sent as the body's event; or several, one of
	// which the trigger's required `event` input picks (its choices).
	HookEvents []string
}

// FileOutput describes the compressed file of a job-returning operation:
// the name platforms give it and where its parts are in the answer.
type FileOutput struct {
	Key   string // the output a platform adds: "file"
	Label string
	Help  string
	// Path gives the bytes with the key (never a URL that carries it), for
	// as long as the result is stored, even after file_url has expired.
	Path string
	// IDKey, NameKey, TypeKey and SizeKey are output keys of the job: its
	// id (Path's {id}), the file's name, MIME type and size.
	IDKey, NameKey, TypeKey, SizeKey string
	// DataKey is the output holding the bytes in base64 when DataQuery is
	// added to the request (platforms whose file type is inline bytes).
	DataKey   string
	DataQuery map[string]string
}

// FileInput describes an image handed over as a file.
type FileInput struct {
	Key   string // the multipart part's field name: "file"
	Label string
	Help  string
	// NameKey is the input field that names the file (its filename).
	NameKey string
}

// Auth is how a platform connects: the key field, the request that tests
// it, and the label the connection gets from the test's answer.
type Auth struct {
	Fields []Field
	// Header carries the key (also accepted: Authorization: Bearer KEY).
	Header     string
	TestMethod string
	TestPath   string
	// ConnectionLabel is built from fields of the test answer: each
	// {{field}} is replaced.
	ConnectionLabel string
	TestOutputs     []OutputField
	TestSample      *AccountAnswer
}

// Hook subscription endpoints (used by hook triggers).
const (
	HooksPath = "/v1/hooks"
	HookPath  = "/v1/hooks/{id}"
)

// Catalog is everything the platforms offer for imgflow.
type Catalog struct {
	Name        string
	Description string
	Auth        Auth
	Actions     []Operation
	Triggers    []Operation
	// Manage holds operations for people and tools rather than flows (the
	// web console's delivery log and redelivery): the API serves them and
	// OpenAPI lists them, the platforms' files leave them out.
	Manage []Operation
}

// Operations returns the actions followed by the triggers.
func (c *Catalog) Operations() []Operation {
	ops := make([]Operation, 0, len(c.Actions)+len(c.Triggers))
	ops = append(ops, c.Actions...)
	return append(ops, c.Triggers...)
}

// Operation returns the operation with this key, or nil; Manage
// operations included.
func (c *Catalog) Operation(key string) *Operation {
	for _, op := range append(c.Operations(), c.Manage...) {
		if op.Key == key {
			return &op
		}
	}
	return nil
}

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

// CompressedFile is the file output of every operation that returns jobs:
// the completed job's compressed image.
func CompressedFile() *FileOutput {
	return &FileOutput{Key: "file", Label: "Compressed File",
		Help: "The compressed image as a file, with its name and type: map it into any step that takes a file (email attachment, Drive, S3). Empty for failed jobs.",
		Path: "/v1/jobs/{id}/file", IDKey: "id", NameKey: "result.filename", TypeKey: "result.mime_type",
		SizeKey: "result.compressed_size", DataKey: "result.compressed_data",
		DataQuery: map[string]string{"include": "data"}}
}

// ImageUpload is the file input of the compress actions.
func ImageUpload() *FileInput {
	return &FileInput{Key: "file", Label: "Image File", NameKey: "filename",
		Help: "The image as a file from an earlier step (up to 10 MiB). Give this, Image URL or Image (Base64): one of them."}
}

// DefaultWait is how long Compress Image waits for the result: under the 30 s
// that Zapier gives an action.
const DefaultWait = 25

// jobRequestFields are the body fields of POST /v1/jobs that a user fills in.
func jobRequestFields() []Field {
	return append([]Field{
		{Key: "image_url", Label: "Image URL", Type: FieldFile,
			Help:    "Public URL of the PNG, JPEG, WebP or AVIF image to compress (up to 10 MiB). Give this or Image (Base64), not both. A file from an earlier step works: platforms pass files as URLs.",
			Example: "https://images.example.com/photos/team-offsite.jpg"},
		{Key: "image_base64", Label: "Image (Base64)", Type: FieldText,
			Help:    "The image itself, base64-encoded; a data: URI is accepted too. Use it when the image has no URL. Give this or Image URL, not both.",
			Example: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="},
		{Key: "filename", Label: "File Name", Type: FieldString,
			Help:    "Name for the compressed file, such as team-offsite.jpg. Defaults to the name in the URL.",
			Example: "team-offsite.jpg"},
		{Key: "metadata", Label: "Metadata", Type: FieldObject,
			Help:    "Your own key/value pairs (such as a record id), echoed back unchanged on the job so later steps can match it.",
			Example: `{"record_id":"rec_8812"}`},
		dedupeField(),
	}, transformFields()...)
}

// jobOutputs are the fields of a job as every job-returning operation
// answers them.
func jobOutputs() []OutputField {
	return append([]OutputField{
		{Key: "id", Label: "Job ID", Type: FieldString, Help: "Identifier of the job; use it with Get Job."},
		{Key: "status", Label: "Status", Type: FieldString, Help: "queued, processing, completed or failed."},
		{Key: "created_at", Label: "Created At", Type: FieldDateTime, Help: "When the job was created (RFC 3339, UTC)."},
		{Key: "updated_at", Label: "Updated At", Type: FieldDateTime, Help: "When the job last changed."},
		{Key: "started_at", Label: "Started At", Type: FieldDateTime, Help: "When a worker first picked the job up."},
		{Key: "finished_at", Label: "Finished At", Type: FieldDateTime, Help: "When the job completed or failed."},
		{Key: "input.kind", Label: "Input Kind", Type: FieldString, Help: "How the image was handed over: url, base64 or upload."},
		{Key: "input.url", Label: "Input URL", Type: FieldString, Help: "The image URL the job fetched, for url inputs."},
		{Key: "input.filename", Label: "Input File Name", Type: FieldString, Help: "File name of the original image."},
		{Key: "input.size", Label: "Input Size (bytes)", Type: FieldInteger, Help: "Size of the original image in bytes."},
		{Key: "input.mime_type", Label: "Input MIME Type", Type: FieldString, Help: "Type sniffed from the original bytes, such as image/jpeg."},
		{Key: "input.sha256", Label: "Input SHA-256", Type: FieldString, Help: "SHA-256 of the original bytes (hex): the same image gives the same value, whatever its URL or encoding."},
		{Key: "deduplicated_from", Label: "Deduplicated From", Type: FieldString, Help: "Set when this key had compressed the same image before: the job whose result this one reused, with no credit charged."},
		{Key: "result.original_size", Label: "Original Size (bytes)", Type: FieldInteger, Help: "Size before compression, in bytes."},
		{Key: "result.compressed_size", Label: "Compressed Size (bytes)", Type: FieldInteger, Help: "Size after compression, in bytes."},
		{Key: "result.compression_ratio", Label: "Compression Ratio", Type: FieldNumber, Help: "Percentage saved: 100 * (1 - compressed / original)."},
		{Key: "result.credits_remaining", Label: "Credits Remaining", Type: FieldInteger, Help: "Credits left on the account after this job (one credit per job)."},
		{Key: "result.mime_type", Label: "Result MIME Type", Type: FieldString, Help: "Type of the compressed file."},
		{Key: "result.filename", Label: "Result File Name", Type: FieldString, Help: "File name of the compressed image."},
		{Key: "result.file_url", Label: "Compressed File URL", Type: FieldFile, Help: "Signed, expiring URL of the compressed image; later steps can download it without the key."},
		{Key: "error.code", Label: "Error Code", Type: FieldString, Help: "Machine code of a failed job, such as insufficient_credits or fetch_failed."},
		{Key: "error.message", Label: "Error Message", Type: FieldString, Help: "Why the job failed, in words."},
		{Key: "error.upstream_status", Label: "Upstream Status", Type: FieldInteger, Help: "HTTP status the compression API answered, when it answered."},
		{Key: "error.retryable", Label: "Retryable", Type: FieldBoolean, Help: "True when trying again later may succeed."},
		{Key: "callback.status", Label: "Callback Status", Type: FieldString, Help: "Delivery of the callback: pending, delivered or failed."},
		{Key: "callback.attempts", Label: "Callback Attempts", Type: FieldInteger, Help: "How many times the callback was POSTed."},
		{Key: "metadata", Label: "Metadata", Type: FieldObject, Help: "The metadata sent with the job, unchanged."},
		{Key: "attempts", Label: "Attempts", Type: FieldInteger, Help: "Worker attempts at compressing the image."},
		{Key: "upstream_calls", Label: "Upstream Calls", Type: FieldInteger, Help: "Calls of the compression API made for this job; usually 1, more after upstream errors (which cost nothing)."},
		{Key: "charge_uncertain", Label: "Charge Uncertain", Type: FieldBoolean, Help: "True when an earlier call for this job got no answer (a worker died or the call timed out) and the image was compressed again: that call may also have cost a credit."},
	}, transformOutputs()...)
}

// accountOutputs are the fields of GET /v1/account.
func accountOutputs() []OutputField {
	return []OutputField{
		{Key: "valid", Label: "Valid", Type: FieldBoolean, Help: "True when the key is accepted."},
		{Key: "user_id", Label: "User ID", Type: FieldString, Help: "Account the key belongs to."},
		{Key: "subscription_type", Label: "Plan", Type: FieldString, Help: "Subscription of the account, such as Free or Pro."},
		{Key: "credits_remaining", Label: "Credits Remaining", Type: FieldInteger, Help: "Compressions left; each job uses one credit."},
		{Key: "max_image_size", Label: "Max Image Size (bytes)", Type: FieldInteger, Help: "Largest image the account may compress."},
		{Key: "webhook_secret", Label: "Webhook Secret", Type: FieldString, Help: "Secret (whsec_...) that signs callbacks, to verify the webhook-signature header."},
	}
}

var sampleTime = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func int64p(n int64) *int64        { return &n }
func timep(t time.Time) *time.Time { return &t }

// SampleJob is a realistic completed job, as the API answers it.
func SampleJob() *Job {
	return &Job{
		ID:         "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
		Status:     StatusCompleted,
		CreatedAt:  sampleTime,
		UpdatedAt:  sampleTime.Add(1800 * time.Millisecond),
		StartedAt:  timep(sampleTime.Add(120 * time.Millisecond)),
		FinishedAt: timep(sampleTime.Add(1800 * time.Millisecond)),
		Input: JobInput{Kind: InputURL, URL: "https://images.example.com/photos/team-offsite.jpg",
			Filename: "team-offsite.jpg", Size: 2483114, MIMEType: "image/jpeg",
			SHA256: "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
			Type:   "image/jpeg", Width: 4032, Height: 3024},
		Result: &JobResult{OriginalSize: 2483114, CompressedSize: 612880, CompressionRatio: 75.32,
			CreditsRemaining: int64p(498), MIMEType: "image/jpeg", Filename: "team-offsite.jpg",
			Type: "image/jpeg", Width: 1600, Height: 1200,
			FileURL: "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M"},
		Callback:      &DeliveryState{Status: DeliveryDelivered, Attempts: 1, LastStatus: 200},
		Metadata:      json.RawMessage(`{"record_id":"rec_8812"}`),
		Attempts:      1,
		UpstreamCalls: 1,
		Transform:     Transform{Resize: &Resize{Method: ResizeScale, Width: 1600}},
	}
}

// SampleFailedJob is a realistic failed job: the account ran out of credits.
func SampleFailedJob() *Job {
	j := SampleJob()
	j.Status = StatusFailed
	j.Result = nil
	j.Callback = nil
	j.Error = &JobError{Code: ENOCREDITS, Message: "Insufficient credits", UpstreamStatus: 429,
		CreditsRemaining: int64p(0), Retryable: false}
	return j
}

// SampleAccount is a realistic answer of GET /v1/account.
func SampleAccount() *AccountAnswer {
	return &AccountAnswer{
		Account: Account{Valid: true, UserID: "user_7f3a9c", SubscriptionType: "Free",
			CreditsRemaining: 499, MaxImageSize: MaxImageSize},
		WebhookSecret: "whsec_MfKQ9r8GKYqXJjDzLh9nQWm2sV3c4PdX",
	}
}

// SampleHook is a realistic hook subscription as POST /v1/hooks answers it.
func SampleHook() *HookAnswer {
	return &HookAnswer{
		Hook: Hook{ID: "01937a52-0a1b-7c2d-8e3f-4a5b6c7d8e9f", TargetURL: "https://hooks.zapier.com/hooks/standard/123456/abcdef/",
			Event: EventJobFinished, CreatedAt: sampleTime, Status: HookEnabled},
		Secret: "whsec_Zt4pQ2mW8xK1vN7bR3cY6hJ9sL5dF0gA",
	}
}

// DefaultCatalog is imgflow's catalog: four actions, the Job Finished
// trigger as a REST hook and as a polling trigger, and API key auth.
func DefaultCatalog() *Catalog {
	compressInputs := jobRequestFields()
	getJobInputs := []Field{
		{Key: "id", Label: "Job ID", Type: FieldString, Required: true, In: InPath,
			Help:    "The id of a job, as returned by Compress Image or a trigger.",
			Example: "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f"},
		{Key: "include", Label: "Include Compressed Data", Type: FieldString, In: InQuery,
			Choices: []string{"data"},
			Help:    "Choose data to add result.compressed_data, the compressed image as base64 (large). Leave empty to get the file URL only."},
	}
	statusInput := Field{Key: "status", Label: "Status", Type: FieldString, In: InQuery,
		Choices: []string{"completed", "failed"},
		Help:    "Only jobs that completed, or only jobs that failed. Leave empty for every finished job."}
	eventInput := Field{Key: "event", Label: "Event", Type: FieldString, Required: true,
		Choices: []string{EventJobFinished, EventJobCompleted, EventJobFailed}, Default: EventJobFinished,
		Help: "Which finished jobs start the flow: job.finished (both), job.completed or job.failed."}

	jobIDInput := Field{Key: "id", Label: "Job ID", Type: FieldString, Required: true, In: InPath,
		Help:    "The id of a finished job with a callback or matching hooks.",
		Example: "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f"}

	return &Catalog{
		Name:        "imgflow",
		Description: "Compress PNG, JPEG, WebP and AVIF images in your flows, and start flows when a compression finishes.",
		Auth: Auth{
			Fields: []Field{{Key: "api_key", Label: "API Key", Type: FieldString, Required: true,
				Help: "Your compression API key, from the dashboard (imgflow keys create in a local install). It is sent as the X-API-Key header."}},
			Header:          "X-API-Key",
			TestMethod:      "GET",
			TestPath:        "/v1/account",
			ConnectionLabel: "{{user_id}} ({{subscription_type}})",
			TestOutputs:     accountOutputs(),
			TestSample:      SampleAccount(),
		},
		Actions: []Operation{
			{Key: "compress_image", Noun: "Image", Label: "Compress Image",
				Description: "Compresses an image and returns the finished job with the compressed file's URL.",
				Help:        "Waits up to 25 seconds for the result, then returns the job. If it is not finished by then the job comes back queued or processing: use Get Job later, or Compress Image with Callback for long jobs. A failed job is returned with status failed and the error.",
				Kind:        KindAction, Method: "POST", Path: "/v1/jobs",
				Query:   map[string]string{"wait": "25"},
				Inputs:  compressInputs,
				Outputs: jobOutputs(), Sample: SampleJob(),
				File: CompressedFile(), Upload: ImageUpload()},
			{Key: "compress_image_callback", Noun: "Image", Label: "Compress Image with Callback",
				Description: "Compresses an image and pauses the flow until imgflow calls back with the finished job.",
				Help:        "For large images or busy times: the platform's callback URL is sent as callback_url, and the flow resumes when imgflow POSTs the finished job (completed or failed) there.",
				Kind:        KindCallbackAction, Method: "POST", Path: "/v1/jobs",
				Inputs:  compressInputs,
				Outputs: jobOutputs(), Sample: SampleJob(),
				File: CompressedFile(), Upload: ImageUpload()},
			{Key: "get_job", Noun: "Job", Label: "Get Job",
				Description: "Finds a compress job by its id and returns its status and result.",
				Help:        "Jobs are kept for 7 days and their compressed files for 24 hours (by default); another key's jobs are not found.",
				Kind:        KindAction, Method: "GET", Path: "/v1/jobs/{id}",
				Inputs:  getJobInputs,
				Outputs: jobOutputs(), Sample: SampleJob(),
				File: CompressedFile()},
			checkImageOperation(),
			compressManyOperation(),
			{Key: "check_account", Noun: "Account", Label: "Check Account",
				Description: "Returns the account's plan and remaining credits.",
				Help:        "The same check the connection test makes; use it to stop a flow before credits run out.",
				Kind:        KindAction, Method: "GET", Path: "/v1/account",
				Outputs: accountOutputs(), Sample: SampleAccount()},
		},
		Triggers: []Operation{
			{Key: "job_finished", Noun: "Job", Label: "Job Finished",
				Description: "Starts the flow at once when a compress job of this key completes or fails.",
				Help:        "Subscribes with POST /v1/hooks; each delivery's data is the finished job.",
				Kind:        KindHookTrigger, Method: "POST", Path: HooksPath,
				HookEvents: eventInput.Choices,
				Inputs:     []Field{eventInput},
				Outputs:    jobOutputs(), Sample: SampleJob(),
				File: CompressedFile()},
			{Key: "job_finished_polling", Noun: "Job", Label: "Job Finished (Polling)",
				Description: "Checks every few minutes for compress jobs of this key that completed or failed.",
				Help:        "Lists the newest finished jobs (GET /v1/jobs); each job starts the flow once, by its id.",
				Kind:        KindPollingTrigger, Method: "GET", Path: "/v1/jobs",
				Query:   map[string]string{"limit": "100"},
				Inputs:  []Field{statusInput},
				Outputs: jobOutputs(), Sample: SampleJob(),
				File: CompressedFile()},
			creditsLowTrigger(),
			batchFinishedTrigger(),
		},
		Manage: []Operation{
			{Key: "list_deliveries", Noun: "Delivery", Label: "List Job Deliveries",
				Description: "Lists a job's callback and hook deliveries, each with every attempt: time, HTTP status, duration, the start of the answer, the error and the next retry.",
				Help:        "Kept as long as the job (7 days by default). The callback URL's query string is never shown: it may carry a signature.",
				Kind:        KindAction, Method: "GET", Path: "/v1/jobs/{id}/deliveries",
				Inputs:  []Field{jobIDInput},
				Outputs: deliveryOutputs(), Sample: SampleDeliveryList()},
			{Key: "redeliver", Noun: "Delivery", Label: "Redeliver",
				Description: "Sends a delivery once more: the same message and webhook-id, with a fresh timestamp and signature.",
				Help:        "Queued for the worker, which makes one attempt (not retried) and records it in the job's deliveries; asking again while one is queued changes nothing. A hook that was deleted (404) or disabled by a 410 answer (409) gets nothing.",
				Kind:        KindAction, Method: "POST", Path: "/v1/jobs/{id}/deliveries/{delivery_id}/redeliver",
				Inputs: []Field{jobIDInput,
					{Key: "delivery_id", Label: "Delivery ID", Type: FieldString, Required: true, In: InPath,
						Help: "The id of a delivery (its webhook-id), from List Job Deliveries.", Example: CallbackDeliveryID(SampleJob().ID)}},
				Outputs: []OutputField{
					{Key: "delivery_id", Label: "Delivery ID", Type: FieldString, Help: "The delivery queued again."},
					{Key: "status", Label: "Status", Type: FieldString, Help: "queued: the attempt will show up in List Job Deliveries."},
				},
				Sample: &RedeliveryAnswer{DeliveryID: CallbackDeliveryID(SampleJob().ID), Status: "queued"}},
		},
	}
}

// RedeliveryAnswer is the JSON of a redelivery request (202).
type RedeliveryAnswer struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

// deliveryOutputs are the fields of GET /v1/jobs/{id}/deliveries.
func deliveryOutputs() []OutputField {
	return []OutputField{
		{Key: "job_id", Label: "Job ID", Type: FieldString, Help: "The job the deliveries are about."},
		{Key: "deliveries", Label: "Deliveries", Type: FieldObject, Help: "One entry per delivery (the callback, each hook): id (the webhook-id), kind (callback or hook), hook_id, event, target (without query string), status (pending, delivered or failed) and attempts, oldest first: attempt, at, duration_ms, status_code, response (the start of the answer), error, outcome (delivered, retrying, failed, gone or dropped), next_retry_at, redelivery."},
	}
}

// SampleDeliveryList is a realistic delivery log: a callback delivered on
// its second attempt and a hook delivered at once.
func SampleDeliveryList() *DeliveryList {
	j := SampleJob()
	first := sampleTime.Add(1900 * time.Millisecond)
	second := first.Add(5 * time.Second)
	cb, hook := CallbackDeliveryID(j.ID), HookDeliveryID(j.ID, SampleHook().ID)
	return &DeliveryList{JobID: j.ID, Deliveries: GroupDeliveries([]*DeliveryAttempt{
		{DeliveryID: cb, Event: EventJobCompleted, Target: "https://flows.example.com/webhook-waiting/812",
			At: first, DurationMS: 15003, Error: "webhook URL host flows.example.com did not answer within 15s",
			Outcome: OutcomeRetrying, NextRetryAt: &second},
		{DeliveryID: hook, HookID: SampleHook().ID, Event: EventJobCompleted, Target: "https://hooks.zapier.com/hooks/standard/123456/abcdef/",
			At: first, DurationMS: 184, StatusCode: 200, Response: `{"status":"success"}`, Outcome: OutcomeDelivered},
		{DeliveryID: cb, Event: EventJobCompleted, Target: "https://flows.example.com/webhook-waiting/812",
			At: second, DurationMS: 95, StatusCode: 200, Response: `{"message":"Workflow was started"}`, Outcome: OutcomeDelivered},
	})}
}

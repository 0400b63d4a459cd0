package catalog

import (
	"time"

	"github.com/imgflow/imgflow/connector"
)

// imgflow's catalog: the actions, triggers and management operations, with
// the fields and outputs that several of them share.

// Default is imgflow's catalog: the actions, the triggers (hooks and the
// polling Job Finished), the management operations, and API key auth.
func Default() *Catalog {
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
		Choices: []string{connector.EventJobFinished, connector.EventJobCompleted, connector.EventJobFailed}, Default: connector.EventJobFinished,
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
			compressVariantsOperation(),
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
						Help: "The id of a delivery (its webhook-id), from List Job Deliveries.", Example: connector.CallbackDeliveryID(SampleJob().ID)}},
				Outputs: []OutputField{
					{Key: "delivery_id", Label: "Delivery ID", Type: FieldString, Help: "The delivery queued again."},
					{Key: "status", Label: "Status", Type: FieldString, Help: "queued: the attempt will show up in List Job Deliveries."},
				},
				Sample: &connector.RedeliveryAnswer{DeliveryID: connector.CallbackDeliveryID(SampleJob().ID), Status: "queued"}},
		},
	}
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

// DefaultWait is how long Compress Image waits for the result, in seconds:
// the API's cap (connector.DefaultMaxWait).
const DefaultWait = int(connector.DefaultMaxWait / time.Second)

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

// deliveryOutputs are the fields of GET /v1/jobs/{id}/deliveries.
func deliveryOutputs() []OutputField {
	return []OutputField{
		{Key: "job_id", Label: "Job ID", Type: FieldString, Help: "The job the deliveries are about."},
		{Key: "deliveries", Label: "Deliveries", Type: FieldObject, Help: "One entry per delivery (the callback, each hook): id (the webhook-id), kind (callback or hook), hook_id, event, target (without query string), status (pending, delivered or failed) and attempts, oldest first: attempt, at, duration_ms, status_code, response (the start of the answer), error, outcome (delivered, retrying, failed, gone or dropped), next_retry_at, redelivery."},
	}
}

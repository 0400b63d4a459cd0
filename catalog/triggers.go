package catalog

import (
	"encoding/json"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The hook triggers that are not about one job: Credits Low
// (account.credits_low) and Batch Finished (batch.finished). Each names the
// event it subscribes in HookEvents, so that every platform's subscription
// body comes from here, and its outputs are the fields of the event's data.

// HookTriggers returns the catalog's hook triggers, in catalog order.
func (c *Catalog) HookTriggers() []Operation {
	var out []Operation
	for _, op := range c.Triggers {
		if op.Kind == KindHookTrigger {
			out = append(out, op)
		}
	}
	return out
}

// FixedHookEvent is the one event a hook trigger always subscribes, or ""
// when its `event` input picks one of HookEvents.
func (op *Operation) FixedHookEvent() string {
	if len(op.HookEvents) == 1 {
		return op.HookEvents[0]
	}
	return ""
}

// HookEventInput is the name of the input that picks the event of a hook
// trigger with several HookEvents.
const HookEventInput = "event"

// SampleCreditsLow is a realistic account.credits_low event's data: a job
// took the balance to 48, under the default threshold of 50.
func SampleCreditsLow() *connector.CreditsLowData {
	return &connector.CreditsLowData{CreditsRemaining: 48, Threshold: connector.DefaultCreditsThreshold, JobID: SampleJob().ID}
}

// SampleFinishedBatch is a realistic finished batch as its batch.finished event
// carries it: 12 items, one of which failed.
func SampleFinishedBatch() *connector.Batch {
	const id = "01937a66-4d5e-7f60-8a71-9b0c1d2e3f40"
	base := "https://imgflow.example.net/v1/batches/" + id
	return &connector.Batch{
		ID:         id,
		Status:     connector.BatchFinished,
		Counts:     connector.BatchCounts{Total: 12, Completed: 11, Failed: 1},
		SavedBytes: 18734502,
		CreatedAt:  sampleTime,
		FinishedAt: timep(sampleTime.Add(14200 * time.Millisecond)),
		Metadata:   json.RawMessage(`{"catalogue":"spring-2027"}`),
		Links: &connector.BatchLinks{Self: base, Jobs: base + "/jobs",
			Archive: base + "/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfZ3Vlc3M"},
	}
}

// creditsLowTrigger starts a flow when the balance falls to a threshold.
func creditsLowTrigger() Operation {
	return Operation{Key: "credits_low", Noun: "Account", Label: "Credits Low",
		Description: "Starts the flow when a job takes the account's credits to or below a threshold.",
		Help:        "Subscribes with POST /v1/hooks to account.credits_low: sent once when a job's answer takes the balance to or below the threshold, and again only after the balance has risen above it (a top-up) and fallen again.",
		Kind:        KindHookTrigger, Method: "POST", Path: HooksPath,
		HookEvents: []string{connector.EventCreditsLow},
		Inputs: []Field{{Key: "threshold", Label: "Threshold", Type: FieldInteger,
			Default: "50", Example: "100",
			Help: "The balance at or below which the flow starts (default 50)."}},
		Outputs: []OutputField{
			{Key: "credits_remaining", Label: "Credits Remaining", Type: FieldInteger, Help: "The balance after the job that crossed the threshold."},
			{Key: "threshold", Label: "Threshold", Type: FieldInteger, Help: "The threshold the hook watches."},
			{Key: "job_id", Label: "Job ID", Type: FieldString, Help: "The job whose answer took the balance to the threshold; use it with Get Job."},
		},
		Sample: SampleCreditsLow()}
}

// batchFinishedTrigger starts a flow when every item of a batch has ended.
func batchFinishedTrigger() Operation {
	return Operation{Key: "batch_finished", Noun: "Batch", Label: "Batch Finished",
		Description: "Starts the flow once when every image of a batch of this key has completed or failed.",
		Help:        "Subscribes with POST /v1/hooks to batch.finished: one event per batch (not one per image), carrying the batch with its counts and a signed link to the ZIP of every compressed file.",
		Kind:        KindHookTrigger, Method: "POST", Path: HooksPath,
		HookEvents: []string{connector.EventBatchFinished},
		Outputs:    batchEventOutputs(),
		Sample:     SampleFinishedBatch()}
}

// batchEventOutputs are the fields of the batch a batch.finished event
// carries.
func batchEventOutputs() []OutputField {
	return []OutputField{
		{Key: "id", Label: "Batch ID", Type: FieldString, Help: "Identifier of the batch."},
		{Key: "status", Label: "Status", Type: FieldString, Help: "finished: every item completed or failed."},
		{Key: "counts.total", Label: "Total Items", Type: FieldInteger, Help: "Images in the batch."},
		{Key: "counts.queued", Label: "Queued Items", Type: FieldInteger, Help: "Items still queued (0 once finished)."},
		{Key: "counts.processing", Label: "Processing Items", Type: FieldInteger, Help: "Items being compressed (0 once finished)."},
		{Key: "counts.completed", Label: "Completed Items", Type: FieldInteger, Help: "Items compressed; each cost one credit."},
		{Key: "counts.failed", Label: "Failed Items", Type: FieldInteger, Help: "Items that failed (their jobs carry the error)."},
		{Key: "saved_bytes", Label: "Saved Bytes", Type: FieldInteger, Help: "Bytes saved over the completed items."},
		{Key: "created_at", Label: "Created At", Type: FieldDateTime, Help: "When the batch was created (RFC 3339, UTC)."},
		{Key: "finished_at", Label: "Finished At", Type: FieldDateTime, Help: "When its last item ended."},
		{Key: "metadata", Label: "Metadata", Type: FieldObject, Help: "The metadata sent with the batch, unchanged."},
		{Key: "links.self", Label: "Batch URL", Type: FieldString, Help: "GET it with the key for the batch."},
		{Key: "links.jobs", Label: "Jobs URL", Type: FieldString, Help: "GET it with the key for the items' jobs, in item order."},
		{Key: "links.archive", Label: "Archive URL", Type: FieldFile, Help: "Signed, expiring URL of a ZIP with every compressed file and manifest.json; works without the key."},
	}
}

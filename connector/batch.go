package connector

import (
	"encoding/json"
	"time"
)

// A batch is many images handed over at once and followed as one thing.
// Its items are ordinary jobs (Job.BatchID, Job.BatchIndex): each is
// queued, retried, charged and listed on its own, exactly as a single job.
// What the batch adds is counting: every item that ends is counted once,
// and when the last one ends the batch is finished and emits one
// batch.finished event, to its callback_url and to hooks subscribed to it.
//
// Credits: an item is charged when it completes, once, like any job. A
// batch is accepted when the key's balance is above zero, whatever the
// number of items; when the balance runs out while it runs, the items the
// compression API refuses fail with insufficient_credits (429, nothing
// charged) and the batch still finishes. So completed == credits charged.

// BatchStatus is where a batch is in its life.
type BatchStatus string

const (
	BatchRunning  BatchStatus = "running"
	BatchFinished BatchStatus = "finished" // every item completed or failed
)

// MaxBatchItems is the most items one batch may have.
const MaxBatchItems = 1000

// MaxBatchJSONBody bounds a JSON batch request: 1,000 URL items fit many
// times over; base64 items share it (about 24 MiB of images). Clients that
// send more split their images into several batches.
const MaxBatchJSONBody = 32 << 20

// BatchCounts counts a batch's items by status.
type BatchCounts struct {
	Total      int `json:"total"`
	Queued     int `json:"queued"`
	Processing int `json:"processing"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
}

// Ended is how many items completed or failed.
func (c BatchCounts) Ended() int { return c.Completed + c.Failed }

// BatchLinks are where a batch's parts are read; Archive is signed (it
// works without the key until it expires), as a job's file_url.
type BatchLinks struct {
	Self    string `json:"self"`
	Jobs    string `json:"jobs"`
	Archive string `json:"archive,omitempty"`
}

// Batch is a set of jobs made by one request.
type Batch struct {
	ID     string      `json:"id"`
	Status BatchStatus `json:"status"`
	Counts BatchCounts `json:"counts"`
	// SavedBytes sums original_size - compressed_size over completed items.
	SavedBytes int64           `json:"saved_bytes"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Links      *BatchLinks     `json:"links,omitempty"`
	// Callback is the state of the batch.finished delivery to callback_url.
	Callback *DeliveryState `json:"callback,omitempty"`

	Owner       string `json:"-"`
	CallbackURL string `json:"-"`
	// JobIDs are the items' jobs, by index.
	JobIDs []string `json:"-"`
	// VariantIDs names the variants of a responsive set, by index (the
	// items make them from one source: variantset.go); nil for a batch.
	VariantIDs []string `json:"-"`
}

// EventBatchFinished is the one event a batch emits, when its last item ends.
const EventBatchFinished = "batch.finished"

// BatchEvent is the body of a batch.finished delivery.
type BatchEvent struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      *Batch    `json:"data"`
}

// BatchCallbackDeliveryID and BatchHookDeliveryID are the webhook-ids of a
// batch's batch.finished deliveries, stable across retries.
func BatchCallbackDeliveryID(batchID string) string     { return "msg_" + batchID + "_batch_cb" }
func BatchHookDeliveryID(batchID, hookID string) string { return "msg_" + batchID + "_batch_" + hookID }

// BatchFilter selects a page of an owner's batches, newest first.
type BatchFilter struct {
	Limit  int    // 1..100
	Cursor string // id of the last batch of the previous page
}

// BatchPage is one page of a listing of batches.
type BatchPage struct {
	Batches    []*Batch
	NextCursor string
}

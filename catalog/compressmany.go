package catalog

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The catalog's part of batches (connector/batch.go): Compress Many, one
// action that sends a list of images as one batch, waits for it, and answers
// the batch with every item's job, so that a flow gets each image's result
// (its file_url) from the one step.

// batchItemFields are the fields of one item of a batch request: a job
// request's, but for dedupe, which a batch item does not take.
func batchItemFields() []Field {
	var out []Field
	for _, f := range jobRequestFields() {
		switch f.Key {
		case "image_url", "image_base64":
			f.Help += " One per item."
		case "metadata":
			f.Help = "Your own key/value pairs for this image, echoed back on its job."
		case "dedupe":
			continue
		}
		if IsTransformField(f.Key) { // the batch's, for every item
			continue
		}
		out = append(out, f)
	}
	return out
}

// batchOutputs are the fields of a batch as Compress Many answers it.
func batchOutputs() []OutputField {
	return []OutputField{
		{Key: "id", Label: "Batch ID", Type: FieldString, Help: "Identifier of the batch; its items are jobs with this batch_id."},
		{Key: "status", Label: "Status", Type: FieldString, Help: "finished when every item completed or failed; running when the wait ran out first (the jobs then show where each item is)."},
		{Key: "counts.total", Label: "Items", Type: FieldInteger, Help: "How many images the batch has."},
		{Key: "counts.queued", Label: "Queued", Type: FieldInteger, Help: "Items waiting for a worker."},
		{Key: "counts.processing", Label: "Processing", Type: FieldInteger, Help: "Items being compressed."},
		{Key: "counts.completed", Label: "Completed", Type: FieldInteger, Help: "Items compressed: one credit each."},
		{Key: "counts.failed", Label: "Failed", Type: FieldInteger, Help: "Items that failed (each job says why)."},
		{Key: "saved_bytes", Label: "Saved Bytes", Type: FieldInteger, Help: "Bytes saved over the completed items: original minus compressed sizes."},
		{Key: "created_at", Label: "Created At", Type: FieldDateTime, Help: "When the batch was made."},
		{Key: "finished_at", Label: "Finished At", Type: FieldDateTime, Help: "When its last item ended; empty while it runs."},
		{Key: "metadata", Label: "Metadata", Type: FieldObject, Help: "The batch's metadata, unchanged."},
		{Key: "links.self", Label: "Batch URL", Type: FieldString, Help: "GET it with the key for the batch's counts later."},
		{Key: "links.jobs", Label: "Jobs URL", Type: FieldString, Help: "GET it with the key for the items' jobs, page by page."},
		{Key: "links.archive", Label: "Archive URL", Type: FieldFile, Help: "Signed, expiring URL of a ZIP of every compressed file and a manifest.json; downloads without the key."},
		{Key: "jobs", Label: "Jobs", Type: FieldList, Fields: batchJobOutputs(),
			Help: "Every item's job in the order of the items, each as Get Job answers it: status, result.file_url (the compressed file), error."},
	}
}

// batchJobOutputs are the fields of a batch's job: a job's, but for the
// callback, which items leave to the batch, and with its place in it.
func batchJobOutputs() []OutputField {
	out := []OutputField{
		{Key: "index", Label: "Item Index", Type: FieldInteger, Help: "The image's position in the list, from 0."},
		{Key: "batch_id", Label: "Batch ID", Type: FieldString, Help: "The batch the job belongs to."},
	}
	for _, o := range jobOutputs() {
		if !strings.HasPrefix(o.Key, "callback.") {
			out = append(out, o)
		}
	}
	return out
}

// SampleBatch is a realistic finished batch of three images: one
// compressed, one completed from an earlier identical image's result, one
// failed for want of credits.
func SampleBatch() *connector.Batch {
	done, again := SampleJob(), SampleDeduplicatedJob()
	finished := sampleTime.Add(2600 * time.Millisecond)
	id := "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a"
	return &connector.Batch{ID: id, Status: connector.BatchFinished,
		Counts:     connector.BatchCounts{Total: 3, Completed: 2, Failed: 1},
		SavedBytes: done.Result.OriginalSize - done.Result.CompressedSize + again.Result.OriginalSize - again.Result.CompressedSize,
		CreatedAt:  sampleTime, FinishedAt: &finished,
		Metadata: json.RawMessage(`{"catalog":"spring-2027"}`),
		Links: &connector.BatchLinks{Self: "https://imgflow.example.com/v1/batches/" + id,
			Jobs:    "https://imgflow.example.com/v1/batches/" + id + "/jobs",
			Archive: "https://imgflow.example.com/v1/batches/" + id + "/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfYXJj"}}
}

// SampleBatchAnswer is SampleBatch with its three jobs, as Compress Many
// answers it.
func SampleBatchAnswer() *connector.BatchAnswer {
	b := SampleBatch()
	done, again, failed := SampleJob(), SampleDeduplicatedJob(), SampleFailedJob()
	failed.ID = "01937a70-3c4e-7f60-9b72-8c9d0e1f2a3b"
	failed.Input.URL = "https://images.example.com/photos/banner.png"
	failed.Input.Filename, failed.Input.MIMEType = "banner.png", "image/png"
	jobs := []*connector.Job{done, again, failed}
	for i, j := range jobs {
		idx := i
		j.Callback, j.BatchID, j.BatchIndex = nil, b.ID, &idx
		b.JobIDs = append(b.JobIDs, j.ID)
	}
	return &connector.BatchAnswer{Batch: b, Jobs: jobs}
}

// compressManyOperation is the Compress Many action: POST /v1/batches
// with every image as an item, waiting as Compress Image does, answered
// with the items' jobs.
func compressManyOperation() Operation {
	return Operation{Key: "compress_many", Noun: "Batch", Label: "Compress Many",
		Description: "Compresses a list of images as one batch and returns the batch with each image's job and compressed file URL.",
		Help: "Sends up to 1,000 images (each an Image URL or base64) in one request, charged one credit per image that completes, and waits up to 25 seconds for all of them. " +
			"The answer lists a job per image in the order given: completed ones carry result.file_url, failed ones their error (an image that cannot be compressed fails alone). " +
			"A batch still running after the wait comes back with status running and its jobs as they stand: follow it with the Batch Finished trigger, or Get Job per image.",
		Kind: KindAction, Method: "POST", Path: "/v1/batches",
		Query: map[string]string{"wait": "25", "include": connector.IncludeJobs},
		Inputs: append([]Field{
			{Key: "items", Label: "Images", Type: FieldList, Required: true, Fields: batchItemFields(),
				Help: "The images to compress, one item each (1 to 1,000): an Image URL or Image (Base64), and optionally a file name and metadata."},
			{Key: "metadata", Label: "Batch Metadata", Type: FieldObject,
				Help:    "Your own key/value pairs for the whole batch (such as an import id), echoed back on the batch and its batch.finished event.",
				Example: `{"catalog":"spring-2027"}`},
		}, transformFields()...),
		Outputs: batchOutputs(), Sample: SampleBatchAnswer(),
	}
}

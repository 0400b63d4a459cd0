package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// The runners: each turns a tool call into its REST operation through the
// Backend and the answer into a tool result (results.go).

var compressRunner = runner{
	extra: []catalog.Field{uploadField, idempotencyField, waitField(maxWaitSeconds), previewField},
	note: "Give the image as image_url, as image_base64 (small images only: the bytes pass through your output), or as upload (a handle from prepare_upload); " +
		"image_url also takes a data: URI or an mcp-file:// handle. " +
		"Waits up to 25 seconds; a job still running then comes back with its status, and get_job with its id waits for the rest. " +
		"The answer links the compressed file (a signed URL that works without the key). Costs one credit, none when the same image was compressed before (dedupe); " +
		"retrying with the same idempotency_key never charges twice.",
	output: func(op *catalog.Operation) obj { return outputSchema(op.Outputs) },
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		req, preview, err := t.jobRequest(ctx, key, op, a, maxWaitSeconds)
		if err != nil {
			return errorResult(err)
		}
		job, err := t.backend.Compress(ctx, key, req)
		if err != nil {
			return errorResult(err)
		}
		return t.jobResult(ctx, key, job, req.Wait, preview)
	},
}

var getJobRunner = runner{
	extra: []catalog.Field{waitField(maxWaitSeconds), previewField},
	note:  "Waits up to wait_seconds (default 25) for a job that is still queued or processing, then answers it as it stands.",
	output: func(op *catalog.Operation) obj {
		return outputSchema(op.Outputs)
	},
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		id, err := a.string("id")
		if err == nil && id == "" {
			err = fieldError("id", "is required")
		}
		wait, werr := a.wait(maxWaitSeconds)
		preview, perr := a.bool(previewField.Key)
		if err = errors.Join(err, werr, perr); err != nil {
			return errorResult(firstError(err))
		}
		job, err := t.waitForJob(ctx, key, id, wait)
		if err != nil {
			return errorResult(err)
		}
		return t.jobResult(ctx, key, job, wait, preview)
	},
}

var dryRunRunner = runner{
	extra: []catalog.Field{uploadField},
	note:  "Nothing is charged and no job is made: use it to learn an image's type, size and dimensions, and whether compressing it would cost a credit.",
	output: func(op *catalog.Operation) obj {
		return outputSchema(op.Outputs)
	},
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		body, err := t.imageBody(ctx, key, op, a)
		if err != nil {
			return errorResult(err)
		}
		check, err := t.backend.DryRun(ctx, key, Request{Body: body})
		if err != nil {
			return errorResult(err)
		}
		return checkResult(check)
	},
}

var compressManyRunner = runner{
	extra: []catalog.Field{idempotencyField, waitField(maxWaitSeconds)},
	note: "Each item is an image_url, image_base64 or upload handle. The answer links every compressed file, and the batch's ZIP archive once it finished; " +
		"items still running after the wait are followed with get_job.",
	output: func(op *catalog.Operation) obj { return outputSchema(op.Outputs) },
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		idem, err := a.string(idempotencyField.Key)
		if err != nil {
			return errorResult(err)
		}
		wait, err := a.wait(maxWaitSeconds)
		if err != nil {
			return errorResult(err)
		}
		body := a.body(op)
		if raw, ok := a.raw["items"]; ok {
			var items []map[string]json.RawMessage
			if json.Unmarshal(raw, &items) == nil { // anything else: the REST API says what is wrong
				for i, item := range items {
					fileURI(item)
					if err := t.resolveUpload(ctx, key, item, "items["+strconv.Itoa(i)+"]."); err != nil {
						return errorResult(err)
					}
				}
				body["items"] = items
			}
		}
		batch, err := t.backend.CompressMany(ctx, key, Request{Body: body, IdempotencyKey: idem, Wait: wait})
		if err != nil {
			return errorResult(err)
		}
		return batchResult(batch)
	},
}

var accountRunner = runner{
	note: "Free: no credit is used.",
	output: func(op *catalog.Operation) obj {
		return outputSchema(accountOutputs(op))
	},
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		acct, err := t.backend.Account(ctx, key)
		if err != nil {
			return errorResult(err)
		}
		return accountResult(acct)
	},
}

var listJobsRunner = runner{
	extra: []catalog.Field{
		{Key: "limit", Label: "Limit", Type: catalog.FieldInteger, Help: "How many jobs, 1 to 100 (default 10)."},
		{Key: "cursor", Label: "Cursor", Type: catalog.FieldString, Help: "next_cursor of the previous answer, for the next page."},
	},
	note: "Newest first; each job as get_job answers it, with its compressed file's URL.",
	output: func(op *catalog.Operation) obj {
		return obj{"type": "object", "properties": obj{
			"jobs":        obj{"type": "array", "items": outputSchema(op.Outputs)},
			"next_cursor": obj{"type": "string", "description": "Pass as cursor for the next page; absent on the last."},
		}}
	},
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		status, err := a.string("status")
		limit, lerr := a.int("limit", 1, 100, 10)
		cursor, cerr := a.string("cursor")
		if err = errors.Join(err, lerr, cerr); err != nil {
			return errorResult(firstError(err))
		}
		list, err := t.backend.ListJobs(ctx, key, connector.JobFilter{Status: connector.JobStatus(status), Limit: limit, Cursor: cursor})
		if err != nil {
			return errorResult(err)
		}
		return listResult(list)
	},
}

// accountOutputs are the account's outputs without the webhook signing
// secret: an agent has no use for it, and model contexts are logged.
func accountOutputs(op *catalog.Operation) []catalog.OutputField {
	var out []catalog.OutputField
	for _, o := range op.Outputs {
		if o.Key != "webhook_secret" {
			out = append(out, o)
		}
	}
	return out
}

// jobRequest reads a compress call: its body, idempotency key, wait and
// whether a preview was asked for.
func (t *toolSet) jobRequest(ctx context.Context, key string, op *catalog.Operation, a *arguments, defWait int) (Request, bool, error) {
	body, err := t.imageBody(ctx, key, op, a)
	if err != nil {
		return Request{}, false, err
	}
	idem, err := a.string(idempotencyField.Key)
	if err != nil {
		return Request{}, false, err
	}
	wait, err := a.wait(defWait)
	if err != nil {
		return Request{}, false, err
	}
	preview, err := a.bool(previewField.Key)
	if err != nil {
		return Request{}, false, err
	}
	return Request{Body: body, IdempotencyKey: idem, Wait: wait}, preview, nil
}

// imageBody is the REST body of a call that takes one image, with an
// upload handle resolved into the image's bytes.
func (t *toolSet) imageBody(ctx context.Context, key string, op *catalog.Operation, a *arguments) (map[string]any, error) {
	body := a.body(op)
	item := map[string]json.RawMessage{}
	for _, k := range []string{uploadField.Key, "image_url", "image_base64", "filename"} {
		if v, ok := a.raw[k]; ok {
			item[k] = v
		}
	}
	if !fileURI(item) && !a.has(uploadField.Key) {
		return body, nil
	}
	if err := t.resolveUpload(ctx, key, item, ""); err != nil {
		return nil, err
	}
	delete(body, "image_url")
	for _, k := range []string{"image_url", "image_base64"} {
		if v, ok := item[k]; ok {
			body[k] = v
		}
	}
	if name, ok := item["filename"]; ok && slices.ContainsFunc(op.Inputs, func(f catalog.Field) bool { return f.Key == "filename" }) {
		body["filename"] = name
	}
	return body, nil
}

// fileURI moves an image_url that is a file input value in the draft
// SEP-2631's sense to where it belongs: an mcp-file:// handle to upload,
// a data: URI to image_base64 (which takes data: URIs). It reports whether
// it moved one.
func fileURI(item map[string]json.RawMessage) bool {
	var u string
	if json.Unmarshal(item["image_url"], &u) != nil {
		return false
	}
	switch {
	case strings.HasPrefix(u, "mcp-file:"):
		if _, ok := item[uploadField.Key]; ok {
			return false // both given: the REST API's "one of them" answers
		}
		item[uploadField.Key] = item["image_url"]
	case strings.HasPrefix(strings.ToLower(u), "data:"):
		if _, ok := item["image_base64"]; ok {
			return false
		}
		item["image_base64"] = item["image_url"]
	default:
		return false
	}
	delete(item, "image_url")
	return true
}

// resolveUpload replaces an item's upload handle by the uploaded bytes, as
// image_base64 (and its name as filename, unless one was given).
func (t *toolSet) resolveUpload(ctx context.Context, key string, item map[string]json.RawMessage, prefix string) error {
	raw, ok := item[uploadField.Key]
	if !ok {
		return nil
	}
	delete(item, uploadField.Key)
	if t.uploads == nil {
		return fieldError(prefix+uploadField.Key, "is not available on this server")
	}
	var handle string
	if err := json.Unmarshal(raw, &handle); err != nil || handle == "" {
		return fieldError(prefix+uploadField.Key, "must be a handle from prepare_upload")
	}
	if _, ok := item["image_url"]; ok {
		return fieldError(prefix+uploadField.Key, "give upload, image_url or image_base64, not several")
	}
	if _, ok := item["image_base64"]; ok {
		return fieldError(prefix+uploadField.Key, "give upload, image_url or image_base64, not several")
	}
	data, name, err := t.uploads.open(ctx, key, handle, prefix+uploadField.Key)
	if err != nil {
		return err
	}
	b64, _ := json.Marshal(data) // []byte encodes as base64
	item["image_base64"] = b64
	if _, ok := item["filename"]; !ok && name != "" {
		item["filename"], _ = json.Marshal(name)
	}
	return nil
}

// waitForJob reads a job, and while it is unfinished reads it again, less
// often as time passes, until wait is over.
func (t *toolSet) waitForJob(ctx context.Context, key, id string, wait time.Duration) (*connector.Job, error) {
	deadline := time.Now().Add(wait)
	pause := 200 * time.Millisecond
	for {
		job, err := t.backend.GetJob(ctx, key, id)
		if err != nil || job.Status.Finished() || !time.Now().Add(pause).Before(deadline) {
			return job, err
		}
		select {
		case <-ctx.Done():
			return job, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// firstError is the first of joined errors.
func firstError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		return j.Unwrap()[0]
	}
	return err
}

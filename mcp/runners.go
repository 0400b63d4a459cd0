package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// The runners: each turns a tool call into its REST operation through the
// Backend and the answer into a tool result (results.go).

var compressRunner = runner{
	extra: []catalog.Field{uploadField, idempotencyField, waitField(maxWaitSeconds), previewField},
	description: "Compresses one PNG, JPEG, WebP or AVIF image (optionally resized, converted or keeping metadata) and returns its job with a signed link to the compressed file. " +
		"Use it for one image; compress_many for several. Give the image as image_url, as upload (a handle from prepare_upload) or, for small images only, as image_base64. " +
		"Waits up to wait_seconds (25); a job still queued or processing then is followed with get_job. " +
		"Costs one credit; none when this key compressed the same image before (dedupe) or on a retry with the same idempotency_key",
	output: func(op *catalog.Operation) obj { return outputSchema(op.Outputs) },
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		req, preview, err := t.jobRequest(ctx, key, op, a, maxWaitSeconds)
		if err != nil {
			return errorResult(err)
		}
		defer closeUpload(req.Upload)
		job, err := t.backend.Compress(ctx, key, req)
		if err != nil {
			return errorResult(err)
		}
		return t.jobResult(ctx, key, job, req.Wait, preview)
	},
}

var getJobRunner = runner{
	extra: []catalog.Field{waitField(maxWaitSeconds), previewField},
	description: "Returns a job by id: its status (queued, processing, completed, failed), the compressed file's link and sizes, or its error. " +
		"Use it to follow a job still running: it waits up to wait_seconds for the job to end. preview adds a thumbnail (at most 256 pixels). Free",
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
		job, err := t.backend.GetJob(ctx, key, id, wait)
		if err != nil {
			return errorResult(err)
		}
		return t.jobResult(ctx, key, job, wait, preview)
	},
}

var dryRunRunner = runner{
	extra: []catalog.Field{uploadField},
	description: "Checks an image without compressing it: its type, size and dimensions, the size a resize would give, and whether compressing it would cost a credit (0 when an earlier result would be reused). " +
		"Use it before compressing when the cost or the size matters. Free: nothing is charged, no job is made",
	output: func(op *catalog.Operation) obj {
		return outputSchema(op.Outputs)
	},
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		req, err := t.imageRequest(ctx, key, op, a)
		if err != nil {
			return errorResult(err)
		}
		defer closeUpload(req.Upload)
		check, err := t.backend.DryRun(ctx, key, req)
		if err != nil {
			return errorResult(err)
		}
		return checkResult(check)
	},
}

var compressManyRunner = runner{
	extra: []catalog.Field{idempotencyField, waitField(maxWaitSeconds)},
	description: "Compresses 1 to 1,000 images as one batch and returns the batch with each image's job and link, and a ZIP of all once every image ended. " +
		"Use it for several images at once. Each item takes image_url, upload or image_base64; an upload may be named once per call. " +
		"Waits up to wait_seconds (25); items still running are followed with get_job. " +
		"Costs one credit per image, none for an image this key compressed before; the same idempotency_key never charges twice",
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
		req, err := t.batchRequest(ctx, key, op, a)
		if err != nil {
			return errorResult(err)
		}
		defer func() {
			for _, u := range req.Uploads {
				closeUpload(u)
			}
		}()
		req.IdempotencyKey, req.Wait = idem, wait
		batch, err := t.backend.CompressMany(ctx, key, req)
		if err != nil {
			return errorResult(err)
		}
		return batchResult(batch)
	},
}

var accountRunner = runner{
	description: "Returns this key's plan and remaining credits, as last checked (at most 30 seconds old). " +
		"Use it before large work or after an insufficient_credits error. Free",
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
	description: "Lists this key's jobs, newest first, optionally only those with one status (queued, processing, completed or failed), a page at a time. " +
		"Use it to find earlier results or what is still running. Free",
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

// jobRequest reads a compress call: its fields and upload, idempotency
// key, wait and whether a preview was asked for.
func (t *toolSet) jobRequest(ctx context.Context, key string, op *catalog.Operation, a *arguments, defWait int) (ImageRequest, bool, error) {
	idem, err := a.string(idempotencyField.Key)
	wait, werr := a.wait(defWait)
	preview, perr := a.bool(previewField.Key)
	if err = errors.Join(err, werr, perr); err != nil {
		return ImageRequest{}, false, firstError(err)
	}
	req, err := t.imageRequest(ctx, key, op, a)
	if err != nil {
		return ImageRequest{}, false, err
	}
	req.IdempotencyKey, req.Wait = idem, wait
	return req, preview, nil
}

// imageRequest is a call that takes one image: its catalog fields, and the
// uploaded image its handle names, opened (not read: the job reads it).
func (t *toolSet) imageRequest(ctx context.Context, key string, op *catalog.Operation, a *arguments) (ImageRequest, error) {
	item := a.body(op)
	if v, ok := a.raw[uploadField.Key]; ok {
		item[uploadField.Key] = v
	}
	fileURI(item)
	handle, err := t.handleOf(item, "")
	if err != nil {
		return ImageRequest{}, err
	}
	var req ImageRequest
	if handle != "" {
		if req.Upload, err = t.uploads.open(ctx, key, handle, uploadField.Key); err != nil {
			return ImageRequest{}, err
		}
	}
	req.Fields, err = json.Marshal(item)
	if err != nil {
		closeUpload(req.Upload)
		return ImageRequest{}, err
	}
	return req, nil
}

// batchRequest is a compress_many call: its fields, and its items'
// uploads. The count of items, each handle used once and the uploads'
// total size are checked before any upload is opened or read.
func (t *toolSet) batchRequest(ctx context.Context, key string, op *catalog.Operation, a *arguments) (BatchRequest, error) {
	body := a.body(op)
	var items []map[string]json.RawMessage
	if raw, ok := body["items"]; ok && json.Unmarshal(raw, &items) != nil {
		items = nil // not a list of objects: the binding says what is wrong
	}
	if len(items) > connector.MaxBatchItems {
		return BatchRequest{}, fieldError("items", fmt.Sprintf("at most %d items per call (got %d)", connector.MaxBatchItems, len(items)))
	}
	handles := map[int]string{}
	seen := map[string]int{}
	for i, item := range items {
		fileURI(item)
		prefix := "items[" + strconv.Itoa(i) + "]."
		h, err := t.handleOf(item, prefix)
		if err != nil {
			return BatchRequest{}, err
		}
		if h == "" {
			continue
		}
		id := uploadID(h)
		if j, dup := seen[id]; dup {
			return BatchRequest{}, fieldError(prefix+uploadField.Key, fmt.Sprintf("names the same upload as items[%d]: each upload may be used once per call (compress it once; the answer links the file)", j))
		}
		seen[id] = i
		handles[i] = h
	}
	req := BatchRequest{Uploads: map[int]*Upload{}}
	var total int64
	for i, h := range handles {
		up, err := t.uploads.open(ctx, key, h, "items["+strconv.Itoa(i)+"]."+uploadField.Key)
		if err == nil && total+up.Size > maxUploadBytesPerCall {
			closeUpload(up)
			err = fieldError("items", fmt.Sprintf("the uploads add up to more than %d MiB in one call: split the images over several calls", maxUploadBytesPerCall>>20))
		}
		if err != nil {
			for _, u := range req.Uploads {
				closeUpload(u)
			}
			return BatchRequest{}, err
		}
		total += up.Size
		req.Uploads[i] = up
	}
	if items != nil {
		body["items"], _ = json.Marshal(items)
	}
	var err error
	req.Fields, err = json.Marshal(body)
	return req, err
}

// maxUploadBytesPerCall bounds the uploaded bytes one call reads: what a
// multipart batch of the REST API may carry.
const maxUploadBytesPerCall = 64 << 20

// handleOf takes an item's upload handle out of it ("" when it has none),
// refusing it beside another image source.
func (t *toolSet) handleOf(item map[string]json.RawMessage, prefix string) (string, error) {
	raw, ok := item[uploadField.Key]
	if !ok {
		return "", nil
	}
	delete(item, uploadField.Key)
	if t.uploads == nil {
		return "", fieldError(prefix+uploadField.Key, "is not available on this server")
	}
	var handle string
	if err := json.Unmarshal(raw, &handle); err != nil || handle == "" {
		return "", fieldError(prefix+uploadField.Key, "must be a handle from prepare_upload")
	}
	if _, ok := item["image_url"]; ok {
		return "", fieldError(prefix+uploadField.Key, "give upload, image_url or image_base64, not several")
	}
	if _, ok := item["image_base64"]; ok {
		return "", fieldError(prefix+uploadField.Key, "give upload, image_url or image_base64, not several")
	}
	return handle, nil
}

// closeUpload closes an opened upload (nil: nothing to close).
func closeUpload(u *Upload) {
	if u == nil {
		return
	}
	if c, ok := u.Reader.(io.Closer); ok {
		c.Close()
	}
}

// fileURI moves an image_url that is a file input value in the draft
// SEP-2631's sense to where it belongs: an mcp-file:// handle to upload,
// a data: URI to image_base64 (which takes data: URIs).
func fileURI(item map[string]json.RawMessage) {
	var u string
	if json.Unmarshal(item["image_url"], &u) != nil {
		return
	}
	switch {
	case strings.HasPrefix(u, "mcp-file:"):
		if _, ok := item[uploadField.Key]; ok {
			return // both given: "one of them" answers
		}
		item[uploadField.Key] = item["image_url"]
	case strings.HasPrefix(strings.ToLower(u), "data:"):
		if _, ok := item["image_base64"]; ok {
			return
		}
		item["image_base64"] = item["image_url"]
	default:
		return
	}
	delete(item, "image_url")
}

// firstError is the first of joined errors.
func firstError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		return j.Unwrap()[0]
	}
	return err
}

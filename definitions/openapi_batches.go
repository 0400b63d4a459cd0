package definitions

import (
	"fmt"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// addBatchesToOpenAPI documents the batch routes (server/batches.go) and
// their schemas in doc (batch.finished is among the hook events as the
// Batch Finished trigger's event: schema.go).
func addBatchesToOpenAPI(doc obj) {
	paths, components := doc["paths"].(obj), doc["components"].(obj)
	schemas := components["schemas"].(obj)
	doc["tags"] = append(doc["tags"].([]any), obj{"name": "batches"})

	idParam := oasParam("id", "path", "The batch id.", true, obj{"type": "string"})
	op := func(id, summary, desc string, extra obj) obj {
		o := obj{"operationId": id, "tags": []string{"batches"}, "summary": summary, "description": desc}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	limit := oasParam("limit", "query", "Page size.", false, obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 20})
	include := oasParam("include", "query", "jobs: the answer also carries jobs, every item's job in item order as GET /v1/jobs/{id} shows it (what Compress Many reads); a 202's Location asks for them too.", false,
		obj{"type": "string", "enum": []string{connector.IncludeJobs}})
	// One schema for both answers: jobs is there only with include=jobs
	// (a oneOf of Batch and BatchWithJobs would match both).
	batchAnswer := jsonContent("BatchWithJobs")
	pollLocation := obj{"schema": obj{"type": "string"}, "description": "/v1/batches/{id}?poll=1 (with &include=jobs when asked): answers 202 until the batch is finished, then 200."}
	paths["/v1/batches"] = obj{
		"post": op("createBatch", "Compress many images as one batch",
			fmt.Sprintf("Each item becomes an ordinary job (listed in /v1/jobs with batch_id and index), charged once when it completes and retried on its own. "+
				"JSON: 1 to %d items (body at most 32 MiB); multipart: up to 100 file parts of at most 10 MiB each, 64 MiB in all. "+
				"A malformed item refuses the whole request, naming items[i] (nothing is made); an image that turns out not to compress fails its own job. "+
				"A key with credits left gets its batch; items beyond the balance fail with insufficient_credits, uncharged. "+
				"One batch.finished event goes to callback_url and to hooks subscribed to batch.finished when every item has ended.", connector.MaxBatchItems),
			obj{
				"x-imgflow-catalog-key": "compress_many",
				"parameters": []any{
					oasParam("wait", "query", "Whole seconds (0-25) to wait for the batch to finish; 200 when done in time, else 202.", false,
						obj{"type": "integer", "minimum": 0, "maximum": 25, "default": 0}),
					include,
					oasParam("Idempotency-Key", "header", "Retries with the same key and body return the same batch.", false, obj{"type": "string"}),
				},
				"requestBody": obj{"required": true, "content": obj{
					"application/json": obj{"schema": obj{"$ref": oasRef + "BatchRequest"}},
					"multipart/form-data": obj{"schema": obj{"type": "object", "properties": obj{
						"file":         obj{"type": "array", "items": obj{"type": "string", "format": "binary"}, "maxItems": 100, "description": "The images, one part each."},
						"callback_url": obj{"type": "string", "format": "uri"},
						"metadata":     obj{"type": "string", "description": "JSON object, as text."},
						"dedupe":       obj{"type": "string", "enum": []string{"true", "false"}, "description": "The items' dedupe."},
					}}},
				}},
				"responses": oasErrors(obj{
					"200": obj{"description": "The finished batch (with wait); with include=jobs, its jobs.", "content": batchAnswer},
					"202": obj{"description": "Accepted: the items are queued.",
						"headers": obj{"Location": pollLocation,
							"Retry-After": obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait before polling."}},
						"content": batchAnswer},
				}, "400", "401", "409", "413", "415", "422", "429", "503"),
				"callbacks": obj{"batchFinished": obj{"{$request.body#/callback_url}": obj{"post": obj{
					"summary":     "The finished batch, POSTed once to callback_url",
					"description": "Signed with Standard Webhooks headers, retried as job events are.",
					"requestBody": obj{"required": true, "content": jsonContent("BatchEvent")},
					"responses":   obj{"200": obj{"description": "Received."}},
				}}}},
			}),
		"get": op("listBatches", "List the key's batches", "Newest first.", obj{
			"parameters": []any{limit, oasParam("cursor", "query", "next_cursor of the previous page.", false, obj{"type": "string"})},
			"responses":  oasErrors(obj{"200": oasResponse("The key's batches.", "BatchList")}, "400", "401", "503"),
		}),
	}
	paths["/v1/batches/{id}"] = obj{"get": op("getBatch", "Get a batch", "Its status and counts.", obj{
		"parameters": []any{idParam, include,
			oasParam("poll", "query", "Any value: answer 202 (with Location and Retry-After) while the batch runs, the asynchronous pattern Power Automate polls.", false, obj{"type": "string"})},
		"responses": oasErrors(obj{"200": obj{"description": "The batch; with include=jobs, its jobs.", "content": batchAnswer},
			"202": obj{"description": "With ?poll: the batch is still running.",
				"headers": obj{"Location": pollLocation, "Retry-After": obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait before polling."}},
				"content": batchAnswer}}, "400", "401", "404", "503"),
	})}
	paths["/v1/batches/{id}/jobs"] = obj{"get": op("listBatchJobs", "List a batch's jobs", "In item order, each as GET /v1/jobs/{id} shows it.", obj{
		"parameters": []any{idParam, limit,
			oasParam("cursor", "query", "next_cursor of the previous page (an item index).", false, obj{"type": "string"}),
			oasParam("status", "query", "Only jobs in this status.", false, obj{"type": "string", "enum": []string{"queued", "processing", "completed", "failed"}})},
		"responses": oasErrors(obj{"200": oasResponse("A page of the batch's jobs.", "JobList")}, "400", "401", "404", "503"),
	})}
	paths["/v1/batches/{id}/archive"] = obj{"get": op("getBatchArchive", "Download every compressed file as a ZIP",
		"Streamed: each completed item's file under a unique, safe name (its filename or its job id, with the result's extension), then manifest.json "+
			"(each item's index, job id, status, file, sizes, error code). With the key, or without it through the signed links.archive.", obj{
			"parameters": []any{idParam, oasParam("token", "query", "The signed token carried by links.archive.", false, obj{"type": "string"})},
			"security":   []any{obj{"apiKey": []any{}}, obj{"bearer": []any{}}, obj{}},
			"responses": oasErrors(obj{"200": obj{"description": "The ZIP.",
				"headers": obj{"Content-Disposition": obj{"schema": obj{"type": "string"}, "description": "attachment; filename=batch-{id}.zip"}},
				"content": obj{"application/zip": obj{"schema": obj{"type": "string", "format": "binary"}}}}}, "401", "404", "503"),
		})}

	schemas["BatchRequest"] = batchRequestSchema()
	schemas["Batch"] = batchSchema()
	withJobs := batchSchema()
	withJobs["properties"].(obj)["jobs"] = obj{"type": "array", "items": obj{"$ref": oasRef + "Job"},
		"description": "Only with include=jobs: every item's job in item order (a job expired since is left out)."}
	withJobs["example"] = generic(catalog.Default().Operation("compress_many").Sample)
	schemas["BatchWithJobs"] = withJobs
	schemas["BatchList"] = obj{"type": "object", "properties": obj{
		"batches":     obj{"type": "array", "items": obj{"$ref": oasRef + "Batch"}},
		"next_cursor": obj{"type": "string", "description": "Pass as cursor for the next page; absent on the last."},
	}}
	schemas["BatchEvent"] = obj{"type": "object", "properties": obj{
		"type":      obj{"type": "string", "enum": []string{connector.EventBatchFinished}},
		"timestamp": obj{"type": "string", "format": "date-time"},
		"data":      obj{"$ref": oasRef + "Batch"},
	}}
	if job, ok := schemas["Job"].(obj)["properties"].(obj); ok {
		job["batch_id"] = obj{"type": "string", "description": "The batch this job is an item of; absent for a single job."}
		job["index"] = obj{"type": "integer", "description": "The item's position in its batch request."}
		job["variant"] = obj{"type": "string", "description": "In a set (variants), the id of the variant this job makes; absent otherwise."}
	}
}

func batchRequestSchema() obj {
	item := obj{"type": "object", "properties": obj{
		"image_url": obj{"type": "string", "format": "uri", "description": "Public http(s) URL of the image."},
		"image_base64": obj{"description": "The image as base64 or a data: URI, or Power Automate file content {\"$content-type\": \"image/png\", \"$content\": \"<base64>\"}.",
			"oneOf": []any{obj{"type": "string"}, fileContentSchema()}},
		"filename": obj{"type": "string", "description": "Name of the file in the archive (its extension follows the format); no control characters."},
		"metadata": obj{"type": "object", "description": "Echoed back on the item's job."},
		"dedupe":   obj{"type": "boolean", "description": "false: compress even an image the key had compressed already; absent: the batch's dedupe."},
	}, "additionalProperties": false, "description": "Exactly one of image_url and image_base64. Any other field is refused (400 naming items[i].field)."}
	return obj{"type": "object", "required": []string{"items"}, "additionalProperties": false, "properties": obj{
		"items":        obj{"type": "array", "minItems": 1, "maxItems": connector.MaxBatchItems, "items": item},
		"callback_url": obj{"type": "string", "format": "uri", "description": "Gets one batch.finished event."},
		"metadata":     obj{"type": "object", "description": "Echoed back on the batch."},
		"dedupe":       obj{"type": "boolean", "description": "The items' dedupe, for those without their own."},
		"api_key":      obj{"type": "string", "description": "Ignored: batches take the key in the X-API-Key (or Authorization: Bearer) header, checked before the body is read."},
	}}
}

func batchSchema() obj {
	count := obj{"type": "integer"}
	return obj{"type": "object", "properties": obj{
		"id":          obj{"type": "string"},
		"status":      obj{"type": "string", "enum": []string{string(connector.BatchRunning), string(connector.BatchFinished)}},
		"counts":      obj{"type": "object", "properties": obj{"total": count, "queued": count, "processing": count, "completed": count, "failed": count}},
		"saved_bytes": obj{"type": "integer", "description": "original_size - compressed_size, summed over completed items."},
		"created_at":  obj{"type": "string", "format": "date-time"},
		"finished_at": obj{"type": "string", "format": "date-time", "nullable": true},
		"metadata":    obj{"type": "object"},
		"links": obj{"type": "object", "properties": obj{
			"self":    obj{"type": "string", "format": "uri"},
			"jobs":    obj{"type": "string", "format": "uri"},
			"archive": obj{"type": "string", "format": "uri", "description": "Signed ZIP link, usable without the key until the results expire."},
		}},
		"callback": obj{"type": "object", "description": "The batch.finished delivery to callback_url."},
	}}
}

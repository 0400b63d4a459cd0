package definitions

import (
	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

const oasRef = "#/components/schemas/"

func renderOpenAPIFiles(c *catalog.Catalog, base string) ([]File, error) {
	f, err := fileOf("openapi", "openapi.json", openAPIDocument(c, base))
	return []File{f}, err
}

func jsonContent(ref string) obj {
	return obj{"application/json": obj{"schema": obj{"$ref": oasRef + ref}}}
}

func oasResponse(desc, ref string) obj {
	r := obj{"description": desc}
	if ref != "" {
		r["content"] = jsonContent(ref)
	}
	return r
}

// oasErrors adds the error answers with these statuses to responses.
func oasErrors(responses obj, statuses ...string) obj {
	for _, s := range statuses {
		responses[s] = obj{"$ref": "#/components/responses/E" + s}
	}
	return responses
}

func oasParam(name, in, desc string, required bool, schema obj) obj {
	return obj{"name": name, "in": in, "description": desc, "required": required, "schema": schema}
}

func oasOp(op *catalog.Operation, id string, extra obj) obj {
	o := obj{"operationId": id, "tags": []string{"jobs"}}
	if op != nil {
		o["summary"] = op.Label
		o["description"] = op.Description + " " + op.Help
		o["x-imgflow-catalog-key"] = op.Key
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

var public = []any{} // no key: security overridden to none

// openAPIDocument is the OpenAPI 3.0 document of every route of the API.
func openAPIDocument(c *catalog.Catalog, base string) obj {
	compress := c.Operation("compress_image")
	getJob := c.Operation("get_job")
	polling := firstOfKind(c, catalog.KindPollingTrigger)
	account := c.Operation("check_account")
	checkImage := c.Operation("check_image")
	sizes := c.Operation("compress_variants")
	listDeliveries := c.Operation("list_deliveries")
	redeliver := c.Operation("redeliver")
	idParam := oasParam("id", "path", "The job id.", true, obj{"type": "string"})

	errorResponses := obj{}
	for s, text := range map[string]string{
		"400": "Bad input", "401": "Missing or wrong API key", "404": "Unknown, expired or another key's",
		"409": "Same Idempotency-Key still in flight; a disabled hook (hook_disabled); or the key has its limit of hooks (too_many_hooks)", "413": "Image over 10 MiB", "415": "Content type not accepted",
		"422": "Idempotency-Key reused with another body", "429": "No credits left (insufficient_credits), or the key already has its limit of unfinished jobs (too_many_jobs), or its jobs failed uncharged past its budget (too_many_failures), or made this operation too often lately (rate_limited: hook tests, recoveries)",
		"502": "The compression API failed or could not be reached (upstream_error)",
		"503": "Redis or the queue is down (unavailable), too many large bodies are being read at once (server_busy), or the compression API cannot check a key it did not confirm lately (upstream_unavailable)",
	} {
		r := oasResponse(text, "Error")
		if s == "503" || s == "429" {
			r["headers"] = obj{"Retry-After": obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait."}}
		}
		errorResponses["E"+s] = r
	}

	multipart := obj{"type": "object", "properties": obj{
		"file":         obj{"type": "string", "format": "binary", "description": "The image (any field name)."},
		"filename":     obj{"type": "string"},
		"callback_url": obj{"type": "string", "format": "uri"},
		"metadata":     obj{"type": "string", "description": "JSON object, as text."},
		"dedupe":       obj{"type": "string", "enum": []string{"true", "false"}, "description": "false: compress even an image this key compressed before."},
		"variants":     obj{"type": "string", "description": "JSON array of sizes, as text: makes a responsive set (see JobRequest.variants)."},
	}}
	dryRunParam := oasParam("dry_run", "query", "1: check the request as a job would be checked and answer what it would cost (ImageCheck, 200), creating and charging nothing; the same as POST "+catalog.DryRunPath+".", false,
		obj{"type": "string", "enum": []string{"1", "true", "0", "false"}})
	jobRequestBody := obj{"required": true, "content": rawBodyContent(obj{
		"application/json":    obj{"schema": obj{"$ref": oasRef + "JobRequest"}},
		"multipart/form-data": obj{"schema": multipart},
	})}

	retryAfter := obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait before polling."}
	pollLocation := obj{"schema": obj{"type": "string"}, "description": "/v1/jobs/{id}?poll=1: answers 202 until the job is finished, then 200."}
	attachment := obj{"schema": obj{"type": "string"}, "description": "attachment, with the file name when known."}
	hookIDParam := oasParam("id", "path", "The hook id.", true, obj{"type": "string"})

	paths := obj{
		"/v1/jobs": obj{
			"post": oasOp(compress, "createJob", obj{
				"summary":     "Create a compress job",
				"description": "Create a compress job from image_url, image_base64 (base64 text, or Power Automate file content), an upload, or the image itself as the body. Compress Image waits (wait=25); Compress Image with Callback sends callback_url and returns at once.",
				"parameters": append([]any{
					oasParam("wait", "query", "Whole seconds (0-25, decimal digits only) to wait for the finished job; 200 when done in time, else 202.", false,
						obj{"type": "integer", "minimum": 0, "maximum": 25, "default": 0}),
					oasIncludeParam(),
					oasParam("Idempotency-Key", "header", "Retries with the same key and body return the same job.", false, obj{"type": "string"}),
					dryRunParam,
				}, rawBodyParams()...),
				"requestBody": jobRequestBody,
				"responses": oasErrors(obj{
					"200": obj{"description": "The finished job (completed, or failed with its error); with include=data a completed job's result.compressed_data is the compressed file in base64; with dry_run=1, what the job would cost.",
						"content": obj{"application/json": obj{"schema": obj{"oneOf": []any{
							obj{"$ref": oasRef + "Job"}, obj{"$ref": oasRef + "ImageCheck"}, obj{"$ref": oasRef + "VariantSet"}}}}}},
					"202": obj{"description": "Accepted: the job (or, with variants, the set's sizes) is queued or processing; poll Location.",
						"headers": obj{"Location": pollLocation, "Retry-After": retryAfter},
						"content": obj{"application/json": obj{"schema": obj{"oneOf": []any{
							obj{"$ref": oasRef + "Job"}, obj{"$ref": oasRef + "VariantSet"}}}}}},
				}, "400", "401", "409", "413", "415", "422", "429", "503"),
				"callbacks": obj{"jobFinished": obj{"{$request.body#/callback_url}": obj{"post": obj{
					"summary":     "The finished job, POSTed to callback_url",
					"description": "Signed with Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature. Only 2xx counts; 410 stops retries.",
					"requestBody": obj{"required": true, "content": jsonContent("Delivery")},
					"responses":   obj{"200": obj{"description": "Received."}},
				}}}},
			}),
			"get": oasOp(polling, "listJobs", obj{
				"parameters": []any{
					oasParam("status", "query", "Only jobs in this status.", false,
						obj{"type": "string", "enum": []string{"queued", "processing", "completed", "failed"}}),
					oasParam("limit", "query", "Page size.", false, obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
					oasParam("cursor", "query", "next_cursor of the previous page.", false, obj{"type": "string"}),
				},
				"responses": oasErrors(obj{"200": oasResponse("The key's jobs, newest first.", "JobList")}, "400", "401", "503"),
			}),
		},
		catalog.VariantSetPath: obj{"post": oasOp(sizes, "createVariantSet", obj{
			"description": sizes.Description + " " + sizes.Help + " The same as POST /v1/jobs with variants, which this path requires.",
			"parameters": append([]any{
				oasParam("wait", "query", "Whole seconds (0-25, decimal digits only) to wait for every size; 200 when done in time, else 202.", false,
					obj{"type": "integer", "minimum": 0, "maximum": 25, "default": 0}),
				oasParam("include", "query", "jobs: the answer carries jobs, each size's job in the order given (and a 202's Location keeps asking for them).", false,
					obj{"type": "string", "enum": []string{connector.IncludeJobs}}),
				oasParam("Idempotency-Key", "header", "Retries with the same key and body return the same set.", false, obj{"type": "string"}),
				dryRunParam,
			}, rawBodyParams()...),
			"requestBody": obj{"required": true, "content": rawBodyContent(obj{
				"application/json":    obj{"schema": obj{"allOf": []any{obj{"$ref": oasRef + "JobRequest"}, obj{"required": []string{"variants"}}}}},
				"multipart/form-data": obj{"schema": multipart},
			})},
			"responses": oasErrors(obj{
				"200": obj{"description": "The finished set (every size completed or failed); with dry_run=1, what it would cost.",
					"content": obj{"application/json": obj{"schema": obj{"oneOf": []any{obj{"$ref": oasRef + "VariantSet"}, obj{"$ref": oasRef + "ImageCheck"}}}}}},
				"202": obj{"description": "Accepted: sizes are queued or processing; poll Location.",
					"headers": obj{"Location": obj{"schema": obj{"type": "string"}, "description": "/v1/batches/{id}?poll=1: answers 202 until every size is finished, then 200."}, "Retry-After": retryAfter},
					"content": jsonContent("VariantSet")},
			}, "400", "401", "409", "413", "415", "422", "429", "503"),
		})},
		catalog.DryRunPath: obj{"post": oasOp(checkImage, "checkImage", obj{
			"parameters":  []any{oasParam("wait", "query", "Checked as for a job, otherwise unused.", false, obj{"type": "integer", "minimum": 0, "maximum": 25})},
			"requestBody": jobRequestBody,
			"responses": oasErrors(obj{"200": oasResponse("What compressing the image would cost now, and the image as its bytes tell.", "ImageCheck")},
				"400", "401", "413", "415", "429", "502", "503"),
		})},
		"/v1/jobs/{id}": obj{"get": oasOp(getJob, "getJob", obj{
			"parameters": []any{idParam,
				oasIncludeParam(),
				oasParam("poll", "query", "Any value: answer 202 (with Location and Retry-After) while the job is unfinished, the asynchronous pattern Power Automate polls.", false, obj{"type": "string"})},
			"responses": oasErrors(obj{"200": oasResponse("The job.", "Job"),
				"202": obj{"description": "With ?poll: the job is not finished yet.",
					"headers": obj{"Location": pollLocation, "Retry-After": retryAfter},
					"content": jsonContent("Job")}}, "401", "404", "503"),
		})},
		"/v1/jobs/{id}/file": obj{"get": oasOp(nil, "getJobFile", obj{
			"summary":     "Download the compressed image",
			"description": "The compressed file itself (binary), in the type of the original image. With the key, for as long as the result is stored (IMGFLOW_RESULT_TTL, 24 h by default): this is what Zapier's file hydrator fetches. Or without the key through the signed, expiring file_url. 404 once the file has expired.",
			"parameters": []any{idParam,
				oasParam("token", "query", "The signed token carried by file_url.", false, obj{"type": "string"})},
			"security": []any{obj{"apiKey": []any{}}, obj{"bearer": []any{}}, obj{}},
			"responses": oasErrors(obj{"200": obj{"description": "The compressed bytes, with Content-Type, Content-Length and Content-Disposition (attachment; filename=result.filename).",
				"headers": obj{"Content-Disposition": attachment,
					"Content-Length": obj{"schema": obj{"type": "integer"}, "description": "Size in bytes: result.compressed_size."}},
				"content": imageContent()}}, "401", "404", "503"),
		})},
		"/v1/jobs/{id}/deliveries": obj{"get": oasOp(listDeliveries, "listDeliveries", obj{
			"tags":       []string{"deliveries"},
			"parameters": []any{idParam},
			"responses":  oasErrors(obj{"200": oasResponse("The job's deliveries and their attempts.", "DeliveryList")}, "401", "404", "503"),
		})},
		"/v1/jobs/{id}/deliveries/{delivery_id}/redeliver": obj{"post": oasOp(redeliver, "redeliver", obj{
			"tags": []string{"deliveries"},
			"parameters": []any{idParam,
				oasParam("delivery_id", "path", "The delivery's id (its webhook-id).", true, obj{"type": "string"})},
			"responses": oasErrors(obj{"202": obj{"description": "Queued for one more attempt.",
				"headers": obj{"Location": obj{"schema": obj{"type": "string"}, "description": "/v1/jobs/{id}/deliveries"}},
				"content": jsonContent("Redelivery")}}, "401", "404", "409", "503"),
		})},
		"/v1/account": obj{"get": oasOp(account, "getAccount", obj{
			"tags":      []string{"account"},
			"responses": oasErrors(obj{"200": oasResponse("The key check.", "Account")}, "401", "502", "503"),
		})},
		"/v1/hooks": obj{
			"post": oasOp(nil, "createHook", obj{
				"tags":        []string{"hooks"},
				"requestBody": obj{"required": true, "content": jsonContent("HookRequest")},
				"responses": oasErrors(obj{"201": obj{"description": "Subscribed; the secret signs deliveries.",
					"headers": obj{"Location": obj{"schema": obj{"type": "string"}, "description": "/v1/hooks/{id}"}},
					"content": jsonContent("Hook")}}, "400", "401", "409", "413", "415", "503"),
				"callbacks": obj{"delivery": obj{"{$request.body#/target_url}": obj{"post": obj{
					"summary":     "An event matching the hook's subscription",
					"description": "job.completed and job.failed carry the job; hook.disabled, hook.test and account.credits_low carry their own data.",
					"requestBody": obj{"required": true, "content": jsonContent("HookEvent")},
					"responses":   obj{"200": obj{"description": "Received; 410 unsubscribes."}},
				}}}},
			}),
			"get": oasOp(nil, "listHooks", obj{"tags": []string{"hooks"}, "summary": "List the key's hook subscriptions, oldest first",
				"parameters": []any{
					oasParam("limit", "query", "Page size.", false, obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 100}),
					oasParam("cursor", "query", "next_cursor of the previous page.", false, obj{"type": "string"}),
				},
				"responses": oasErrors(obj{"200": obj{"description": "The hooks.", "content": obj{"application/json": obj{"schema": obj{
					"type": "object", "properties": obj{
						"hooks":       obj{"type": "array", "items": obj{"$ref": oasRef + "Hook"}},
						"next_cursor": obj{"type": "string", "description": "Pass as cursor for the next page; absent on the last."},
					}}}}}}, "400", "401", "503"),
			}),
		},
		"/v1/hooks/{id}/enable": obj{"post": oasOp(nil, "enableHook", obj{"tags": []string{"hooks"},
			"summary":     "Turn a disabled hook back on",
			"description": "A hook is disabled when its target answers 410 Gone or fails every attempt for IMGFLOW_HOOK_DISABLE_AFTER; enabling starts its count of failures afresh.",
			"parameters":  []any{hookIDParam},
			"responses":   oasErrors(obj{"200": oasResponse("The hook, enabled.", "Hook")}, "401", "404", "503"),
		})},
		"/v1/hooks/{id}/test": obj{"post": oasOp(nil, "testHook", obj{"tags": []string{"hooks"},
			"summary":     "Send a signed hook.test event now",
			"description": "The answer is the attempt: status, the receiver's HTTP status, duration and the start of its answer. Recorded in GET /v1/deliveries. Rate-limited per key (IMGFLOW_HOOK_TESTS_PER_MINUTE, default 10 a minute): beyond it 429 rate_limited with Retry-After.",
			"parameters":  []any{hookIDParam},
			"responses":   oasErrors(obj{"200": oasResponse("The test delivery.", "HookTest")}, "401", "404", "429", "503"),
		})},
		"/v1/hooks/{id}/recover": obj{"post": oasOp(nil, "recoverHook", obj{"tags": []string{"hooks"},
			"summary":     "Send again every failed delivery to the hook since a time",
			"description": "Each delivery first attempted since `since` that ended failed is queued once more: same webhook-id, fresh signature, one attempt. Rate-limited per key (IMGFLOW_HOOK_RECOVERS_PER_HOUR, default 6 an hour): beyond it 429 rate_limited with Retry-After.",
			"parameters":  []any{hookIDParam},
			"requestBody": obj{"required": true, "content": jsonContent("RecoverRequest")},
			"responses":   oasErrors(obj{"202": oasResponse("How many deliveries were queued.", "Recovery")}, "400", "401", "404", "409", "413", "415", "429", "503"),
		})},
		"/v1/hooks/{id}/rotate-secret": obj{"post": oasOp(nil, "rotateHookSecret", obj{"tags": []string{"hooks"},
			"summary":     "Give the hook a new signing secret",
			"description": "The answer holds the new secret; until previous_secret_expires_at (IMGFLOW_SECRET_OVERLAP) deliveries carry both signatures, space-separated, as Standard Webhooks specifies.",
			"parameters":  []any{hookIDParam},
			"responses":   oasErrors(obj{"200": oasResponse("The hook with its new secret.", "Hook")}, "401", "404", "503"),
		})},
		"/v1/account/rotate-secret": obj{"post": oasOp(nil, "rotateCallbackSecret", obj{"tags": []string{"account"},
			"summary":     "Give the key's callbacks a new signing secret",
			"description": "The answer holds the new webhook_secret; until previous_secret_expires_at callbacks carry both signatures.",
			"responses":   oasErrors(obj{"200": oasResponse("The new secret.", "SecretRotation")}, "401", "503"),
		})},
		"/v1/event-types": obj{"get": oasOp(nil, "listEventTypes", obj{"tags": []string{"hooks"}, "security": public,
			"summary":   "Every event a callback or hook receives, with the JSON schema of its body",
			"responses": oasErrors(obj{"200": oasResponse("The event types.", "EventTypeList")}, "503"),
		})},
		"/v1/deliveries": obj{"get": oasOp(nil, "listAllDeliveries", obj{"tags": []string{"deliveries"},
			"summary":     "The key's deliveries across jobs and events, newest first",
			"description": "Each delivery (a job's callback or hook delivery, or an event such as hook.disabled) with every attempt, kept as long as jobs.",
			"parameters": []any{
				oasParam("status", "query", "Only deliveries in this status.", false, obj{"type": "string", "enum": []string{"pending", "delivered", "failed"}}),
				oasParam("hook_id", "query", "Only deliveries to this hook.", false, obj{"type": "string"}),
				oasParam("limit", "query", "Page size.", false, obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 100}),
				oasParam("cursor", "query", "next_cursor of the previous page.", false, obj{"type": "string"}),
			},
			"responses": oasErrors(obj{"200": oasResponse("A page of deliveries.", "DeliveryPage")}, "400", "401", "503"),
		})},
		"/v1/hooks/{id}": obj{
			"get": oasOp(nil, "getHook", obj{"tags": []string{"hooks"}, "summary": "One hook subscription of the key",
				"parameters": []any{hookIDParam},
				"responses":  oasErrors(obj{"200": oasResponse("The hook.", "Hook")}, "401", "404", "503"),
			}),
			"delete": oasOp(nil, "deleteHook", obj{"tags": []string{"hooks"}, "summary": "Unsubscribe a hook",
				"parameters": []any{hookIDParam},
				"responses":  oasErrors(obj{"204": obj{"description": "Deleted."}}, "401", "404", "503"),
			}),
		},
		"/v1/definitions": obj{"get": oasOp(nil, "listDefinitions", obj{"tags": []string{"definitions"}, "security": public,
			"summary":   "Index of the connector definitions, rendered for this server",
			"responses": obj{"200": obj{"description": "The platforms and their files.", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}},
		})},
		"/v1/definitions/{platform}": obj{"get": oasOp(nil, "getPlatformDefinitions", obj{"tags": []string{"definitions"}, "security": public,
			"summary":    "One platform's definition files",
			"parameters": []any{platformParam()},
			"responses": oasErrors(obj{"200": obj{"description": "The platform's files.",
				"content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}, "404"),
		})},
		"/v1/definitions/{platform}/{file}": obj{"get": oasOp(nil, "getDefinitionFile", obj{"tags": []string{"definitions"}, "security": public,
			"summary":    "One definition file",
			"parameters": []any{platformParam(), oasParam("file", "path", "File name.", true, obj{"type": "string"})},
			"responses": oasErrors(obj{"200": obj{"description": "The file.", "headers": obj{"Content-Disposition": attachment},
				"content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}, "404"),
		})},
		"/": obj{"get": oasOp(nil, "console", obj{"tags": []string{"operations"}, "security": public,
			"summary":     "The web console",
			"description": "Sign in with your key (kept in the tab, sent only as X-API-Key), try a compression, watch jobs, read and replay deliveries, manage hooks, copy connection snippets. Its scripts and styles are under /console/.",
			"responses":   obj{"200": obj{"description": "HTML page.", "content": obj{"text/html": obj{"schema": obj{"type": "string"}}}}}})},
		"/console/{file}": obj{"get": oasOp(nil, "consoleAsset", obj{"tags": []string{"operations"}, "security": public,
			"summary":    "A script or style sheet of the web console",
			"parameters": []any{oasParam("file", "path", "File name.", true, obj{"type": "string"})},
			"responses": obj{"200": obj{"description": "The file.", "content": obj{"text/javascript": obj{"schema": obj{"type": "string"}},
				"text/css": obj{"schema": obj{"type": "string"}}}}, "404": obj{"description": "No such file."}}})},
		"/health": obj{"get": oasOp(nil, "health", obj{"tags": []string{"operations"}, "security": public, "summary": "Liveness",
			"responses": obj{"200": obj{"description": "Alive.", "content": obj{"application/json": obj{"schema": obj{"type": "object",
				"example": obj{"status": "healthy", "service": "imgflow"}}}}}}})},
		"/openapi.json": obj{"get": oasOp(nil, "openapi", obj{"tags": []string{"operations"}, "security": public, "summary": "This document",
			"responses": obj{"200": obj{"description": "OpenAPI 3 document.", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}})},
	}

	doc := obj{
		"openapi": "3.0.3",
		"info": obj{
			"title":       "imgflow",
			"version":     zapierAppVersion,
			"description": c.Description + " Connector definitions for Zapier, n8n, Make and Power Automate are served at /v1/definitions.",
		},
		"servers":  []any{obj{"url": base}},
		"security": []any{obj{"apiKey": []any{}}, obj{"bearer": []any{}}},
		"tags": []any{
			obj{"name": "jobs"}, obj{"name": "deliveries"}, obj{"name": "account"}, obj{"name": "hooks"}, obj{"name": "definitions"}, obj{"name": "operations"},
		},
		"paths":                 paths,
		"x-imgflow-event-types": eventTypes(oasRef),
		"components": obj{
			"securitySchemes": obj{
				"apiKey": obj{"type": "apiKey", "in": "header", "name": c.Auth.Header, "description": "The compression API key."},
				"bearer": obj{"type": "http", "scheme": "bearer", "description": "The same key as a bearer token."},
			},
			"responses": errorResponses,
			"schemas": obj{
				"Job":            required(jobSchema(c), "id", "status", "created_at"),
				"JobRequest":     jobRequestSchema(c),
				"VariantSet":     required(variantSetSchema(c), "id", "status", "counts", "srcset", "picture", "variants"),
				"JobList":        jobListSchema(oasRef),
				"Account":        accountSchema(c),
				"ImageCheck":     required(imageCheckSchema(c), "would_charge", "credits_remaining", "input"),
				"HookRequest":    hookRequestSchema(c),
				"Hook":           hookSchema(),
				"Delivery":       deliverySchema(oasRef),
				"DeliveryList":   deliveryListSchema(),
				"DeliveryPage":   deliveryPageSchema(),
				"HookEvent":      hookEventSchema(),
				"HookTest":       hookTestSchema(),
				"RecoverRequest": recoverRequestSchema(),
				"Recovery":       recoverySchema(),
				"SecretRotation": secretRotationSchema(),
				"EventTypeList":  eventTypeListSchema(),
				"Redelivery":     redeliverySchema(),
				"Error":          errorSchema(),
			},
		},
	}
	addBatchesToOpenAPI(doc)
	addHookTriggersToOpenAPI(c, doc)
	addConnectedAppsToOpenAPI(doc)
	return doc
}

func platformParam() obj {
	return oasParam("platform", "path", "Platform.", true, obj{"type": "string", "enum": Platforms})
}

// imageTypes are the types of images the API takes and answers.
var imageTypes = []string{"image/png", "image/jpeg", "image/webp", "image/avif"}

// imageContent is a binary body in any of the image types.
func imageContent() obj {
	out := obj{}
	for _, t := range imageTypes {
		out[t] = obj{"schema": obj{"type": "string", "format": "binary"}}
	}
	return out
}

// rawBodyContent adds the image types and application/octet-stream to a
// create-job body: the image itself as the body.
func rawBodyContent(content obj) obj {
	for t, v := range imageContent() {
		content[t] = v
	}
	content["application/octet-stream"] = obj{"schema": obj{"type": "string", "format": "binary",
		"description": "The image itself; its type is read from the bytes."}}
	return content
}

// rawBodyParams are the fields of a job whose body is the image itself,
// given in the query (the key never is: it goes in a header).
func rawBodyParams() []any {
	return []any{
		oasParam("filename", "query", "With the image as the body: the file name (or send Content-Disposition: attachment; filename=...).", false, obj{"type": "string"}),
		oasParam("callback_url", "query", "With the image as the body: the callback URL.", false, obj{"type": "string", "format": "uri"}),
		oasParam("metadata", "query", "With the image as the body: metadata as a JSON object in text.", false, obj{"type": "string"}),
		oasParam("dedupe", "query", "With the image as the body: false compresses even an image this key compressed before.", false, obj{"type": "string", "enum": []string{"true", "false"}}),
		oasParam("resize", "query", "With the image as the body: 1600x (width), x900 (height) or 400x400 (a box).", false, obj{"type": "string"}),
		oasParam("resize_method", "query", "With the image as the body: scale, fit or cover.", false, obj{"type": "string", "enum": []string{"scale", "fit", "cover"}}),
		oasParam("resize_enlarge", "query", "With the image as the body: true lets resize enlarge.", false, obj{"type": "string", "enum": []string{"true", "false"}}),
		oasParam("convert", "query", "With the image as the body: webp, avif, jpeg or png.", false, obj{"type": "string"}),
		oasParam("background", "query", "With the image as the body: #rrggbb, the colour transparency is flattened on.", false, obj{"type": "string"}),
		oasParam("preserve", "query", "With the image as the body: copyright, creation, location (comma-separated).", false, obj{"type": "string"}),
		oasParam("target_max_bytes", "query", "With the image as the body: fit the result under this size (100000, 100KB, 1.5MB, 200KiB).", false, obj{"type": "string"}),
		oasParam("target_allow_resize", "query", "With the image as the body and target_max_bytes: false keeps the dimensions (quality only).", false, obj{"type": "string", "enum": []string{"true", "false"}}),
		oasParam("target_min_score", "query", "With the image as the body and target_max_bytes: the lowest SSIMULACRA2 score (0-100) the result may have.", false, obj{"type": "number", "minimum": 0, "maximum": 100}),
		oasParam("variants", "query", "With the image as the body: makes a responsive set (VariantSet) of these sizes, ID=SIZE[:TYPE],... such as "+connector.VariantSpecExample+" (SIZE 320w, x480 or 320x480; TYPE webp, avif, jpeg or png), or the JSON array of JobRequest.variants. The resize, convert, preserve and target parameters then go in each variant.", false, obj{"type": "string"}),
	}
}

func oasIncludeParam() obj {
	return oasParam("include", "query", "data: a completed job's answer carries result.compressed_data, the compressed file in base64 (and a 202's Location keeps asking for it). What Make's and Power Automate's file outputs read.", false,
		obj{"type": "string", "enum": []string{"data"}})
}

// required marks fields of s as always present: answers that are one of
// several schemas (POST /v1/jobs 200: Job or ImageCheck) then match
// exactly one under a strict validator, objects being open to additions.
func required(s obj, fields ...string) obj {
	s["required"] = fields
	return s
}

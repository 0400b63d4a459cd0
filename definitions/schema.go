package definitions

import (
	"slices"
	"strconv"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// JSON schemas of the API's bodies, built from the catalog's fields so that
// OpenAPI and Power Automate describe what the platforms show. refPrefix is
// "#/components/schemas/" (OpenAPI 3) or "#/definitions/" (Swagger 2).

// outputsSchema is the object the outputs describe (catalog.OutputsSchema),
// with the sample as its example.
func outputsSchema(outputs []catalog.OutputField, example any) obj {
	s := catalog.OutputsSchema(outputs, catalog.SchemaOpenAPI)
	if example != nil {
		s["example"] = generic(example)
	}
	return s
}

// jobSchema describes a job; compressed_data (added by ?include=data) is
// not a platform output, so it is added here.
func jobSchema(c *catalog.Catalog) obj {
	s := outputsSchema(c.Operation("get_job").Outputs, catalog.SampleJob())
	result := s["properties"].(obj)["result"].(obj)
	result["properties"].(obj)["compressed_data"] = obj{"type": "string", "format": "byte",
		"description": "The compressed image, base64; only with ?include=data."}
	s["properties"].(obj)["dedupe"] = obj{"type": "boolean",
		"description": "The request's dedupe field, when it sent one (false: compressed even if an identical result was stored)."}
	for name, t := range transformSchemas() {
		s["properties"].(obj)[name] = t
	}
	errProps := s["properties"].(obj)["error"].(obj)["properties"].(obj)
	errProps["credits_remaining"] = obj{"type": "integer", "format": "int64",
		"description": "Credits left, with insufficient_credits."}
	return s
}

// transformSchemas describe the transform a job echoes when its request
// asked for one (connector.Transform): resize, convert, preserve.
func transformSchemas() obj {
	return obj{
		"resize": obj{"type": "object", "required": []string{"method"}, "description": "The request's resize.",
			"properties": obj{
				"method":  obj{"type": "string", "enum": []string{connector.ResizeScale, connector.ResizeFit, connector.ResizeCover}},
				"width":   obj{"type": "integer"},
				"height":  obj{"type": "integer"},
				"enlarge": obj{"type": "boolean"}}},
		"convert": obj{"type": "object", "required": []string{"type"}, "description": "The request's convert.",
			"properties": obj{
				"type":       obj{"type": "string"},
				"background": obj{"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}}},
		"preserve": obj{"type": "array", "description": "The metadata groups the request kept.",
			"items": obj{"type": "string", "enum": []string{connector.PreserveCopyright, connector.PreserveCreation, connector.PreserveLocation}}},
	}
}

// jobRequestSchema describes the JSON body of POST /v1/jobs.
func jobRequestSchema(c *catalog.Catalog) obj {
	props := obj{}
	for _, f := range c.Operation("compress_image").Inputs {
		s := f.Type.Schema(catalog.SchemaOpenAPI)
		s["title"] = f.Label
		s["description"] = f.Help
		if f.Example != "" && f.Type != catalog.FieldObject {
			s["example"] = exampleOf(f)
		}
		props[f.Key] = s
	}
	if b64, ok := props["image_base64"].(obj); ok {
		// Or Power Automate's file content, passed on as it is.
		props["image_base64"] = obj{"title": b64["title"], "description": b64["description"].(string) + " Or file content: {\"$content-type\": \"image/png\", \"$content\": \"<base64>\"}.",
			"example": b64["example"], "oneOf": []any{obj{"type": "string"}, fileContentSchema()}}
	}
	props["callback_url"] = obj{"type": "string", "format": "uri", "title": "Callback URL",
		"description": "Where imgflow POSTs {type, timestamp, data: job} when the job finishes, signed with Standard Webhooks headers. Its query string is kept."}
	props["api_key"] = obj{"type": "string", "description": "The key, for clients that cannot set headers. Prefer the X-API-Key header."}
	if sizes := c.Operation("compress_variants"); sizes != nil {
		for _, f := range sizes.Inputs {
			if f.Key == "variants" {
				props[f.Key] = obj{"type": "array", "title": f.Label, "minItems": 1, "maxItems": connector.MaxVariants,
					"description": f.Help + " Makes the request a responsive set (answered as VariantSet); each size carries its own options, so the request's resize, convert, preserve and target are left out.",
					"items":       obj{"type": "object", "required": []string{"id"}, "additionalProperties": false, "properties": fieldProps(f.Fields)}}
			}
		}
	}
	return obj{"type": "object", "properties": props,
		"description": "Exactly one of image_url and image_base64."}
}

// fieldProps are the schemas of fields, by key, with their labels and help.
func fieldProps(fields []catalog.Field) obj {
	props := obj{}
	for _, f := range fields {
		s := f.Type.Schema(catalog.SchemaOpenAPI)
		s["title"], s["description"] = f.Label, f.Help
		if f.Example != "" {
			s["example"] = exampleOf(f)
		}
		props[f.Key] = s
	}
	return props
}

// variantSetSchema is a responsive set as POST /v1/jobs with variants
// answers it (Make Image Sizes' outputs).
func variantSetSchema(c *catalog.Catalog) obj {
	s := obj(catalog.OutputsSchema(c.Operation("compress_variants").Outputs, catalog.SchemaOpenAPI))
	if props, ok := s["properties"].(catalog.Schema); ok {
		if finished, ok := props["finished_at"].(catalog.Schema); ok {
			finished["nullable"] = true // while a size runs
		}
		props["jobs"] = catalog.Schema{"type": "array", "items": obj{"$ref": oasRef + "Job"},
			"description": "Only with include=jobs: each variant's job in the order given (a job expired since is left out)."}
		props["variants"] = catalog.Schema{"type": "object", "title": "Variants by ID",
			"description": "Each variant's job, keyed by its id.", "additionalProperties": obj{"$ref": oasRef + "Job"}}
	}
	return s
}

// fileContentSchema is Power Automate's file content.
func fileContentSchema() obj {
	return obj{"type": "object", "required": []string{"$content"}, "properties": obj{
		"$content-type": obj{"type": "string", "description": "The file's media type, such as image/png; must match the bytes."},
		"$content":      obj{"type": "string", "format": "byte", "description": "The file, base64."},
	}}
}

// imageCheckSchema describes a dry run's answer (Check Image).
func imageCheckSchema(c *catalog.Catalog) obj {
	op := c.Operation("check_image")
	return outputsSchema(op.Outputs, op.Sample)
}

func accountSchema(c *catalog.Catalog) obj {
	return outputsSchema(c.Auth.TestOutputs, c.Auth.TestSample)
}

func hookRequestSchema(c *catalog.Catalog) obj {
	// The events of every hook trigger, then those only people subscribe.
	var events []string
	help := ""
	for _, op := range c.HookTriggers() {
		for _, ev := range op.HookEvents {
			if !slices.Contains(events, ev) {
				events = append(events, ev)
			}
		}
		for _, f := range op.Inputs {
			if f.Key == catalog.HookEventInput {
				help = f.Help + " "
			}
		}
	}
	events = append(events, connector.EventHookDisabled)
	return obj{"type": "object", "required": []string{"target_url"}, "properties": obj{
		"target_url": obj{"type": "string", "format": "uri", "description": "Where events are POSTed."},
		"event": obj{"type": "string", "enum": events, "default": connector.EventJobFinished,
			"description": help + "Also account.credits_low (the balance fell to threshold), batch.finished (every item of a batch ended) and hook.disabled (another hook or a callback URL of the key was disabled)."},
		"threshold": obj{"type": "integer", "format": "int64", "minimum": 0, "default": connector.DefaultCreditsThreshold,
			"description": "With account.credits_low: the balance at or below which it fires (once per crossing)."},
	}}
}

func hookSchema() obj {
	return obj{"type": "object", "properties": obj{
		"id":              obj{"type": "string"},
		"target_url":      obj{"type": "string", "format": "uri"},
		"event":           obj{"type": "string"},
		"created_at":      obj{"type": "string", "format": "date-time"},
		"threshold":       obj{"type": "integer", "format": "int64", "description": "account.credits_low hooks: the balance at or below which it fires."},
		"status":          obj{"type": "string", "enum": []string{connector.HookEnabled, connector.HookDisabled}},
		"disabled":        obj{"type": "boolean", "description": "Set when the hook is disabled: its target answered 410 Gone, or failed every attempt for IMGFLOW_HOOK_DISABLE_AFTER."},
		"disabled_reason": obj{"type": "string", "enum": []string{connector.DisabledGone, connector.DisabledFailing}},
		"disabled_at":     obj{"type": "string", "format": "date-time"},
		"previous_secret_expires_at": obj{"type": "string", "format": "date-time",
			"description": "After a rotation: until then deliveries also carry the previous secret's signature."},
		"secret": obj{"type": "string", "description": "whsec_... signing secret; in every answer to the hook's owner (it is derived, never stored)."},
	}, "example": generic(catalog.SampleHook())}
}

func errorSchema() obj {
	return obj{"type": "object", "required": []string{"error", "code"}, "properties": obj{
		"error": obj{"type": "string", "description": "What went wrong, in words."},
		"code":  obj{"type": "string", "description": "Machine code, such as invalid_input or insufficient_credits."},
		"details": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
			"field":   obj{"type": "string"},
			"message": obj{"type": "string"},
		}}},
		"credits_remaining": obj{"type": "integer", "format": "int64", "description": "With 429."},
		"upstream_status":   obj{"type": "integer", "description": "The HTTP status the compression API answered, when the error is its answer passed on (an unknown key: 401)."},
	}, "example": obj{"error": "image_url: must be an absolute http(s) URL", "code": "invalid_input",
		"details": []any{obj{"field": "image_url", "message": "must be an absolute http(s) URL"}}}}
}

func deliverySchema(ref string) obj {
	return obj{"type": "object", "properties": obj{
		"type":      obj{"type": "string", "enum": []string{connector.EventJobCompleted, connector.EventJobFailed}},
		"timestamp": obj{"type": "string", "format": "date-time"},
		"data":      obj{"$ref": ref + "Job"},
	}}
}

func jobListSchema(ref string) obj {
	return obj{"type": "object", "properties": obj{
		"jobs":        obj{"type": "array", "items": obj{"$ref": ref + "Job"}},
		"next_cursor": obj{"type": "string", "description": "Pass as cursor for the next page; absent on the last."},
	}}
}

func deliveryListSchema() obj {
	return obj{"type": "object", "properties": obj{
		"job_id":     obj{"type": "string"},
		"deliveries": obj{"type": "array", "items": deliveryRecordSchema()},
	}, "example": generic(catalog.SampleDeliveryList())}
}

func deliveryRecordSchema() obj {
	attempt := obj{"type": "object", "properties": obj{
		"attempt":       obj{"type": "integer", "description": "1 for the first attempt at this delivery."},
		"delivery_id":   obj{"type": "string"},
		"hook_id":       obj{"type": "string"},
		"event":         obj{"type": "string"},
		"target":        obj{"type": "string", "description": "The receiver's URL without query string."},
		"redelivery":    obj{"type": "boolean", "description": "Asked for with Redeliver."},
		"at":            obj{"type": "string", "format": "date-time"},
		"duration_ms":   obj{"type": "integer", "format": "int64"},
		"status_code":   obj{"type": "integer", "description": "The receiver's HTTP status; absent when none came back."},
		"response":      obj{"type": "string", "maxLength": connector.MaxResponseSnippet, "description": "The start of the receiver's answer."},
		"error":         obj{"type": "string"},
		"outcome":       obj{"type": "string", "enum": []string{"delivered", "retrying", "failed", "gone", "dropped"}},
		"next_retry_at": obj{"type": "string", "format": "date-time", "description": "When the next scheduled attempt is due."},
	}}
	return obj{"type": "object", "properties": obj{
		"id":         obj{"type": "string", "description": "The webhook-id of every attempt."},
		"job_id":     obj{"type": "string", "description": "In the log across jobs: the job the delivery is about."},
		"message_id": obj{"type": "string", "description": "In the log across jobs: the event (not a job's) the delivery carries."},
		"kind":       obj{"type": "string", "enum": []string{connector.KindCallback, connector.KindHook}},
		"hook_id":    obj{"type": "string"},
		"event":      obj{"type": "string"},
		"target":     obj{"type": "string"},
		"status":     obj{"type": "string", "enum": []string{"pending", "delivered", "failed"}},
		"attempts":   obj{"type": "array", "items": attempt},
	}}
}

func deliveryPageSchema() obj {
	return obj{"type": "object", "properties": obj{
		"deliveries":  obj{"type": "array", "items": deliveryRecordSchema()},
		"next_cursor": obj{"type": "string", "description": "Pass as cursor for the next page; absent on the last."},
	}}
}

// hookEventSchema is what a hook receives: a job event, or one of the
// events that are not a job's.
func hookEventSchema() obj {
	return obj{"type": "object", "properties": obj{
		"type": obj{"type": "string", "enum": []string{connector.EventJobCompleted, connector.EventJobFailed,
			connector.EventHookDisabled, connector.EventHookTest, connector.EventCreditsLow, connector.EventBatchFinished}},
		"timestamp": obj{"type": "string", "format": "date-time"},
		"data": obj{"type": "object", "additionalProperties": true, "description": "job.completed, job.failed: the job (see Job). " +
			"hook.disabled: kind (hook or callback), hook_id, target, reason (gone or failing), message, disabled_at. " +
			"hook.test: hook_id, message. account.credits_low: credits_remaining, threshold, job_id. batch.finished: the batch (see Batch)."},
	}}
}

func hookTestSchema() obj {
	return obj{"type": "object", "properties": obj{
		"delivery_id": obj{"type": "string", "description": "The webhook-id sent."},
		"message_id":  obj{"type": "string"},
		"event":       obj{"type": "string", "enum": []string{connector.EventHookTest}},
		"target":      obj{"type": "string", "description": "The receiver's URL without query string."},
		"status":      obj{"type": "string", "enum": []string{"delivered", "failed"}},
		"status_code": obj{"type": "integer", "description": "The receiver's HTTP status; absent when none came back."},
		"duration_ms": obj{"type": "integer", "format": "int64"},
		"response":    obj{"type": "string", "maxLength": connector.MaxResponseSnippet, "description": "The start of the receiver's answer."},
		"error":       obj{"type": "string"},
	}}
}

func recoverRequestSchema() obj {
	return obj{"type": "object", "required": []string{"since"}, "properties": obj{
		"since": obj{"type": "string", "format": "date-time", "description": "RFC 3339: deliveries first attempted since then that ended failed are sent again."},
	}}
}

func recoverySchema() obj {
	return obj{"type": "object", "properties": obj{
		"queued": obj{"type": "integer", "description": "Deliveries queued for one more attempt each."},
		"since":  obj{"type": "string", "format": "date-time"},
	}}
}

func secretRotationSchema() obj {
	return obj{"type": "object", "properties": obj{
		"webhook_secret":             obj{"type": "string", "description": "The new whsec_... secret that signs the key's callbacks."},
		"previous_secret_expires_at": obj{"type": "string", "format": "date-time", "description": "Until then callbacks also carry the previous secret's signature."},
	}}
}

func redeliverySchema() obj {
	return obj{"type": "object", "properties": obj{
		"delivery_id": obj{"type": "string"},
		"status":      obj{"type": "string", "enum": []string{"queued"}},
	}}
}

// eventTypes is every event a callback or hook receives, each with its
// schema: the list GET /v1/event-types serves (from the OpenAPI document's
// x-imgflow-event-types, so both say the same).
func eventTypes(ref string) []any {
	event := func(typ, desc string, data obj) obj {
		return obj{"type": typ, "description": desc, "schema": obj{"type": "object", "required": []string{"type", "timestamp", "data"},
			"properties": obj{
				"type":      obj{"type": "string", "enum": []string{typ}},
				"timestamp": obj{"type": "string", "format": "date-time"},
				"data":      data,
			}}}
	}
	str, when := obj{"type": "string"}, obj{"type": "string", "format": "date-time"}
	return []any{
		event(connector.EventJobCompleted, "A job completed: to its callback_url and to hooks of job.completed or job.finished.", obj{"$ref": ref + "Job"}),
		event(connector.EventJobFailed, "A job failed: to its callback_url and to hooks of job.failed or job.finished.", obj{"$ref": ref + "Job"}),
		event(connector.EventHookDisabled, "A hook or a callback URL of the key was disabled (410 Gone, or failing for IMGFLOW_HOOK_DISABLE_AFTER): to hooks of hook.disabled.",
			obj{"type": "object", "properties": obj{
				"kind": obj{"type": "string", "enum": []string{connector.KindHook, connector.KindCallback}}, "hook_id": str,
				"target": str, "reason": obj{"type": "string", "enum": []string{connector.DisabledGone, connector.DisabledFailing}},
				"message": str, "disabled_at": when}}),
		event(connector.EventHookTest, "Sent by POST /v1/hooks/{id}/test to that hook.",
			obj{"type": "object", "properties": obj{"hook_id": str, "message": str}}),
		event(connector.EventCreditsLow, "A job's answer took the balance to or below the hook's threshold (once per crossing): to hooks of account.credits_low.",
			obj{"type": "object", "properties": obj{"credits_remaining": obj{"type": "integer", "format": "int64"},
				"threshold": obj{"type": "integer", "format": "int64"}, "job_id": str}}),
		event(connector.EventBatchFinished, "Every item of a batch ended: once, to the batch's callback_url and to hooks of batch.finished.", obj{"$ref": ref + "Batch"}),
	}
}

func eventTypeListSchema() obj {
	return obj{"type": "object", "properties": obj{"event_types": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
		"type":        obj{"type": "string"},
		"description": obj{"type": "string"},
		"schema":      obj{"type": "object", "additionalProperties": true, "description": "JSON schema of the event's body, self-contained."},
	}}}}}
}

// exampleOf is f's example in its schema's type: a number field's as a
// JSON number.
func exampleOf(f catalog.Field) any {
	if f.Type == catalog.FieldNumber || f.Type == catalog.FieldInteger {
		if n, err := strconv.ParseFloat(f.Example, 64); err == nil {
			return n
		}
	}
	return f.Example
}

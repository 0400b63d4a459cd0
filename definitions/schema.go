package definitions

import (
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// JSON schemas of the API's bodies, built from the catalog's fields so that
// OpenAPI and Power Automate describe what the platforms show. refPrefix is
// "#/components/schemas/" (OpenAPI 3) or "#/definitions/" (Swagger 2).

func typeSchema(t connector.FieldType) obj {
	switch t {
	case connector.FieldString, connector.FieldText:
		return obj{"type": "string"}
	case connector.FieldFile:
		return obj{"type": "string", "format": "uri"}
	case connector.FieldDateTime:
		return obj{"type": "string", "format": "date-time"}
	case connector.FieldInteger:
		return obj{"type": "integer", "format": "int64"}
	case connector.FieldNumber:
		return obj{"type": "number"}
	case connector.FieldBoolean:
		return obj{"type": "boolean"}
	}
	return obj{"type": "object", "additionalProperties": true}
}

// outputsSchema nests dotted output keys into objects; each property carries
// the output's label as title and its help as description.
func outputsSchema(outputs []connector.OutputField, example any) obj {
	root := obj{"type": "object", "properties": obj{}}
	for _, o := range outputs {
		s := typeSchema(o.Type)
		s["title"] = o.Label
		s["description"] = o.Help
		node := root
		parts := strings.Split(o.Key, ".")
		for _, p := range parts[:len(parts)-1] {
			props := node["properties"].(obj)
			child, ok := props[p].(obj)
			if !ok {
				child = obj{"type": "object", "properties": obj{}}
				props[p] = child
			}
			node = child
		}
		node["properties"].(obj)[parts[len(parts)-1]] = s
	}
	if example != nil {
		root["example"] = generic(example)
	}
	return root
}

// jobSchema describes a job; compressed_data (added by ?include=data) is
// not a platform output, so it is added here.
func jobSchema(c *connector.Catalog) obj {
	s := outputsSchema(c.Operation("get_job").Outputs, connector.SampleJob())
	result := s["properties"].(obj)["result"].(obj)
	result["properties"].(obj)["compressed_data"] = obj{"type": "string", "format": "byte",
		"description": "The compressed image, base64; only with ?include=data."}
	s["properties"].(obj)["dedupe"] = obj{"type": "boolean",
		"description": "The request's dedupe field, when it sent one (false: compressed even if an identical result was stored)."}
	errProps := s["properties"].(obj)["error"].(obj)["properties"].(obj)
	errProps["credits_remaining"] = obj{"type": "integer", "format": "int64",
		"description": "Credits left, with insufficient_credits."}
	return s
}

// jobRequestSchema describes the JSON body of POST /v1/jobs.
func jobRequestSchema(c *connector.Catalog) obj {
	props := obj{}
	for _, f := range c.Operation("compress_image").Inputs {
		s := typeSchema(f.Type)
		s["title"] = f.Label
		s["description"] = f.Help
		if f.Example != "" && f.Type != connector.FieldObject {
			s["example"] = f.Example
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
	return obj{"type": "object", "properties": props,
		"description": "Exactly one of image_url and image_base64."}
}

// fileContentSchema is Power Automate's file content.
func fileContentSchema() obj {
	return obj{"type": "object", "required": []string{"$content"}, "properties": obj{
		"$content-type": obj{"type": "string", "description": "The file's media type, such as image/png; must match the bytes."},
		"$content":      obj{"type": "string", "format": "byte", "description": "The file, base64."},
	}}
}

// imageCheckSchema describes a dry run's answer (Check Image).
func imageCheckSchema(c *connector.Catalog) obj {
	op := c.Operation("check_image")
	return outputsSchema(op.Outputs, op.Sample)
}

func accountSchema(c *connector.Catalog) obj {
	return outputsSchema(c.Auth.TestOutputs, c.Auth.TestSample)
}

func hookRequestSchema(c *connector.Catalog) obj {
	ev := firstOfKind(c, connector.KindHookTrigger).Inputs[0]
	return obj{"type": "object", "required": []string{"target_url"}, "properties": obj{
		"target_url": obj{"type": "string", "format": "uri", "description": "Where finished jobs are POSTed."},
		"event":      obj{"type": "string", "enum": ev.Choices, "default": connector.EventJobFinished, "description": ev.Help},
	}}
}

func hookSchema() obj {
	return obj{"type": "object", "properties": obj{
		"id":         obj{"type": "string"},
		"target_url": obj{"type": "string", "format": "uri"},
		"event":      obj{"type": "string"},
		"created_at": obj{"type": "string", "format": "date-time"},
		"disabled":   obj{"type": "boolean", "description": "Set when a delivery got 410 Gone."},
		"secret":     obj{"type": "string", "description": "whsec_... signing secret; in every answer to the hook's owner (it is derived, never stored)."},
	}, "example": generic(connector.SampleHook())}
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
	delivery := obj{"type": "object", "properties": obj{
		"id":       obj{"type": "string", "description": "The webhook-id of every attempt."},
		"kind":     obj{"type": "string", "enum": []string{connector.KindCallback, connector.KindHook}},
		"hook_id":  obj{"type": "string"},
		"event":    obj{"type": "string"},
		"target":   obj{"type": "string"},
		"status":   obj{"type": "string", "enum": []string{"pending", "delivered", "failed"}},
		"attempts": obj{"type": "array", "items": attempt},
	}}
	return obj{"type": "object", "properties": obj{
		"job_id":     obj{"type": "string"},
		"deliveries": obj{"type": "array", "items": delivery},
	}, "example": generic(connector.SampleDeliveryList())}
}

func redeliverySchema() obj {
	return obj{"type": "object", "properties": obj{
		"delivery_id": obj{"type": "string"},
		"status":      obj{"type": "string", "enum": []string{"queued"}},
	}}
}

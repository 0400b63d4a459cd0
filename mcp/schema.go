package mcp

import (
	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// JSON Schemas of the tools, from the catalog's fields. Output schemas use
// one type per property and no "format" or $ref: clients validate
// structuredContent against them (a format one of them does not know would
// fail a correct answer), and Copilot Studio takes single types only. So
// structuredContent leaves out the nulls the REST answers carry for facts
// not known (structured).

type obj = map[string]any

// fieldSchema is one input field's schema: its type as JSON Schema states
// it, the label and help, the choices, and a default of its own type.
func fieldSchema(f catalog.Field) obj {
	s := f.Type.Schema(catalog.SchemaJSON)
	if f.Type == catalog.FieldList {
		s["items"] = inputObject(f.Fields)
	}
	// The argument's name says what the label would: no title, so the
	// list stays small.
	if help := modelHelp[f.Key]; help != "" {
		s["description"] = help
	} else if f.Help != "" {
		s["description"] = f.Help
	}
	for k, v := range bounds[f.Key] {
		s[k] = v
	}
	if len(f.Choices) > 0 {
		s["enum"] = f.Choices
	}
	if f.Default != "" {
		switch f.Type {
		case catalog.FieldBoolean:
			s["default"] = f.Default == "true"
		case catalog.FieldString, catalog.FieldText:
			s["default"] = f.Default
		}
	}
	return s
}

// inputObject is an object of fields; required ones are listed.
func inputObject(fields []catalog.Field) obj {
	props := obj{}
	var required []string
	for _, f := range fields {
		if notForModels[f.Key] {
			continue
		}
		props[f.Key] = fieldSchema(f)
		if f.Required {
			required = append(required, f.Key)
		}
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// outputSchema is the object the outputs describe, one type per property
// (the header says why), compact: types only, the texts left to the
// input schema and the answer's own text.
func outputSchema(outputs []catalog.OutputField) obj {
	return shallow(compact(catalog.OutputsSchema(outputs, catalog.SchemaTypeOnly)).(obj), 0)
}

// shallow keeps an output schema's members one level deep (a job's
// status, id, result...); deeper objects are stated as objects only.
func shallow(s obj, depth int) obj {
	if depth >= 1 {
		out := obj{"type": s["type"]}
		if s["type"] == "array" {
			out["items"] = obj{"type": "object"}
		}
		return out
	}
	if props, ok := s["properties"].(obj); ok {
		for k, p := range props {
			if ps, ok := p.(obj); ok {
				props[k] = shallow(ps, depth+1)
			}
		}
	}
	if items, ok := s["items"].(obj); ok {
		s["items"] = shallow(items, depth)
	}
	return s
}

// compact drops titles, descriptions and examples from a schema, keeping
// its types and shape.
func compact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := obj{}
		for k, e := range t {
			switch k {
			case "title", "description", "examples", "example":
				continue
			}
			out[k] = compact(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = compact(e)
		}
		return out
	}
	return v
}

// modelHelp is an argument's description where the catalog's help speaks
// to a flow builder (steps, platforms, form labels) rather than to a model.
var modelHelp = map[string]string{
	"image_url":        "http(s) URL of the PNG, JPEG, WebP or AVIF image (up to 10 MiB); also a data: URI or an upload handle. Give one of image_url, image_base64, upload.",
	"image_base64":     "The image's bytes in base64 (or a data: URI), for small images only: the bytes pass through your output. Give one of image_url, image_base64, upload.",
	"items":            "The images, 1 to 1,000, each with one of image_url, image_base64 or upload, and optionally filename and metadata.",
	"upload":           "A handle from prepare_upload, after its bytes were PUT. Give one of image_url, image_base64, upload.",
	"idempotency_key":  "Any unique string: a retry with the same key and arguments returns the same job, never charged twice.",
	"wait_seconds":     "Seconds to wait for the result (default 25); a job still running comes back with its status.",
	"dedupe":           "Reuse this key's earlier result for the same image and options at no credit (default true).",
	"resize":           "Pixels: 1600x (width), x900 (height) or 400x400 (a box, see resize_method). Never enlarges unless resize_enlarge.",
	"resize_method":    "scale (one side), fit (inside the box) or cover (fills the box, cropped). Default scale for one side, fit for a box.",
	"resize_enlarge":   "Allow it to get bigger (default false).",
	"convert":          "The result's format: webp or avif for the web, jpeg for email; default the image's own.",
	"background":       "#rrggbb filling transparency when converting to jpeg (default white).",
	"preserve":         "Metadata to keep, comma-separated: copyright, creation (date taken), location (GPS). Default none.",
	"target_max_bytes": "Fit under: 100KB, 2MB, bytes.",
	"target_min_score": "Least SSIMULACRA2 score, 0-100 (70: good).",
	"filename":         "Name of the compressed file, such as photo.jpg (default: the name in the URL).",
	"preview":          "Also return a thumbnail (at most 256 pixels) as image content.",
	"metadata":         "Your own key/value pairs (such as a record id), returned unchanged on the job.",
	"id":               "The job's id, as compress_image, compress_many or list_jobs returned it.",
	"status":           "Only jobs with this status: queued, processing (running), completed or failed. Leave out for every job.",
}

// notForModels are form fields a model does without, keeping tools/list
// small: target_allow_resize's default (true) is what a model asking for
// a size wants.
var notForModels = map[string]bool{"target_allow_resize": true}

// bounds are the limits of arguments the API enforces, stated in the
// schema so that a model keeps within them.
var bounds = map[string]obj{
	"image_url":       {"maxLength": 4096},
	"filename":        {"maxLength": 255},
	"idempotency_key": {"minLength": 1, "maxLength": 255},
	"wait_seconds":    {"minimum": 0, "maximum": maxWaitSeconds},
	"limit":           {"minimum": 1, "maximum": 100},
	"items":           {"minItems": 1, "maxItems": connector.MaxBatchItems},
	"upload":          {"maxLength": 512},
	"id":              {"minLength": 1, "maxLength": 64},
	"background":      {"pattern": "^#[0-9a-fA-F]{6}$"},
	"resize":          {"maxLength": 32},
}

// errorOutput is the "error" member every tool's structuredContent may
// carry on a tool error: code, message, details (field and message),
// credits_remaining and retry_after, as a failed job's error; stated as an
// object only, so that tools/list stays small.
func errorOutput() obj { return obj{"type": "object"} }

package mcp

import "github.com/imgflow/imgflow/catalog"

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
	if f.Label != "" {
		s["title"] = f.Label
	}
	if f.Help != "" {
		s["description"] = f.Help
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
// (the header says why).
func outputSchema(outputs []catalog.OutputField) obj {
	return catalog.OutputsSchema(outputs, catalog.SchemaTypeOnly)
}

// errorOutput is the "error" member every tool's structuredContent may
// carry on a tool error: the REST error's code and text, the same shape as
// a failed job's error.
func errorOutput() obj {
	str := obj{"type": "string"}
	return obj{"type": "object", "description": "Set on a tool error (isError): the REST API's error code, message and field details.",
		"properties": obj{
			"code":              obj{"type": "string", "description": "The REST API's error code, such as invalid_input, unsupported_format or insufficient_credits."},
			"message":           str,
			"details":           obj{"type": "array", "items": obj{"type": "object", "properties": obj{"field": str, "message": str}}},
			"credits_remaining": obj{"type": "integer"},
			"retry_after":       obj{"type": "integer", "description": "Seconds to wait before trying again, when the error is temporary."},
		}}
}

package mcp

import (
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// JSON Schemas of the tools, from the catalog's fields. Output schemas use
// one type per property and no "format" or $ref: clients validate
// structuredContent against them (a format one of them does not know would
// fail a correct answer), and Copilot Studio takes single types only. So
// structuredContent leaves out the nulls the REST answers carry for facts
// not known (structured).

type obj = map[string]any

// fieldSchema is one input field's schema.
func fieldSchema(f catalog.Field) obj {
	var s obj
	switch f.Type {
	case catalog.FieldInteger:
		s = obj{"type": "integer"}
	case catalog.FieldNumber:
		s = obj{"type": "number"}
	case catalog.FieldBoolean:
		s = obj{"type": "boolean"}
	case catalog.FieldObject:
		s = obj{"type": "object", "additionalProperties": true}
	case catalog.FieldList:
		s = obj{"type": "array", "items": inputObject(f.Fields)}
	case catalog.FieldFile:
		s = obj{"type": "string", "format": "uri"}
	case catalog.FieldDateTime:
		s = obj{"type": "string", "format": "date-time"}
	default:
		s = obj{"type": "string"}
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

// outputSchema nests dotted output keys into objects, as the REST answers
// them.
func outputSchema(outputs []catalog.OutputField) obj {
	root := obj{"type": "object", "properties": obj{}}
	for _, o := range outputs {
		s := leafSchema(o)
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
	return root
}

func leafSchema(o catalog.OutputField) obj {
	var s obj
	switch o.Type {
	case catalog.FieldInteger:
		s = obj{"type": "integer"}
	case catalog.FieldNumber:
		s = obj{"type": "number"}
	case catalog.FieldBoolean:
		s = obj{"type": "boolean"}
	case catalog.FieldObject:
		s = obj{"type": "object"}
	case catalog.FieldList:
		s = obj{"type": "array", "items": outputSchema(o.Fields)}
	default:
		s = obj{"type": "string"}
	}
	if o.Label != "" {
		s["title"] = o.Label
	}
	if o.Help != "" {
		s["description"] = o.Help
	}
	return s
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

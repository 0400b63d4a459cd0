package catalog

import "strings"

// The catalog's fields as JSON Schema: the one core that OpenAPI, Power
// Automate and the MCP tools build their schemas on. What each adds around
// it (titles or x-ms-summary, examples, enums, defaults) is the platform's
// own and stays with its renderer; how precisely a type is stated depends
// on who reads the schema, which the SchemaDialect says.

// Schema is a JSON Schema (or an OpenAPI or Swagger schema object) as maps,
// ready to encode.
type Schema = map[string]any

// SchemaDialect is what the reader of a schema understands beyond "type".
type SchemaDialect int

const (
	// SchemaOpenAPI states every format OpenAPI and Swagger know: uri for
	// files, date-time for datetimes, int64 for integers; an object field
	// takes any properties (additionalProperties: true).
	SchemaOpenAPI SchemaDialect = iota
	// SchemaJSON states the formats JSON Schema itself defines (uri,
	// date-time; int64 is OpenAPI's); an object field takes any properties.
	// The MCP tools' inputs.
	SchemaJSON
	// SchemaTypeOnly states one type and nothing else: clients validate
	// MCP tools' structured results against it, and a format one of them
	// does not know would fail a correct answer.
	SchemaTypeOnly
)

// Schema is the JSON Schema of a value of type t. A list is an array whose
// items the caller gives: records of input fields and of outputs differ.
func (t FieldType) Schema(d SchemaDialect) Schema {
	formats := d != SchemaTypeOnly
	switch t {
	case FieldInteger:
		if d == SchemaOpenAPI {
			return Schema{"type": "integer", "format": "int64"}
		}
		return Schema{"type": "integer"}
	case FieldNumber:
		return Schema{"type": "number"}
	case FieldBoolean:
		return Schema{"type": "boolean"}
	case FieldObject:
		if formats {
			return Schema{"type": "object", "additionalProperties": true}
		}
		return Schema{"type": "object"}
	case FieldList:
		return Schema{"type": "array"}
	case FieldFile:
		if formats {
			return Schema{"type": "string", "format": "uri"}
		}
	case FieldDateTime:
		if formats {
			return Schema{"type": "string", "format": "date-time"}
		}
	}
	return Schema{"type": "string"}
}

// OutputsSchema is the object the outputs describe, their dotted keys
// nested into objects as the API answers them. Each output carries its
// label as title and its help as description; a list's items are the
// object of its own outputs.
func OutputsSchema(outputs []OutputField, d SchemaDialect) Schema {
	root := Schema{"type": "object", "properties": Schema{}}
	for _, o := range outputs {
		s := o.Type.Schema(d)
		if o.Type == FieldList {
			s["items"] = OutputsSchema(o.Fields, d)
		}
		if o.Label != "" {
			s["title"] = o.Label
		}
		if o.Help != "" {
			s["description"] = o.Help
		}
		node := root
		parts := strings.Split(o.Key, ".")
		for _, p := range parts[:len(parts)-1] {
			props := node["properties"].(Schema)
			child, ok := props[p].(Schema)
			if !ok {
				child = Schema{"type": "object", "properties": Schema{}}
				props[p] = child
			}
			node = child
		}
		node["properties"].(Schema)[parts[len(parts)-1]] = s
	}
	return root
}

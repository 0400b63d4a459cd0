package catalog

import (
	"strings"
	"testing"
)

// Each reader gets the types it can check: OpenAPI every format it knows,
// JSON Schema readers (MCP tool inputs) no int64, and MCP structured
// results a bare type, which no client can fail a correct answer on.
func TestFieldTypesAreStatedAsEachSchemaReaderTakesThem(t *testing.T) {
	want := map[FieldType][3]string{ // SchemaOpenAPI, SchemaJSON, SchemaTypeOnly
		FieldString:   {`{"type":"string"}`, `{"type":"string"}`, `{"type":"string"}`},
		FieldText:     {`{"type":"string"}`, `{"type":"string"}`, `{"type":"string"}`},
		FieldInteger:  {`{"format":"int64","type":"integer"}`, `{"type":"integer"}`, `{"type":"integer"}`},
		FieldNumber:   {`{"type":"number"}`, `{"type":"number"}`, `{"type":"number"}`},
		FieldBoolean:  {`{"type":"boolean"}`, `{"type":"boolean"}`, `{"type":"boolean"}`},
		FieldDateTime: {`{"format":"date-time","type":"string"}`, `{"format":"date-time","type":"string"}`, `{"type":"string"}`},
		FieldFile:     {`{"format":"uri","type":"string"}`, `{"format":"uri","type":"string"}`, `{"type":"string"}`},
		FieldObject:   {`{"additionalProperties":true,"type":"object"}`, `{"additionalProperties":true,"type":"object"}`, `{"type":"object"}`},
		FieldList:     {`{"type":"array"}`, `{"type":"array"}`, `{"type":"array"}`},
	}
	for typ, byDialect := range want {
		for d, w := range byDialect {
			if got := string(encode(t, typ.Schema(SchemaDialect(d)))); got != w {
				t.Errorf("%s in dialect %d: %s, want %s", typ, d, got, w)
			}
		}
	}
}

// Dotted output keys become nested objects, as the API answers them, and
// a list's items are the object of its own outputs.
func TestOutputsSchemaNestsDottedKeysAndDescribesListItems(t *testing.T) {
	s := OutputsSchema([]OutputField{
		{Key: "id", Label: "ID", Help: "The id.", Type: FieldString},
		{Key: "result.size", Label: "Size", Help: "Bytes.", Type: FieldInteger},
		{Key: "result.url", Label: "URL", Help: "Where.", Type: FieldFile},
		{Key: "jobs", Label: "Jobs", Help: "Each job.", Type: FieldList, Fields: []OutputField{
			{Key: "error.code", Label: "Code", Help: "Why.", Type: FieldString},
		}},
	}, SchemaTypeOnly)
	want := `{"properties":{` +
		`"id":{"description":"The id.","title":"ID","type":"string"},` +
		`"jobs":{"description":"Each job.","items":{"properties":{"error":{"properties":{"code":{"description":"Why.","title":"Code","type":"string"}},"type":"object"}},"type":"object"},"title":"Jobs","type":"array"},` +
		`"result":{"properties":{"size":{"description":"Bytes.","title":"Size","type":"integer"},"url":{"description":"Where.","title":"URL","type":"string"}},"type":"object"}` +
		`},"type":"object"}`
	if got := string(encode(t, s)); got != want {
		t.Errorf("outputs schema\n got %s\nwant %s", got, want)
	}
}

// Every output of the catalog is where its dotted key says in the schema
// that OpenAPI and the MCP tools describe the answer with.
func TestEveryOutputHasItsPlaceInTheOutputsSchema(t *testing.T) {
	c := Default()
	for _, op := range append(c.Operations(), c.Manage...) {
		for _, d := range []SchemaDialect{SchemaOpenAPI, SchemaTypeOnly} {
			s := decode(t, OutputsSchema(op.Outputs, d))
			for _, o := range op.Outputs {
				path := "properties." + strings.ReplaceAll(o.Key, ".", ".properties.")
				got, ok := OutputValue(s, path)
				leaf, _ := got.(map[string]any)
				if !ok || leaf["title"] != o.Label || leaf["description"] != o.Help {
					t.Errorf("%s (dialect %d): %s at %s = %v; want its label and help", op.Key, d, o.Key, path, got)
				}
			}
		}
	}
}

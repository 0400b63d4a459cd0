package definitions

import (
	"sort"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// Power Automate's side of list fields (Compress Many): a list input is a
// body property of type array whose items are objects, which the flow
// designer shows as a list to add items to or, switched to "entire array",
// takes an array from an earlier action (Select, a SharePoint list).

// paListInput makes a list field's schema an array of records.
func paListInput(f catalog.Field, s obj) {
	if f.Type != catalog.FieldList {
		return
	}
	props := obj{}
	for _, child := range f.Fields {
		cs := child.Type.Schema(catalog.SchemaOpenAPI)
		if child.Type == catalog.FieldFile {
			cs = obj{"type": "string"}
		}
		cs["x-ms-summary"] = child.Label
		cs["description"] = child.Help
		props[child.Key] = cs
	}
	for k := range s {
		delete(s, k)
	}
	s["type"] = "array"
	s["minItems"] = 1
	s["maxItems"] = connector.MaxBatchItems
	s["items"] = obj{"type": "object", "properties": props}
}

// paFixedQuery is the operation's fixed query as internal parameters: the
// flow never shows them, the connector always sends them.
func paFixedQuery(op *catalog.Operation) []any {
	keys := make([]string, 0, len(op.Query))
	for k := range op.Query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []any
	for _, k := range keys {
		p := obj{"name": k, "in": "query", "type": "string", "required": true,
			"default": op.Query[k], "enum": []string{op.Query[k]}, "x-ms-visibility": "internal",
			"x-ms-summary": labelOf(k), "description": "Fixed: " + k + "=" + op.Query[k] + "."}
		if k == "wait" {
			p = obj{"name": k, "in": "query", "type": "integer", "required": false, "default": catalog.DefaultWait,
				"x-ms-visibility": "internal", "x-ms-summary": "Wait (seconds)", "description": "Seconds to wait before answering 202."}
		}
		out = append(out, p)
	}
	return out
}

// paBatchSchema is the batch with its jobs as Power Automate shows it:
// every property named, the jobs an array an Apply to each goes through.
func paBatchSchema(op *catalog.Operation) obj {
	s := outputsSchema(op.Outputs, op.Sample)
	paSummaries(s)
	for _, key := range []string{"id", "status", "jobs", "links.archive"} {
		if p := schemaProperty(s, key); p != nil {
			p["x-ms-visibility"] = "important"
		}
	}
	return s
}

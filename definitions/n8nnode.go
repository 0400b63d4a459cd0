package definitions

import (
	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// N8nNodeCatalogPath is where the n8n community node package reads the
// catalog from, relative to the definitions folder. The node builds its
// operations, fields and requests from this file, so a field added to
// catalog.Catalog reaches the node with no change to its TypeScript.
const N8nNodeCatalogPath = "n8n-nodes-imgflow/nodes/Imgflow/catalog.json"

// N8nNodeCatalog renders the catalog as the JSON the n8n node imports:
// every operation with its route and input fields, the auth header and test
// request, and the limits the node enforces before sending. It does not
// depend on a base URL: the node's credential holds that.
func N8nNodeCatalog() ([]byte, error) {
	c := catalog.Default()
	ops := make([]any, 0, len(c.Operations()))
	for _, op := range c.Operations() {
		query := obj{}
		for k, v := range op.Query {
			query[k] = v
		}
		outputs := n8nNodeOutputs(op.Outputs)
		ops = append(ops, obj{
			"key":         op.Key,
			"noun":        op.Noun,
			"label":       op.Label,
			"description": op.Description,
			"help":        op.Help,
			"kind":        string(op.Kind),
			"method":      op.Method,
			"path":        op.Path,
			"query":       query,
			"inputs":      n8nNodeFields(op.Inputs),
			"outputs":     outputs,
			"hookEvents":  append([]string{}, op.HookEvents...), // none but for hook triggers
		})
	}
	doc := obj{
		"$comment":    "Generated from catalog.Default() by definitions/n8nnode.go; do not edit. Regenerate: go run . definitions --out definitions",
		"name":        c.Name,
		"description": c.Description,
		"auth": obj{
			"header":     c.Auth.Header,
			"testMethod": c.Auth.TestMethod,
			"testPath":   c.Auth.TestPath,
			"fields":     n8nNodeFields(c.Auth.Fields),
		},
		"hooks":      obj{"create": catalog.HooksPath, "delete": catalog.HookPath},
		"limits":     obj{"maxImageSize": connector.MaxImageSize, "maxWait": catalog.DefaultWait, "maxBatchItems": connector.MaxBatchItems, "maxBatchBody": connector.MaxBatchJSONBody},
		"operations": ops,
	}
	return encodeJSON(doc)
}

func n8nNodeFields(fields []catalog.Field) []any {
	out := make([]any, 0, len(fields))
	for _, f := range fields {
		in := f.In
		if in == "" {
			in = catalog.InBody
		}
		choices := f.Choices
		if choices == nil {
			choices = []string{}
		}
		field := obj{
			"key":      f.Key,
			"label":    f.Label,
			"help":     f.Help,
			"type":     string(f.Type),
			"required": f.Required,
			"in":       in,
			"choices":  choices,
			"default":  f.Default,
			"example":  f.Example,
		}
		if f.Type == catalog.FieldList {
			field["fields"] = n8nNodeFields(f.Fields) // each record's
		}
		out = append(out, field)
	}
	return out
}

func n8nNodeOutputs(outputs []catalog.OutputField) []any {
	out := make([]any, 0, len(outputs))
	for _, o := range outputs {
		output := obj{"key": o.Key, "label": o.Label, "type": string(o.Type)}
		if o.Type == catalog.FieldList {
			output["fields"] = n8nNodeOutputs(o.Fields)
		}
		out = append(out, output)
	}
	return out
}

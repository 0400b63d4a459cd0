package definitions

import (
	"sort"
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// Power Automate moves files as file content ({"$content-type",
// "$content"}, base64 on the wire). A custom connector's property of type
// string, format byte is file content: a flow maps a file from any earlier
// action into it, and a later action takes such an output as a file.

// paFileInput makes the operation's base64 input its file input: file
// content in, labelled for the catalog's upload. Power Automate sends it
// base64; the API also takes the {"$content-type","$content"} object an
// expression passes on as it is.
func paFileInput(op *catalog.Operation, f catalog.Field, s, desc obj) {
	if op.Upload == nil || f.Key != "image_base64" {
		return
	}
	s["format"] = "byte"
	desc["x-ms-summary"] = op.Upload.Label
	desc["description"] = op.Upload.Help + " File content from an earlier action (Get file content, an email attachment); base64 text works too."
	desc["x-ms-visibility"] = "important"
}

// paFileQuery adds the query that makes the answer carry the file, fixed
// (internal), replacing an input of the same name in params.
func paFileQuery(op *catalog.Operation, params []any) []any {
	if op.File == nil {
		return params
	}
	var out []any
	for _, p := range params {
		if _, fixed := op.File.DataQuery[p.(obj)["name"].(string)]; !fixed {
			out = append(out, p)
		}
	}
	keys := make([]string, 0, len(op.File.DataQuery))
	for k := range op.File.DataQuery {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, obj{"name": k, "in": "query", "type": "string", "required": true,
			"default": op.File.DataQuery[k], "enum": []string{op.File.DataQuery[k]},
			"x-ms-visibility": "internal", "x-ms-summary": "Include",
			"description": "Answer with the compressed file as file content."})
	}
	return out
}

// paJobSchema is the job as Power Automate shows it: every property named
// by x-ms-summary, the compressed file (result.compressed_data) as file
// content beside its name and content type, and those promoted.
func paJobSchema(c *catalog.Catalog, f *catalog.FileOutput) obj {
	s := jobSchema(c)
	paSummaries(s)
	if f == nil {
		return s
	}
	important := []string{f.IDKey, "status", f.NameKey, f.TypeKey, f.DataKey, "result.file_url"}
	for _, key := range important {
		if p := schemaProperty(s, key); p != nil {
			p["x-ms-visibility"] = "important"
		}
	}
	if p := schemaProperty(s, f.DataKey); p != nil {
		p["x-ms-summary"] = f.Label + " (File Content)"
		p["description"] = f.Help + " Power Automate file content; its name is " + f.NameKey + ", its content type " + f.TypeKey + "."
	}
	return s
}

// paSummaries copies each property's title (the catalog's label) to
// x-ms-summary, or derives one from its name.
func paSummaries(s obj) {
	props, _ := s["properties"].(obj)
	for name, p := range props {
		p := p.(obj)
		if _, ok := p["x-ms-summary"]; !ok {
			if title, ok := p["title"].(string); ok {
				p["x-ms-summary"] = title
			} else {
				p["x-ms-summary"] = labelOf(name)
			}
		}
		paSummaries(p)
		if items, ok := p["items"].(obj); ok {
			paSummaries(items)
		}
	}
}

// labelOf is a property name as a label: "compressed_data" -> "Compressed Data".
func labelOf(name string) string {
	words := strings.Split(name, "_")
	for i, w := range words {
		words[i] = upperFirst(w)
	}
	return strings.Join(words, " ")
}

// schemaProperty finds a dotted property in an object schema.
func schemaProperty(s obj, key string) obj {
	node := s
	for _, part := range strings.Split(key, ".") {
		props, _ := node["properties"].(obj)
		next, ok := props[part].(obj)
		if !ok {
			return nil
		}
		node = next
	}
	return node
}

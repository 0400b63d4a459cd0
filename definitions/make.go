package definitions

import (
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// renderMake renders the catalog as the IML files of a Make custom app: the
// base, the connection and its test, one module per action, and an
// instant trigger per hook trigger with a webhook that attaches and
// detaches itself on /v1/hooks. Names follow the schema mapping of the Make apps SDK
// (component.kind.iml.json).
func renderMake(c *catalog.Catalog, base string) ([]File, error) {
	var files []File
	add := func(name string, v any) {
		files = append(files, File{Platform: "make", Name: name, Data: must(encodeJSON(v))})
	}
	add("base.iml.json", obj{
		"baseUrl": base,
		"headers": obj{c.Auth.Header: "{{connection.apiKey}}"},
		"response": obj{
			"error": obj{"message": "[{{statusCode}}] {{body.error}} ({{body.code}})"},
		},
		"log": obj{"sanitize": []string{"request.headers." + strings.ToLower(c.Auth.Header)}},
	})

	// The connection: its parameter and the test request.
	var connParams []any
	for _, f := range c.Auth.Fields {
		connParams = append(connParams, obj{"name": "apiKey", "label": f.Label, "help": f.Help, "type": "password", "required": true})
	}
	add("connection-imgflow.params.iml.json", connParams)
	add("connection-imgflow.communication.iml.json", obj{
		"url":     base + c.Auth.TestPath,
		"method":  c.Auth.TestMethod,
		"headers": obj{c.Auth.Header: "{{parameters.apiKey}}"},
		"log":     obj{"sanitize": []string{"request.headers." + strings.ToLower(c.Auth.Header)}},
		"response": obj{
			"valid":    "{{body.valid}}",
			"metadata": obj{"type": "text", "value": makeCurlies(c.Auth.ConnectionLabel, "body.")},
			"error":    obj{"message": "[{{statusCode}}] {{body.error}}"},
		},
	})

	for _, key := range []string{"compress_image", "get_job", "check_account", "check_image", "compress_many", "compress_variants"} {
		op := c.Operation(key)
		name := "module-" + camel(op.Key)
		add(name+".communication.iml.json", makeCommunication(op))
		add(name+".mappable-params.iml.json", makeModuleParams(op))
		add(name+".interface.iml.json", makeModuleInterface(op))
		add(name+".samples.iml.json", makeSample(op))
	}

	// An instant trigger and its webhook per hook trigger.
	for _, hook := range c.HookTriggers() {
		hook := hook
		webhook := "webhook-" + camel(hook.Key)
		params := makeParams(hook.Inputs)
		for i, f := range hook.Inputs {
			if d := typedDefault(f); d != nil {
				params[i].(obj)["default"] = d
			}
		}
		add(webhook+".params.iml.json", params)
		add(webhook+".attach.iml.json", obj{
			"url":    catalog.HooksPath,
			"method": hook.Method,
			// Empty optional inputs become undefined, which Make leaves out.
			"body": hookSubscribeBody(&hook, "{{webhook.url}}", func(f catalog.Field) any {
				if f.Required {
					return "{{parameters." + f.Key + "}}"
				}
				return "{{ifempty(parameters." + f.Key + "; undefined)}}"
			}),
			"type": "json",
			"response": obj{
				"data": obj{"externalHookId": "{{body.id}}"},
			},
		})
		add(webhook+".detach.iml.json", obj{
			"url":    strings.Replace(catalog.HookPath, "{id}", "{{webhook.externalHookId}}", 1),
			"method": "DELETE",
		})
		trigger := "module-watch" + upperFirst(camel(hook.Key))
		// A delivery is {type, timestamp, data}: the bundle is its data; a
		// job is fetched again with its compressed file when the catalog
		// gives one.
		add(trigger+".communication.iml.json", makeTriggerCommunication(&hook, c.Operation("get_job")))
		add(trigger+".interface.iml.json", makeModuleInterface(&hook))
		add(trigger+".samples.iml.json", makeSample(&hook))
	}
	return files, nil
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func firstOfKind(c *catalog.Catalog, k catalog.OperationKind) *catalog.Operation {
	for _, op := range c.Operations() {
		if op.Kind == k {
			return &op
		}
	}
	return nil
}

// camel turns snake_case into camelCase, Make's naming for components.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// makeCurlies prefixes every {{field}} with a path such as "body.".
func makeCurlies(tmpl, prefix string) string {
	return strings.ReplaceAll(tmpl, "{{", "{{"+prefix)
}

// makeBody maps body inputs; empty optional ones become undefined, which
// Make leaves out of the request.
func makeBody(inputs []catalog.Field, extra obj) obj {
	body := obj{}
	for k, v := range extra {
		body[k] = v
	}
	for _, f := range inputs {
		if f.In == "" || f.In == catalog.InBody {
			if f.Required {
				body[f.Key] = "{{parameters." + f.Key + "}}"
			} else {
				body[f.Key] = "{{ifempty(parameters." + f.Key + "; undefined)}}"
			}
		}
	}
	return body
}

// makeCommunication is the module's request; an operation that takes an
// upload gets two, the JSON one and the multipart one, each sent only when
// its condition holds.
func makeCommunication(op *catalog.Operation) any {
	path := op.Path
	for _, f := range op.Inputs {
		if f.In == catalog.InPath {
			path = strings.ReplaceAll(path, "{"+f.Key+"}", "{{encodeURL(parameters."+f.Key+")}}")
		}
	}
	comm := obj{
		"url":      path,
		"method":   op.Method,
		"response": obj{"output": makeOutput(op)},
	}
	if qs := makeQuery(op); len(qs) > 0 {
		comm["qs"] = qs
	}
	if op.Method == "POST" {
		comm["body"] = makeBody(op.Inputs, nil)
		comm["type"] = "json"
	}
	if op.Upload == nil {
		return comm
	}
	comm["condition"] = "{{if(parameters." + makeFileData + "; false; true)}}"
	return []any{comm, makeUploadRequest(op, path)}
}

func makeType(t catalog.FieldType) string {
	switch t {
	case catalog.FieldString:
		return "text"
	case catalog.FieldFile:
		return "url"
	case catalog.FieldInteger:
		return "uinteger"
	case catalog.FieldDateTime:
		return "date"
	case catalog.FieldObject:
		return "any"
	case catalog.FieldList:
		return "array"
	}
	return string(t) // text, number, boolean
}

func makeParams(inputs []catalog.Field) []any {
	out := []any{}
	for _, f := range inputs {
		p := obj{"name": f.Key, "label": f.Label, "help": f.Help, "type": makeType(f.Type), "required": f.Required}
		if f.Type == catalog.FieldText {
			p["multiline"] = true
		}
		if len(f.Choices) > 0 {
			p["type"] = "select"
			var opts []any
			for _, ch := range f.Choices {
				opts = append(opts, obj{"label": ch, "value": ch})
			}
			p["options"] = opts
		}
		if f.Default != "" {
			p["default"] = f.Default
		}
		if f.Type == catalog.FieldList {
			// An array of collections, one per record: each record names
			// its own image source, so no field of it is required alone.
			var fields []catalog.Field
			for _, child := range f.Fields {
				child.Required = false
				fields = append(fields, child)
			}
			p["spec"] = makeParams(fields)
		}
		out = append(out, p)
	}
	return out
}

// makeInterface nests dotted output keys into collections.
func makeInterface(outputs []catalog.OutputField) []any {
	out := []any{}
	groups := map[string]obj{}
	for _, o := range outputs {
		item := obj{"name": o.Key, "label": o.Label, "type": makeType(o.Type)}
		if o.Type == catalog.FieldFile {
			item["type"] = "url"
		}
		if o.Type == catalog.FieldList {
			// An array of collections: Make's Iterator splits it into
			// one bundle per record.
			item["spec"] = makeInterface(o.Fields)
		}
		parent, child, nested := strings.Cut(o.Key, ".")
		if !nested {
			out = append(out, item)
			continue
		}
		item["name"] = child
		g, ok := groups[parent]
		if !ok {
			g = obj{"name": parent, "label": upperFirst(parent), "type": "collection", "spec": []any{}}
			groups[parent] = g
			out = append(out, g)
		}
		g["spec"] = append(g["spec"].([]any), item)
	}
	return out
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

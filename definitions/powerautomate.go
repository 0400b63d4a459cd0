package definitions

import (
	"net/url"
	"strings"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

const swaggerRef = "#/definitions/"

// renderPowerAutomate renders a custom connector: apiDefinition.swagger.json
// (Swagger 2.0 with the x-ms-* extensions) and apiProperties.json (the key
// as a securestring connection parameter). Compress Image, Compress Many
// and Make Image Sizes use the asynchronous 202 + Location pattern; each hook trigger is a webhook
// trigger whose subscription URL Power Automate fills in
// (x-ms-notification-url) and deletes through the 201's Location when the
// flow is turned off.
func renderPowerAutomate(c *catalog.Catalog, base string) ([]File, error) {
	u, _ := url.Parse(base)
	basePath := u.Path
	if basePath == "" {
		basePath = "/"
	}
	compress := c.Operation("compress_image")
	getJob := c.Operation("get_job")
	account := c.Operation("check_account")
	checkImage := c.Operation("check_image")

	paParams := func(op *catalog.Operation) []any {
		var out []any
		body := obj{"type": "object", "properties": obj{}}
		var required []string
		for _, f := range op.Inputs {
			s := f.Type.Schema(catalog.SchemaOpenAPI)
			if f.Type == catalog.FieldFile {
				s = obj{"type": "string"}
			}
			desc := obj{"x-ms-summary": f.Label, "description": f.Help}
			if len(f.Choices) > 0 {
				s["enum"] = f.Choices
			}
			if f.Default != "" {
				s["default"] = f.Default
			}
			paFileInput(op, f, s, desc)
			paListInput(f, s)
			switch f.In {
			case catalog.InPath, catalog.InQuery:
				p := obj{"name": f.Key, "in": f.In, "required": f.Required || f.In == catalog.InPath}
				for k, v := range s {
					p[k] = v
				}
				for k, v := range desc {
					p[k] = v
				}
				out = append(out, p)
			default:
				for k, v := range desc {
					s[k] = v
				}
				body["properties"].(obj)[f.Key] = s
				if f.Required {
					required = append(required, f.Key)
				}
			}
		}
		if len(required) > 0 {
			body["required"] = required
		}
		if len(body["properties"].(obj)) > 0 {
			out = append(out, obj{"name": "body", "in": "body", "required": true, "schema": body})
		}
		return out
	}
	errs := obj{"default": obj{"description": "Error", "schema": obj{"$ref": swaggerRef + "Error"}}}
	withErrs := func(r obj) obj {
		for k, v := range errs {
			r[k] = v
		}
		return r
	}
	paOp := func(op *catalog.Operation, id string) obj {
		return obj{"operationId": id, "summary": op.Label, "description": op.Description + " " + op.Help}
	}

	compressOp := paOp(compress, "CompressImage")
	compressOp["parameters"] = append(append(paParams(compress), obj{"name": "wait", "in": "query", "type": "integer",
		"required": false, "default": catalog.DefaultWait, "x-ms-visibility": "internal", "x-ms-summary": "Wait (seconds)",
		"description": "Seconds to wait before answering 202."}), paFileQuery(compress, nil)...)
	compressOp["responses"] = withErrs(obj{
		"200": obj{"description": "The finished job; completed, it carries the compressed file as file content.", "schema": obj{"$ref": swaggerRef + "Job"}},
		"202": obj{"description": "Still running (a large image, a busy queue): Power Automate polls Location, waiting Retry-After seconds between polls, until it answers 200 with the finished job and its file. This keeps jobs that outlast the 120 s a synchronous call gets.",
			"headers": obj{"Location": obj{"type": "string", "description": "URL of the job (?poll=1&include=data): 202 until it is finished."},
				"Retry-After": obj{"type": "integer", "description": "Seconds between polls."}}},
	})

	getOp := paOp(getJob, "GetJob")
	getOp["parameters"] = paFileQuery(getJob, paParams(getJob))
	getOp["responses"] = withErrs(obj{"200": obj{"description": "The job; completed, it carries the compressed file as file content.", "schema": obj{"$ref": swaggerRef + "Job"}}})
	// The job id picked from recent jobs rather than typed.
	for _, p := range getOp["parameters"].([]any) {
		if p := p.(obj); p["name"] == "id" {
			p["x-ms-dynamic-values"] = obj{"operationId": "ListJobs", "value-collection": "jobs",
				"value-path": "id", "value-title": "id"}
		}
	}
	listOp := obj{"operationId": "ListJobs", "summary": "List recent jobs", "x-ms-visibility": "internal",
		"description": "The key's newest jobs; feeds the Job ID picker of Get Job.",
		"parameters": []any{obj{"name": "limit", "in": "query", "type": "integer", "default": 100, "required": false,
			"x-ms-summary": "Limit", "x-ms-visibility": "internal", "description": "How many jobs to list."}},
		"responses": withErrs(obj{"200": obj{"description": "The jobs.", "schema": obj{"type": "object", "properties": obj{
			"jobs":        obj{"type": "array", "items": obj{"$ref": swaggerRef + "Job"}, "x-ms-summary": "Jobs"},
			"next_cursor": obj{"type": "string", "x-ms-summary": "Next Cursor", "x-ms-visibility": "internal"}}}}})}

	accountOp := paOp(account, "CheckAccount")
	accountOp["responses"] = withErrs(obj{"200": obj{"description": "The key check.", "schema": obj{"$ref": swaggerRef + "Account"}}})

	many := c.Operation("compress_many")
	manyOp := paOp(many, "CompressMany")
	manyOp["parameters"] = append(paParams(many), paFixedQuery(many)...)
	manyOp["responses"] = withErrs(obj{
		"200": obj{"description": "The finished batch with each image's job.", "schema": obj{"$ref": swaggerRef + "BatchWithJobs"}},
		"202": obj{"description": "Still running after the wait: Power Automate polls Location, waiting Retry-After seconds between polls, until it answers 200 with the finished batch and its jobs.",
			"headers": obj{"Location": obj{"type": "string", "description": "URL of the batch (?poll=1&include=jobs): 202 until it is finished."},
				"Retry-After": obj{"type": "integer", "description": "Seconds between polls."}}},
	})

	sizes := c.Operation("compress_variants")
	sizesOp := paVariantSetOp(sizes, paParams, paOp, withErrs) // powerautomatesets.go

	checkOp := paOp(checkImage, "CheckImage")
	checkOp["parameters"] = paParams(checkImage)
	checkOp["responses"] = withErrs(obj{"200": obj{"description": "What compressing the image would cost.", "schema": obj{"$ref": swaggerRef + "ImageCheck"}}})

	trigger, triggers, definitions := paHookTriggers(c, paParams, paOp, withErrs)

	deleteHook := obj{"operationId": "DeleteHook", "summary": "Delete a hook subscription",
		"description": "Called by Power Automate when the flow is turned off.", "x-ms-visibility": "internal",
		"parameters": []any{obj{"name": "id", "in": "path", "required": true, "type": "string", "x-ms-summary": "Hook ID"}},
		"responses":  withErrs(obj{"204": obj{"description": "Deleted."}})}

	doc := obj{
		"swagger": "2.0",
		"info": obj{"title": "imgflow", "version": zapierAppVersion, "description": c.Description,
			"contact": obj{"name": "imgflow", "url": base}},
		"host":                u.Host,
		"basePath":            basePath,
		"schemes":             []string{u.Scheme},
		"consumes":            []string{"application/json"},
		"produces":            []string{"application/json"},
		"securityDefinitions": obj{"api_key": obj{"type": "apiKey", "in": "header", "name": c.Auth.Header}},
		"security":            []any{obj{"api_key": []any{}}},
		"paths": obj{
			strings.TrimSuffix(compress.Path, "/"): obj{"post": compressOp, "get": listOp},
			getJob.Path:                            obj{"get": getOp},
			account.Path:                           obj{"get": accountOp},
			checkImage.Path:                        obj{"post": checkOp},
			many.Path:                              obj{"post": manyOp},
			sizes.Path:                             obj{"post": sizesOp},
			catalog.HooksPath:                      obj{"post": trigger},
			catalog.HookPath:                       obj{"delete": deleteHook},
		},
		"definitions": obj{
			"Job":           paJobSchema(c, compress.File),
			"Account":       (accountSchema(c)),
			"ImageCheck":    imageCheckSchema(c),
			"BatchWithJobs": paBatchSchema(many),
			"VariantSet":    paVariantSetSchema(sizes),
			"Delivery":      deliverySchema(swaggerRef),
			"Error":         (errorSchema()),
		},
		"x-ms-connector-metadata": []any{
			obj{"propertyName": "Website", "propertyValue": base},
			obj{"propertyName": "Categories", "propertyValue": "Productivity;Content and Files"},
		},
	}
	for path, item := range triggers {
		doc["paths"].(obj)[path] = item
	}
	for name, schema := range definitions {
		doc["definitions"].(obj)[name] = schema
	}
	props := paProperties(c)
	var files []File
	mcpDef, mcpProps := paMCPConnector(c, u, basePath)
	for name, v := range map[string]any{"apiDefinition.swagger.json": doc, "apiProperties.json": props,
		mcpDefinitionFile: mcpDef, mcpPropertiesFile: mcpProps} {
		f, err := fileOf("powerautomate", name, v)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// paHookTriggers renders every hook trigger as a webhook trigger, with the
// schemas of what their deliveries carry. Swagger 2.0 keys operations by
// path and method, and every trigger POSTs to /v1/hooks: the first (first)
// keeps that path, each other one adds ?trigger=<key>, a query the API
// ignores, so that each is its own operation (others, by path).
func paHookTriggers(c *catalog.Catalog, params func(*catalog.Operation) []any,
	paOp func(*catalog.Operation, string) obj, withErrs func(obj) obj) (first, others, definitions obj) {
	others, definitions = obj{}, obj{}
	for i, hook := range c.HookTriggers() {
		hook := hook
		ps := params(&hook)
		var body obj
		if n := len(ps); n > 0 && ps[n-1].(obj)["in"] == "body" {
			body = ps[n-1].(obj)["schema"].(obj)
		} else {
			body = obj{"type": "object", "properties": obj{}}
			ps = append(ps, obj{"name": "body", "in": "body", "required": true, "schema": body})
		}
		props := body["properties"].(obj)
		for _, f := range hook.Inputs {
			if p, ok := props[f.Key].(obj); ok && typedDefault(f) != nil {
				p["default"] = typedDefault(f)
			}
		}
		props["target_url"] = obj{"type": "string", "x-ms-notification-url": true, "x-ms-visibility": "internal",
			"description": "Filled in by Power Automate.", "title": ""}
		required := []string{"target_url"}
		if ev := hook.FixedHookEvent(); ev != "" {
			// Internal and required with a default: sent as it is.
			props["event"] = obj{"type": "string", "enum": []string{ev}, "default": ev, "x-ms-visibility": "internal",
				"x-ms-summary": "Event", "description": "The event this trigger subscribes."}
			required = append(required, "event")
		}
		if r, ok := body["required"].([]string); ok {
			required = append(required, r...)
		}
		body["required"] = required

		id := upperFirst(camel(hook.Key))
		event := obj{"$ref": swaggerRef + "Delivery"}
		what := "The finished job, as delivered."
		if _, isJob := hook.Sample.(*connector.Job); !isJob {
			definitions[id+"Event"] = obj{"type": "object", "properties": obj{
				"type":      obj{"type": "string", "enum": hook.HookEvents, "x-ms-summary": "Event Type"},
				"timestamp": obj{"type": "string", "format": "date-time", "x-ms-summary": "Timestamp"},
				"data":      outputsSchema(hook.Outputs, hook.Sample),
			}}
			event = obj{"$ref": swaggerRef + id + "Event"}
			what = "The " + hook.HookEvents[0] + " event, as delivered."
		}
		trigger := paOp(&hook, id)
		trigger["x-ms-trigger"] = "single"
		trigger["parameters"] = ps
		trigger["responses"] = withErrs(obj{"201": obj{"description": what, "schema": event}})
		if i == 0 {
			first = trigger
		} else {
			others[catalog.HooksPath+"?trigger="+url.QueryEscape(hook.Key)] = obj{"post": trigger}
		}
	}
	return first, others, definitions
}

// paProperties is apiProperties.json: the key as a securestring connection
// parameter.
func paProperties(c *catalog.Catalog) obj {
	return obj{"properties": obj{
		"connectionParameters": obj{"api_key": obj{"type": "securestring", "uiDefinition": obj{
			"displayName": c.Auth.Fields[0].Label,
			"description": c.Auth.Fields[0].Help,
			"tooltip":     "Sent as the " + c.Auth.Header + " header.",
			"constraints": obj{"tabIndex": 2, "clearText": false, "required": "true"},
		}}},
		"iconBrandColor": "#0f766e",
		"capabilities":   []any{},
		"publisher":      "imgflow",
		"stackOwner":     "imgflow",
	}}
}

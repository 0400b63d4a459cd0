package definitions

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// ZapierPlatformVersion is the zapier-platform-core release the app targets.
const ZapierPlatformVersion = "19.1.0"

// zapierAppVersion is the version of the imgflow app itself.
const zapierAppVersion = "1.0.0"

// renderZapier renders the catalog as one Zapier app definition (pure JSON;
// functions as {"source": ...} where a request template cannot do the job).
// Every request carries the key through the app-wide requestTemplate.
func renderZapier(c *connector.Catalog, base string) ([]File, error) {
	app := obj{
		"version":         zapierAppVersion,
		"platformVersion": ZapierPlatformVersion,
		"requestTemplate": obj{
			"headers": obj{c.Auth.Header: "{{bundle.authData.api_key}}"},
		},
		"authentication": zapierAuth(c, base),
		"triggers":       obj{},
		"creates":        obj{},
	}
	for _, op := range c.Operations() {
		op := op
		var err error
		switch op.Kind {
		case connector.KindAction:
			app["creates"].(obj)[op.Key] = zapierCreate(&op, zapierRequest(&op, base))
		case connector.KindCallbackAction:
			app["creates"].(obj)[op.Key], err = zapierCallbackCreate(&op, base)
		case connector.KindPollingTrigger:
			app["triggers"].(obj)[op.Key] = zapierPollingTrigger(&op, base)
		case connector.KindHookTrigger:
			app["triggers"].(obj)[op.Key] = zapierHookTrigger(&op, base)
		default:
			err = fmt.Errorf("operation %s: unknown kind %q", op.Key, op.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	f, err := fileOf("zapier", "imgflow-zapier-app.json", app)
	return []File{f}, err
}

func zapierAuth(c *connector.Catalog, base string) obj {
	var fields []any
	for _, f := range c.Auth.Fields {
		zf := zapierInputField(f)
		zf["type"] = "password" // keys are secrets: masked in the editor
		fields = append(fields, zf)
	}
	return obj{
		"type":   "custom",
		"fields": fields,
		"test": obj{
			"method": c.Auth.TestMethod,
			"url":    base + c.Auth.TestPath,
		},
		// {{json.field}} reads the test's answer.
		"connectionLabel": strings.ReplaceAll(c.Auth.ConnectionLabel, "{{", "{{json."),
	}
}

func zapierType(t connector.FieldType) string {
	switch t {
	case connector.FieldObject:
		return "string"
	case connector.FieldFile:
		return "file"
	}
	return string(t)
}

func zapierInputField(f connector.Field) obj {
	zf := obj{
		"key":      f.Key,
		"label":    f.Label,
		"helpText": f.Help,
		"type":     zapierType(f.Type),
		"required": f.Required,
	}
	if f.Type == connector.FieldObject {
		zf["dict"] = true
	}
	if len(f.Choices) > 0 {
		zf["choices"] = f.Choices
	}
	if f.Default != "" {
		zf["default"] = f.Default
	}
	if f.Example != "" && f.Type != connector.FieldObject {
		zf["placeholder"] = f.Example
	}
	return zf
}

func zapierInputFields(op *connector.Operation) []any {
	out := []any{}
	for _, f := range op.Inputs {
		out = append(out, zapierInputField(f))
	}
	return out
}

// zapierOutputFields names every output with its label and its sample value;
// nested keys use Zapier's double underscore.
func zapierOutputFields(op *connector.Operation) []any {
	out := []any{}
	for _, o := range op.Outputs {
		zf := obj{
			"key":   strings.ReplaceAll(o.Key, ".", "__"),
			"label": o.Label,
		}
		switch o.Type {
		case connector.FieldObject:
			zf["dict"] = true
		case connector.FieldText:
			zf["type"] = "string"
		default:
			zf["type"] = zapierType(o.Type)
		}
		if o.Key == "id" {
			zf["primary"] = true
		}
		if v := sampleValue(op, o.Key); v != nil {
			zf["sample"] = v
		}
		out = append(out, zf)
	}
	return out
}

// zapierURL turns {name} path placeholders into bundle curlies.
func zapierURL(base string, op *connector.Operation) string {
	p := op.Path
	for _, f := range op.Inputs {
		if f.In == connector.InPath {
			p = strings.ReplaceAll(p, "{"+f.Key+"}", "{{bundle.inputData."+f.Key+"}}")
		}
	}
	return base + withQuery(p, op.Query)
}

// zapierRequest is the request template of a plain action. Empty optional
// inputs are dropped, so that image_url and image_base64 never both arrive.
func zapierRequest(op *connector.Operation, base string) obj {
	req := obj{"method": op.Method, "url": zapierURL(base, op)}
	body, params := obj{}, obj{}
	for _, f := range op.Inputs {
		curly := "{{bundle.inputData." + f.Key + "}}"
		switch f.In {
		case connector.InQuery:
			params[f.Key] = curly
		case connector.InPath:
		default:
			body[f.Key] = curly
		}
	}
	if len(body) > 0 {
		req["body"] = body
	}
	if len(params) > 0 {
		req["params"] = params
	}
	if len(body)+len(params) > 0 {
		req["removeMissingValuesFrom"] = obj{"body": len(body) > 0, "params": len(params) > 0}
	}
	return req
}

func zapierDisplay(op *connector.Operation) obj {
	return obj{"label": op.Label, "description": op.Description}
}

func zapierCreate(op *connector.Operation, perform any) obj {
	return obj{
		"key":     op.Key,
		"noun":    op.Noun,
		"display": zapierDisplay(op),
		"operation": obj{
			"perform":      perform,
			"inputFields":  zapierInputFields(op),
			"outputFields": zapierOutputFields(op),
			"sample":       generic(op.Sample),
		},
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func zapierSource(lines ...string) obj {
	return obj{"source": strings.Join(lines, "\n"), "args": []string{"z", "bundle"}}
}

// zapierCallbackCreate sends Zapier's callback URL as callback_url; the zap
// waits until imgflow POSTs the finished job there (performResume).
func zapierCallbackCreate(op *connector.Operation, base string) (obj, error) {
	var keys []string
	for _, f := range op.Inputs {
		if f.In != connector.InBody && f.In != "" {
			return nil, fmt.Errorf("%s: callback actions take body fields only, %s is in %s", op.Key, f.Key, f.In)
		}
		keys = append(keys, jsString(f.Key))
	}
	perform := zapierSource(
		"const body = { callback_url: z.generateCallbackUrl() };",
		"for (const key of ["+strings.Join(keys, ", ")+"]) {",
		"  const value = bundle.inputData[key];",
		"  if (value !== undefined && value !== null && value !== '') body[key] = value;",
		"}",
		"const response = await z.request({ method: "+jsString(op.Method)+", url: "+jsString(base+withQuery(op.Path, op.Query))+", body });",
		"return response.data;",
	)
	create := zapierCreate(op, perform)
	create["operation"].(obj)["performResume"] = zapierSource(
		"// imgflow POSTs {type, timestamp, data: job}; the finished job replaces the queued one.",
		"const delivery = bundle.cleanedRequest || {};",
		"return Object.assign({}, bundle.outputData, delivery.data || delivery);",
	)
	return create, nil
}

// zapierFinishedJobs lists the newest finished jobs, filtered by status.
func zapierFinishedJobs(base, statusExpr string) []string {
	return []string{
		"const status = " + statusExpr + ";",
		"const params = { limit: 100 };",
		"if (status) params.status = status;",
		"const response = await z.request({ method: 'GET', url: " + jsString(base+"/v1/jobs") + ", params });",
		"const jobs = (response.data && response.data.jobs) || [];",
		"return jobs.filter((job) => job.status === 'completed' || job.status === 'failed');",
	}
}

func zapierPollingTrigger(op *connector.Operation, base string) obj {
	return obj{
		"key":     op.Key,
		"noun":    op.Noun,
		"display": zapierDisplay(op),
		"operation": obj{
			"type":         "polling",
			"perform":      zapierSource(zapierFinishedJobs(base, "bundle.inputData.status")...),
			"inputFields":  zapierInputFields(op),
			"outputFields": zapierOutputFields(op),
			"sample":       generic(op.Sample),
		},
	}
}

func zapierHookTrigger(op *connector.Operation, base string) obj {
	body := obj{"target_url": "{{bundle.targetUrl}}"}
	for _, f := range op.Inputs {
		body[f.Key] = "{{bundle.inputData." + f.Key + "}}"
	}
	return obj{
		"key":     op.Key,
		"noun":    op.Noun,
		"display": zapierDisplay(op),
		"operation": obj{
			"type": "hook",
			"performSubscribe": obj{
				"method": op.Method,
				"url":    base + connector.HooksPath,
				"body":   body,
			},
			// DELETE answers 204 with no body, which a request template
			// cannot return: a function reports the deletion instead.
			"performUnsubscribe": zapierSource(
				"const id = bundle.subscribeData && bundle.subscribeData.id;",
				"await z.request({ method: 'DELETE', url: "+jsString(base+connector.HooksPath+"/")+" + encodeURIComponent(id) });",
				"return { id, deleted: true };",
			),
			"perform": zapierSource(
				"// A delivery is {type, timestamp, data: job}.",
				"const delivery = bundle.cleanedRequest || {};",
				"return [delivery.data || delivery];",
			),
			// performList gives the editor real recent jobs to map.
			"performList": zapierSource(zapierFinishedJobs(base,
				"{ 'job.completed': 'completed', 'job.failed': 'failed' }[bundle.inputData.event] || ''")...),
			"inputFields":  zapierInputFields(op),
			"outputFields": zapierOutputFields(op),
			"sample":       generic(op.Sample),
		},
	}
}

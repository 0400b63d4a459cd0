package definitions

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// ZapierPlatformVersion is the zapier-platform-core release the app targets.
const ZapierPlatformVersion = "19.1.0"

// zapierAppVersion is the version of the imgflow app itself.
const zapierAppVersion = "1.0.0"

// renderZapier renders the catalog for Zapier twice over, from one tree:
//
//   - imgflow-zapier-app.json, one app definition in pure JSON (functions as
//     {"source": ...} where a request template cannot do the job), which
//     zapier-platform-core loads as it is;
//   - index.js and package.json, the same app as a Zapier CLI project
//     (zapier push), which adds what JSON cannot express: the `file` output
//     of every job-returning operation, a dehydrated pointer whose hydrator
//     (a function the app must hold by reference, which a {"source"} string
//     cannot name) stashes the compressed bytes in Zapier's file store.
//
// Every request carries the key through the app-wide requestTemplate.
func renderZapier(c *catalog.Catalog, base string) ([]File, error) {
	app, err := zapierApp(c, base, false)
	if err != nil {
		return nil, err
	}
	jsonApp, err := fileOf("zapier", "imgflow-zapier-app.json", app)
	if err != nil {
		return nil, err
	}
	cliApp, err := zapierApp(c, base, true)
	if err != nil {
		return nil, err
	}
	index, err := zapierIndexJS(c, base, cliApp)
	if err != nil {
		return nil, err
	}
	pkg, err := fileOf("zapier", "package.json", obj{
		"name":         "imgflow-zapier",
		"version":      zapierAppVersion,
		"description":  c.Description,
		"main":         "index.js",
		"private":      true,
		"engines":      obj{"node": ">=18"},
		"dependencies": obj{"zapier-platform-core": ZapierPlatformVersion},
	})
	return []File{jsonApp, {Platform: "zapier", Name: "index.js", Data: index}, pkg}, err
}

// zapierApp is the app definition; cli adds the file outputs, whose
// functions only the CLI project (index.js) defines.
func zapierApp(c *catalog.Catalog, base string, cli bool) (obj, error) {
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
	if cli {
		app["hydrators"] = jsRaw("hydrators")
	}
	for _, op := range c.Operations() {
		op := op
		z := zapierOp{op: &op, base: base, file: cli && op.File != nil}
		var err error
		switch op.Kind {
		case catalog.KindAction:
			app["creates"].(obj)[op.Key] = z.create()
		case catalog.KindCallbackAction:
			app["creates"].(obj)[op.Key], err = z.callbackCreate()
		case catalog.KindPollingTrigger:
			app["triggers"].(obj)[op.Key] = z.pollingTrigger()
		case catalog.KindHookTrigger:
			app["triggers"].(obj)[op.Key] = z.hookTrigger()
		default:
			err = fmt.Errorf("operation %s: unknown kind %q", op.Key, op.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return app, nil
}

// zapierOp renders one operation; file says whether its jobs get the
// `file` output (withFile in index.js).
type zapierOp struct {
	op   *catalog.Operation
	base string
	file bool
}

// job wraps a JavaScript expression that is a job (or null) so that a
// completed one gains its file.
func (z zapierOp) job(expr string) string {
	if !z.file {
		return expr
	}
	return "withFile(z, " + expr + ")"
}

// jobs wraps an expression that is a list of jobs.
func (z zapierOp) jobs(expr string) string {
	if !z.file {
		return expr
	}
	return expr + ".map((job) => withFile(z, job))"
}

func zapierAuth(c *catalog.Catalog, base string) obj {
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

func zapierType(t catalog.FieldType) string {
	switch t {
	case catalog.FieldObject:
		return "string"
	case catalog.FieldFile:
		return "file"
	}
	return string(t)
}

func zapierInputField(f catalog.Field) obj {
	zf := obj{
		"key":      f.Key,
		"label":    f.Label,
		"helpText": f.Help,
		"type":     zapierType(f.Type),
		"required": f.Required,
	}
	if f.Type == catalog.FieldObject {
		zf["dict"] = true
	}
	if len(f.Choices) > 0 {
		zf["choices"] = f.Choices
	}
	if f.Default != "" {
		zf["default"] = f.Default
	}
	if f.Example != "" && f.Type != catalog.FieldObject {
		zf["placeholder"] = f.Example
	}
	if f.Type == catalog.FieldList {
		// Line items: bundle.inputData[key] is an array of records. Zapier
		// takes no helpText beside children, and wants every key of the
		// action unique: the children's keys carry the list's as prefix
		// (the perform function takes it off).
		delete(zf, "type")
		delete(zf, "helpText")
		var children []any
		for _, child := range f.Fields {
			cf := zapierChildField(child)
			cf["key"] = zapierChildKey(f, child)
			children = append(children, cf)
		}
		zf["children"] = children
	}
	return zf
}

// zapierChildKey is a line item field's key: "items_image_url".
func zapierChildKey(list, child catalog.Field) string { return list.Key + "_" + child.Key }

// zapierChildField is a field of a line item: text, as Zapier maps a line
// item's values; an object is JSON text, parsed by the perform function.
func zapierChildField(f catalog.Field) obj {
	zf := zapierInputField(f)
	zf["required"] = false // each record needs one image source, not each field
	switch f.Type {
	case catalog.FieldObject:
		delete(zf, "dict")
		zf["type"] = "string"
		zf["helpText"] = f.Help + " As JSON text, such as " + f.Example + "."
	case catalog.FieldFile:
		zf["type"] = "string"
	}
	return zf
}

func zapierInputFields(op *catalog.Operation) []any {
	out := []any{}
	for _, f := range op.Inputs {
		out = append(out, zapierInputField(f))
	}
	return out
}

// zapierOutputFields names every output with its label and its sample value;
// nested keys use Zapier's double underscore.
func zapierOutputFields(op *catalog.Operation) []any {
	out := []any{}
	primary := zapierPrimary(op)
	for _, o := range op.Outputs {
		zf := obj{
			"key":   strings.ReplaceAll(o.Key, ".", "__"),
			"label": o.Label,
		}
		switch o.Type {
		case catalog.FieldObject:
			zf["dict"] = true
		case catalog.FieldText:
			zf["type"] = "string"
		default:
			zf["type"] = zapierType(o.Type)
		}
		if o.Key == primary {
			zf["primary"] = true
		}
		if o.Type == catalog.FieldList {
			// Line items: each record's fields, nested keys with __.
			delete(zf, "type")
			var children []any
			for _, child := range zapierOutputFields(&catalog.Operation{Outputs: o.Fields}) {
				delete(child.(obj), "primary") // the record's id is not the step's
				children = append(children, child)
			}
			zf["children"] = children
		} else if v := sampleValue(op, o.Key); v != nil {
			zf["sample"] = v
		}
		out = append(out, zf)
	}
	return out
}

// zapierPrimary is the output that tells items apart: id, or for items
// without one (a credits-low event) the first output naming an id.
func zapierPrimary(op *catalog.Operation) string {
	for _, o := range op.Outputs {
		if o.Key == "id" {
			return o.Key
		}
	}
	for _, o := range op.Outputs {
		if strings.HasSuffix(o.Key, "_id") {
			return o.Key
		}
	}
	return ""
}

// outputFields adds the file output to the job's fields.
func (z zapierOp) outputFields() []any {
	out := zapierOutputFields(z.op)
	if z.file {
		f := z.op.File
		out = append(out, obj{"key": f.Key, "label": f.Label, "type": "file"})
	}
	return out
}

// zapierURL turns {name} path placeholders into bundle curlies.
func zapierURL(base string, op *catalog.Operation) string {
	p := op.Path
	for _, f := range op.Inputs {
		if f.In == catalog.InPath {
			p = strings.ReplaceAll(p, "{"+f.Key+"}", "{{bundle.inputData."+f.Key+"}}")
		}
	}
	return base + withQuery(p, op.Query)
}

// zapierRequest is the request template of a plain action. Empty optional
// inputs are dropped, so that image_url and image_base64 never both arrive.
func zapierRequest(op *catalog.Operation, base string) obj {
	req := obj{"method": op.Method, "url": zapierURL(base, op)}
	body, params := obj{}, obj{}
	for _, f := range op.Inputs {
		curly := "{{bundle.inputData." + f.Key + "}}"
		switch f.In {
		case catalog.InQuery:
			params[f.Key] = curly
		case catalog.InPath:
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

// zapierRequestJS is zapierRequest written as code, for functions (where
// z.request takes no {{curlies}}): the request in a variable named request.
func zapierRequestJS(op *catalog.Operation, base string) []string {
	url := jsString(base + withQuery(op.Path, op.Query))
	var body, params []string
	for _, f := range op.Inputs {
		switch f.In {
		case catalog.InPath:
			url += ".replace(" + jsString("{"+f.Key+"}") + ", encodeURIComponent(bundle.inputData[" + jsString(f.Key) + "]))"
		case catalog.InQuery:
			params = append(params, jsString(f.Key))
		default:
			body = append(body, jsString(f.Key))
		}
	}
	lines := []string{"const request = { method: " + jsString(op.Method) + ", url: " + url + " };"}
	lines = append(lines, zapierListJS(op)...)
	// Empty optional inputs are left out, as removeMissingValuesFrom does.
	for _, part := range []struct {
		name string
		keys []string
	}{{"body", body}, {"params", params}} {
		if len(part.keys) == 0 {
			continue
		}
		lines = append(lines,
			"request."+part.name+" = {};",
			"for (const key of ["+strings.Join(part.keys, ", ")+"]) {",
			"  const value = bundle.inputData[key];",
			"  if (value !== undefined && value !== null && value !== '') request."+part.name+"[key] = value;",
			"}")
	}
	return lines
}

func zapierDisplay(op *catalog.Operation) obj {
	return obj{"label": op.Label, "description": op.Description}
}

func (z zapierOp) operation(perform any) obj {
	return obj{
		"perform":      perform,
		"inputFields":  zapierInputFields(z.op),
		"outputFields": z.outputFields(),
		"sample":       generic(z.op.Sample),
	}
}

// create is a plain action: a request template, or with a file output the
// same request made by a function that adds the file to the job.
func (z zapierOp) create() obj {
	var perform any = zapierRequest(z.op, z.base)
	if hasList(z.op.Inputs) {
		perform = zapierSource(append(zapierRequestJS(z.op, z.base),
			"const response = await z.request(request);",
			"return response.data;")...)
	}
	if z.file {
		perform = zapierSource(append(zapierRequestJS(z.op, z.base),
			"const response = await z.request(request);",
			"return "+z.job("response.data")+";")...)
	}
	return obj{
		"key":       z.op.Key,
		"noun":      z.op.Noun,
		"display":   zapierDisplay(z.op),
		"operation": z.operation(perform),
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

// callbackCreate sends Zapier's callback URL as callback_url; the zap
// waits until imgflow POSTs the finished job there (performResume).
func (z zapierOp) callbackCreate() (obj, error) {
	op := z.op
	var keys []string
	for _, f := range op.Inputs {
		if f.In != catalog.InBody && f.In != "" {
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
		"const response = await z.request({ method: "+jsString(op.Method)+", url: "+jsString(z.base+withQuery(op.Path, op.Query))+", body });",
		"return response.data;",
	)
	create := obj{
		"key":       op.Key,
		"noun":      op.Noun,
		"display":   zapierDisplay(op),
		"operation": z.operation(perform),
	}
	create["operation"].(obj)["performResume"] = zapierSource(
		"// imgflow POSTs {type, timestamp, data: job}; the finished job replaces the queued one.",
		"const delivery = bundle.cleanedRequest || {};",
		"return "+z.job("Object.assign({}, bundle.outputData, delivery.data || delivery)")+";",
	)
	return create, nil
}

// finishedJobs lists the newest finished jobs, filtered by status.
func (z zapierOp) finishedJobs(statusExpr string) obj {
	return zapierSource(
		"const status = "+statusExpr+";",
		"const params = { limit: 100 };",
		"if (status) params.status = status;",
		"const response = await z.request({ method: 'GET', url: "+jsString(z.base+"/v1/jobs")+", params });",
		"const jobs = (response.data && response.data.jobs) || [];",
		"return "+z.jobs("jobs.filter((job) => job.status === 'completed' || job.status === 'failed')")+";",
	)
}

func (z zapierOp) pollingTrigger() obj {
	operation := z.operation(z.finishedJobs("bundle.inputData.status"))
	operation["type"] = "polling"
	return obj{
		"key":       z.op.Key,
		"noun":      z.op.Noun,
		"display":   zapierDisplay(z.op),
		"operation": operation,
	}
}

func (z zapierOp) hookTrigger() obj {
	op := z.op
	optional := false
	// A lone curly keeps the input's type (an integer threshold).
	body := hookSubscribeBody(op, "{{bundle.targetUrl}}", func(f catalog.Field) any {
		optional = optional || !f.Required
		return "{{bundle.inputData." + f.Key + "}}"
	})
	subscribe := obj{
		"method": op.Method,
		"url":    z.base + catalog.HooksPath,
		"body":   body,
	}
	if optional {
		// An empty optional input is left out: the server's default applies.
		subscribe["removeMissingValuesFrom"] = obj{"body": true}
	}
	operation := z.operation(zapierSource(
		"// A delivery is {type, timestamp, data}.",
		"const delivery = bundle.cleanedRequest || {};",
		"return ["+z.job("delivery.data || delivery")+"];",
	))
	operation["type"] = "hook"
	operation["performSubscribe"] = subscribe
	// DELETE answers 204 with no body, which a request template cannot
	// return: a function reports the deletion instead.
	operation["performUnsubscribe"] = zapierSource(
		"const id = bundle.subscribeData && bundle.subscribeData.id;",
		"await z.request({ method: 'DELETE', url: "+jsString(z.base+catalog.HooksPath+"/")+" + encodeURIComponent(id) });",
		"return { id, deleted: true };",
	)
	// performList gives the editor real recent items to map.
	operation["performList"] = z.recentItems()
	return obj{
		"key":       op.Key,
		"noun":      op.Noun,
		"display":   zapierDisplay(op),
		"operation": operation,
	}
}

// hasList says whether any input is a list (line items).
func hasList(fields []catalog.Field) bool {
	for _, f := range fields {
		if f.Type == catalog.FieldList {
			return true
		}
	}
	return false
}

// zapierListJS turns each list input's line items into the records the API
// takes, before the body is built: empty values left out (an item gives
// one image source, its other field is empty), object fields parsed from
// their JSON text, and records left empty dropped (a trailing blank line).
func zapierListJS(op *catalog.Operation) []string {
	var lines []string
	for _, f := range op.Inputs {
		if f.Type != catalog.FieldList {
			continue
		}
		var objects []string
		for _, child := range f.Fields {
			if child.Type == catalog.FieldObject {
				objects = append(objects, jsString(child.Key))
			}
		}
		key := jsString(f.Key)
		lines = append(lines,
			"bundle.inputData["+key+"] = [].concat(bundle.inputData["+key+"] || []).map((record) => {",
			"  const out = {};",
			"  for (const [child, v] of Object.entries(record || {})) {",
			"    const k = child.startsWith("+jsString(f.Key+"_")+") ? child.slice("+fmt.Sprint(len(f.Key)+1)+") : child;",
			"    if (v === undefined || v === null || v === '') continue;",
			"    if (!["+strings.Join(objects, ", ")+"].includes(k) || typeof v !== 'string') {",
			"      out[k] = v;",
			"      continue;",
			"    }",
			"    try {",
			"      out[k] = JSON.parse(v);",
			"    } catch (err) {",
			"      throw new z.errors.Error("+jsString(f.Label+": ")+" + k + ' must be a JSON object, such as {\"record_id\": \"rec_1\"}', 'invalid_input', 400);",
			"    }",
			"  }",
			"  return out;",
			"}).filter((record) => Object.keys(record).length > 0);")
	}
	return lines
}

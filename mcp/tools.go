package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// The tools are the catalog's operations that an agent can run: each action
// and polling trigger whose REST operation a runner knows becomes a tool
// named by its catalog key (a polling trigger lists, so it becomes
// list_<noun>s), titled and described by the catalog, its input schema made
// from the catalog's fields plus the few arguments only a tool call needs,
// its output schema from the catalog's outputs. A field added to the
// catalog reaches the tool's schema and the REST body without a change
// here. Callback actions and hook triggers are left out: an agent has no
// URL to be called back at, it waits and follows with get_job instead.

// runner runs one kind of REST operation as a tool.
type runner struct {
	// extra are the tool-only arguments, beside the catalog's fields.
	extra []catalog.Field
	// description tells a model what the tool does, when to use it, what
	// it returns and what it costs.
	description string
	// output is the tool's output schema, from the catalog operation.
	output func(op *catalog.Operation) obj
	run    func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, args *arguments) *sdk.CallToolResult
}

// runnerFor picks the runner of a catalog operation by its REST route.
func runnerFor(op *catalog.Operation) *runner {
	switch {
	case op.Kind == catalog.KindAction && op.Key == "compress_variants":
		return &compressVariantsRunner
	case op.Kind == catalog.KindAction && op.Method == http.MethodPost && op.Path == "/v1/jobs":
		return &compressRunner
	case op.Kind == catalog.KindAction && op.Method == http.MethodPost && op.Path == "/v1/batches":
		return &compressManyRunner
	case op.Kind == catalog.KindAction && op.Method == http.MethodGet && op.Path == "/v1/jobs/{id}":
		return &getJobRunner
	case op.Kind == catalog.KindAction && op.Method == http.MethodPost && op.Path == catalog.DryRunPath:
		return &dryRunRunner
	case op.Kind == catalog.KindAction && op.Method == http.MethodGet && op.Path == "/v1/account":
		return &accountRunner
	case op.Kind == catalog.KindPollingTrigger && op.Method == http.MethodGet && op.Path == "/v1/jobs":
		return &listJobsRunner
	}
	return nil
}

// Tool-only arguments.
var (
	uploadField = catalog.Field{Key: "upload", Label: "Uploaded Image", Type: catalog.FieldString,
		Help: "A handle from prepare_upload, after its bytes were PUT."}
	idempotencyField = catalog.Field{Key: "idempotency_key", Label: "Idempotency Key", Type: catalog.FieldString,
		Help: "Any unique string (up to 255 characters) for this request: calling again with the same key and arguments returns the same job and never charges twice. Use one when you may retry."}
	previewField = catalog.Field{Key: "preview", Label: "Preview", Type: catalog.FieldBoolean, Default: "false",
		Help: "Also return a small preview of the compressed image (at most 256 pixels wide or high) as image content."}
)

func waitField(def int) catalog.Field {
	return catalog.Field{Key: "wait_seconds", Label: "Wait (seconds)", Type: catalog.FieldInteger,
		Help: fmt.Sprintf("How long to wait for the result, 0 to %d seconds (default %d). A job still running after it comes back with its status: follow it with get_job.", maxWaitSeconds, def)}
}

// maxWaitSeconds caps wait_seconds: the API's cap on ?wait.
const maxWaitSeconds = catalog.DefaultWait

// toolSet is the tools of one catalog on one backend.
type toolSet struct {
	backend Backend
	uploads *Uploads
	tools   []*sdk.Tool
	byName  map[string]func(ctx context.Context, key string, args *arguments) *sdk.CallToolResult
}

// newToolSet renders the catalog's operations as tools.
func newToolSet(c *catalog.Catalog, b Backend, u *Uploads) *toolSet {
	t := &toolSet{backend: b, uploads: u, byName: map[string]func(context.Context, string, *arguments) *sdk.CallToolResult{}}
	for _, op := range c.Operations() {
		r := runnerFor(&op)
		if r == nil {
			continue
		}
		name := op.Key
		if op.Kind == catalog.KindPollingTrigger {
			name = "list_" + strings.ToLower(op.Noun) + "s"
		}
		if _, dup := t.byName[name]; dup {
			continue // the first operation of a route speaks for it
		}
		fields := inputFields(&op, r)
		tool := &sdk.Tool{
			Name:         name,
			Title:        op.Label,
			Description:  r.description + ".",
			InputSchema:  inputObject(fields),
			OutputSchema: withError(r.output(&op)),
			Annotations:  annotations(&op, fields),
		}
		if op.Kind == catalog.KindPollingTrigger {
			tool.Title = "List " + op.Noun + "s"
		}
		if slices.ContainsFunc(fields, func(f catalog.Field) bool { return f.Key == uploadField.Key }) && u != nil {
			tool.Meta = sdk.Meta{fileInputsMeta: obj{uploadField.Key: fileInput()}}
		}
		t.tools = append(t.tools, tool)
		known := map[string]catalog.Field{}
		for _, f := range fields {
			known[f.Key] = f
		}
		t.byName[name] = func(ctx context.Context, key string, args *arguments) *sdk.CallToolResult {
			if err := args.check(known); err != nil {
				return errorResult(err)
			}
			return r.run(t, ctx, key, &op, args)
		}
	}
	if u != nil {
		t.tools = append(t.tools, u.tool())
		t.byName[prepareUploadName] = func(ctx context.Context, key string, args *arguments) *sdk.CallToolResult {
			return u.prepare(ctx, key, args)
		}
	}
	return t
}

// inputFields are the tool's arguments: the catalog operation's body and
// path fields (query fields are REST options a runner sets itself), then
// the runner's own.
func inputFields(op *catalog.Operation, r *runner) []catalog.Field {
	var out []catalog.Field
	for _, f := range op.Inputs {
		if f.In == catalog.InQuery && op.Kind != catalog.KindPollingTrigger {
			continue
		}
		if f.Key == "status" && op.Kind == catalog.KindPollingTrigger {
			f.Choices = []string{"queued", "processing", "completed", "failed"} // a tool lists every job, not only finished ones
		}
		if f.Type == catalog.FieldList && slices.ContainsFunc(f.Fields, func(g catalog.Field) bool { return g.Key == "image_url" }) {
			f.Fields = append(slices.Clone(f.Fields), uploadField) // batch items take handles too
		}
		out = append(out, f)
	}
	return append(out, r.extra...)
}

// annotations say what a call does, from the operation itself: reads and
// dry runs change nothing and may be repeated; a create charges a credit
// (repeat it safely with idempotency_key), never deletes or overwrites
// anything; a tool that takes an image URL reaches out to the open web.
func annotations(op *catalog.Operation, fields []catalog.Field) *sdk.ToolAnnotations {
	readOnly := op.Method == http.MethodGet || op.Path == catalog.DryRunPath
	openWorld := slices.ContainsFunc(fields, func(f catalog.Field) bool {
		return f.Type == catalog.FieldFile || slices.ContainsFunc(f.Fields, func(g catalog.Field) bool { return g.Type == catalog.FieldFile })
	})
	no := false
	return &sdk.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: readOnly,
		DestructiveHint: &no, OpenWorldHint: &openWorld}
}

// withError adds the tool error's shape to an output schema that has no
// "error" member of its own (a job's error has the same shape).
func withError(s obj) obj {
	props := s["properties"].(obj)
	if _, ok := props["error"]; !ok {
		props["error"] = errorOutput()
	}
	return s
}

// arguments are a tool call's arguments, decoded once.
type arguments struct {
	raw map[string]json.RawMessage
}

func parseArguments(raw json.RawMessage) (*arguments, error) {
	a := &arguments{raw: map[string]json.RawMessage{}}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(raw, &a.raw); err != nil {
		return nil, connector.Errorf(connector.EINVALID, "arguments must be a JSON object: %v", err)
	}
	return a, nil
}

// check refuses arguments the tool does not take, as the REST API refuses
// unknown fields.
func (a *arguments) check(known map[string]catalog.Field) error {
	var unknown []string
	for k := range a.raw {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	e := connector.Errorf(connector.EINVALID, "unknown argument(s): %s", strings.Join(unknown, ", "))
	for _, k := range unknown {
		e.Details = append(e.Details, connector.FieldError{Field: k, Message: "is not an argument of this tool"})
	}
	return e
}

// string reads a string argument; absent is "".
func (a *arguments) string(name string) (string, error) {
	v, ok := a.raw[name]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fieldError(name, "must be a string")
	}
	return s, nil
}

// bool reads a boolean argument; absent is false.
func (a *arguments) bool(name string) (bool, error) {
	v, ok := a.raw[name]
	if !ok || string(v) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, fieldError(name, "must be true or false")
	}
	return b, nil
}

// int reads a whole-number argument in [lo, hi]; absent is def.
func (a *arguments) int(name string, lo, hi, def int) (int, error) {
	v, ok := a.raw[name]
	if !ok || string(v) == "null" {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil || n < lo || n > hi {
		return 0, fieldError(name, fmt.Sprintf("must be a whole number from %d to %d", lo, hi))
	}
	return n, nil
}

// wait reads wait_seconds.
func (a *arguments) wait(def int) (time.Duration, error) {
	n, err := a.int("wait_seconds", 0, maxWaitSeconds, def)
	return time.Duration(n) * time.Second, err
}

// body is the request's fields: every argument that is a catalog body field,
// passed on as the caller wrote it.
func (a *arguments) body(op *catalog.Operation) map[string]json.RawMessage {
	body := map[string]json.RawMessage{}
	for _, f := range op.Inputs {
		if f.In != "" && f.In != catalog.InBody {
			continue
		}
		if v, ok := a.raw[f.Key]; ok {
			body[f.Key] = v
		}
	}
	return body
}

func fieldError(field, msg string) error {
	return &connector.Error{Code: connector.EINVALID, Message: field + " " + msg,
		Details: []connector.FieldError{{Field: field, Message: msg}}}
}

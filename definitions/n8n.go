package definitions

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// The n8n templates are for installs that cannot add the community node
// (n8n-nodes-imgflow): built-in nodes only, files in and out through the HTTP
// Request node, failed jobs stopping the workflow, and the setup written in a
// Sticky Note on the canvas.

// n8nCredential is the Header Auth credential every imgflow request uses:
// the key lives in n8n's credential store, never in the workflow.
var n8nCredential = obj{"httpHeaderAuth": obj{"id": "imgflowApiKey", "name": "imgflow API key (X-API-Key)"}}

// N8nMinimum is the oldest n8n release the templates (and the community node
// package) support: README.md and n8n-nodes-imgflow's package.json and README
// state it, ci.sh runs the e2e on its last patch (e2e/oldest) as well as on
// the newest, and n8n_test.go checks every node below against the versions
// that release knows.
const N8nMinimum = "2.8"

// Built-in node versions the templates use: for each node the lowest
// typeVersion whose parameters and behaviour the templates rely on (read in
// n8n-nodes-base's sources), so that a template imports and runs on every
// n8n from N8nMinimum on. n8n keeps every version of a node, so a newer n8n
// runs them unchanged.
const (
	// 4.2 builds multipart bodies with form-data (the file part of the
	// upload); 4.4 stops sending credentials (the X-API-Key header) on a
	// redirect to another origin. 4.5 (after 2.8) only adds error details
	// under Continue On Fail, which the templates do not use.
	n8nHTTPVersion = 4.4
	// 2 is the first If with the filter conditions; filter version 1 (2.2
	// made it 2, 2.3 made it 3) differs only for boolean and number
	// operands, the templates compare strings strictly.
	n8nIfVersion       = 2
	n8nIfFilterVersion = 1
	// 1.1 only changed the defaults of the time-interval mode; the webhook
	// resume and its time limit are the same in 1.
	n8nWaitVersion = 1
	// 1 carries the Respond mode "Using Respond to Webhook Node" and the
	// Raw Body option (binary "data") the signature check reads.
	n8nWebhookVersion = 1
	// 1.1 fails with "No file(s) found" when the path matches nothing; 1
	// outputs no item and the run ends silently (a template run before its
	// path is set would seem to do nothing).
	n8nReadFileVersion = 1.1
	// 1 runs JavaScript only (its language parameter is hidden), all the
	// signature check needs.
	n8nCodeVersion = 1
	// 1 carries respondWith json and noData with options.responseCode.
	n8nRespondVersion = 1
	n8nStopVersion    = 1
	n8nManualVersion  = 1
	n8nStickyVersion  = 1
	n8nNoOpVersion    = 1
)

// n8nDefaultImagePath is the file Read Image reads until the user sets theirs.
const n8nDefaultImagePath = "/home/node/.n8n-files/photo.jpg"

// renderN8n renders three importable workflows: compress a file and wait
// inline, compress a file with a callback that resumes a Wait node, and a
// Webhook trigger for hook subscriptions that verifies each signature; and
// a Webhook workflow per other hook trigger (n8n_hooks.go).
func renderN8n(c *catalog.Catalog, base string) ([]File, error) {
	compress := c.Operation("compress_image")
	callback := c.Operation("compress_image_callback")
	hook, others := n8nHookTriggers(c)
	setupCred := fmt.Sprintf("Create a **Header Auth** credential named \"imgflow API key (X-API-Key)\": Name `%s`, Value your API key. The HTTP Request nodes use it.", c.Auth.Header)

	// 1. Compress a file, waiting inline.
	inline := newN8nFlow("imgflow: " + compress.Label + " (file in, file out)")
	inline.note(fmt.Sprintf("## %s\n%s\n\n1. %s\n2. **Read Image** reads the file to compress (any node that outputs a binary field `data` works: Google Drive, an email attachment, a form upload).\n3. Run it: **%s** uploads the file (multipart) and waits up to %d s; **Download** returns the compressed file as binary `data`. To resize, convert or keep metadata in the same job (still one credit), fill the upload node's %s body fields (empty ones do nothing). A failed job stops the workflow with its error code (such as insufficient_credits); a job still running after the wait stops with its id, to fetch later with GET %s/v1/jobs/{id}.\n\nCan install community nodes? The **n8n-nodes-imgflow** node does all this in one node.",
		compress.Label, compress.Description, setupCred, compress.Label, catalog.DefaultWait, n8nTransformFieldNames(compress), base), 0)
	inline.add(n8nNode("Start", "n8n-nodes-base.manualTrigger", n8nManualVersion, 0, 0, obj{}))
	inline.add(n8nReadFile("Read Image", 1))
	inline.add(n8nUpload(compress.Label, 2, base+withQuery(compress.Path, compress.Query), n8nTransformFields(compress)))
	inline.add(n8nIfEquals("Completed?", 3, "={{ $json.status }}", string(connector.StatusCompleted)))
	inline.add(n8nDownload("Download", 4, -1, "={{ $json.result.file_url }}"))
	inline.add(n8nStop("Stop: job not completed", 4, 1,
		"={{ $json.error ? 'imgflow job ' + $json.id + ' failed: ' + $json.error.code + ': ' + $json.error.message : 'imgflow job ' + $json.id + ' is still ' + $json.status + '; get it later with GET "+base+"/v1/jobs/' + $json.id }}"))
	inline.connect("Start", 0, "Read Image")
	inline.connect("Read Image", 0, compress.Label)
	inline.connect(compress.Label, 0, "Completed?")
	inline.connect("Completed?", 0, "Download")
	inline.connect("Completed?", 1, "Stop: job not completed")

	// 2. Compress a file; imgflow calls the Wait node's resume URL back.
	async := newN8nFlow("imgflow: " + callback.Label + " (file in, file out)")
	async.note(fmt.Sprintf("## %s\n%s\n\n1. %s\n2. **Read Image** reads the file to compress.\n3. **%s** uploads it with `callback_url` = this execution's resume URL; **Wait for imgflow callback** resumes when imgflow POSTs the finished job (at most 15 minutes: then the workflow stops as timed out). To resize, convert or keep metadata in the same job, fill the upload node's %s body fields.\n4. n8n must be reachable from imgflow at its webhook URL (set WEBHOOK_URL when n8n runs behind a proxy).",
		callback.Label, callback.Description, setupCred, callback.Label, n8nTransformFieldNames(callback)), 0)
	async.add(n8nNode("Start", "n8n-nodes-base.manualTrigger", n8nManualVersion, 0, 0, obj{}))
	async.add(n8nReadFile("Read Image", 1))
	async.add(n8nUpload(callback.Label, 2, base+callback.Path, append([]any{
		obj{"name": "callback_url", "value": "={{ $execution.resumeUrl }}"},
	}, n8nTransformFields(callback)...)))
	wait := n8nNode("Wait for imgflow callback", "n8n-nodes-base.wait", n8nWaitVersion, 3, 0, obj{
		"resume":        "webhook",
		"httpMethod":    "POST",
		"limitWaitTime": true,
		"limitType":     "afterTimeInterval",
		"resumeAmount":  15,
		"resumeUnit":    "minutes",
		"options":       obj{},
	})
	wait["webhookId"] = n8nID("callback-wait")
	async.add(wait)
	async.add(n8nIfEquals("Completed?", 4, "={{ $json.body ? $json.body.data.status : 'timed out' }}", string(connector.StatusCompleted)))
	async.add(n8nDownload("Download", 5, -1, "={{ $json.body.data.result.file_url }}"))
	async.add(n8nStop("Stop: job not completed", 5, 1,
		"={{ !$json.body ? 'no callback from imgflow within 15 minutes' : 'imgflow job ' + $json.body.data.id + ' failed: ' + $json.body.data.error.code + ': ' + $json.body.data.error.message }}"))
	async.connect("Start", 0, "Read Image")
	async.connect("Read Image", 0, callback.Label)
	async.connect(callback.Label, 0, "Wait for imgflow callback")
	async.connect("Wait for imgflow callback", 0, "Completed?")
	async.connect("Completed?", 0, "Download")
	async.connect("Completed?", 1, "Stop: job not completed")

	// 3. A Webhook for hook deliveries, verifying each signature.
	hookFlow := newN8nFlow("imgflow: " + hook.Label + " (webhook)")
	hookFlow.note(fmt.Sprintf("## %s\n%s\n\n1. Activate this workflow and copy the Webhook node's production URL.\n2. Subscribe it: `POST %s%s` with `{\"target_url\": \"<webhook URL>\", \"event\": \"job.finished\"}` and the %s header.\n3. Paste the `secret` of that answer into **Verify Signature** (SECRET).\n\nEach delivery's Standard Webhooks signature is checked: a bad or stale one is answered 401 and stops here; a good one is answered 204 and `job` is the finished job.",
		hook.Label, hook.Description, base, catalog.HooksPath, c.Auth.Header), 0)
	webhook := n8nNode("imgflow "+hook.Label, "n8n-nodes-base.webhook", n8nWebhookVersion, 0, 0, obj{
		"httpMethod":   "POST",
		"path":         "imgflow-job-finished",
		"responseMode": "responseNode",
		"options":      obj{"rawBody": true},
	})
	webhook["webhookId"] = n8nID("job-finished-webhook")
	hookFlow.add(webhook)
	hookFlow.addSignatureCheck("imgflow "+hook.Label, n8nVerifyCode)
	hookFlow.add(n8nIfEquals("Completed?", 4, "={{ $json.job.status }}", string(connector.StatusCompleted)))
	hookFlow.add(n8nDownload("Download", 5, -1, "={{ $json.job.result.file_url }}"))
	hookFlow.add(n8nNode("Failed Job", "n8n-nodes-base.noOp", n8nNoOpVersion, 5, 0, obj{}))
	hookFlow.connect("Accept", 0, "Completed?")
	hookFlow.connect("Completed?", 0, "Download")
	hookFlow.connect("Completed?", 1, "Failed Job")

	var files []File
	for name, wf := range map[string]*n8nFlow{
		"compress-image-wait.json":     inline,
		"compress-image-callback.json": async,
		"job-finished-webhook.json":    hookFlow,
		"compress-many-wait.json":      n8nCompressManyFlow(c, base, setupCred),
	} {
		f, err := fileOf("n8n", name, wf.workflow())
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	for _, op := range others {
		wf, err := n8nEventFlow(c, &op, base)
		if err != nil {
			return nil, err
		}
		f, err := fileOf("n8n", n8nEventFileName(&op), wf.workflow())
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// n8nTransformFields are the upload's body fields for op's transform
// (catalog fields: resize, convert, preserve...), empty: a user fills in
// what they want, and an empty field asks for nothing.
func n8nTransformFields(op *catalog.Operation) []any {
	var fields []any
	for _, f := range op.Inputs {
		if catalog.IsTransformField(f.Key) {
			fields = append(fields, obj{"name": f.Key, "value": ""})
		}
	}
	return fields
}

// n8nTransformFieldNames lists them for a template's note: `resize`, ...
func n8nTransformFieldNames(op *catalog.Operation) string {
	var names []string
	for _, f := range op.Inputs {
		if catalog.IsTransformField(f.Key) {
			names = append(names, "`"+f.Key+"`")
		}
	}
	return strings.Join(names, ", ")
}

// n8nVerifyCode checks a delivery's Standard Webhooks signature in a Code
// node: HMAC-SHA256 of "id.timestamp.body" over the raw body (the Webhook
// node's Raw Body option), keyed with the base64 part of the hook's secret,
// and a timestamp at most 5 minutes off. n8n Cloud allows require('crypto');
// self-hosted n8n needs NODE_FUNCTION_ALLOW_BUILTIN=crypto.
const n8nVerifyCode = `// The secret POST /v1/hooks answered for this webhook.
const SECRET = 'PASTE-THE-HOOK-SECRET-HERE';

const crypto = require('crypto');
const key = Buffer.from(SECRET.slice(SECRET.indexOf('_') + 1), 'base64');
const out = [];
for (const [i, item] of $input.all().entries()) {
  const h = item.json.headers;
  const raw = await this.helpers.getBinaryDataBuffer(i, 'data');
  const signed = h['webhook-id'] + '.' + h['webhook-timestamp'] + '.';
  const expected = Buffer.from('v1,' + crypto.createHmac('sha256', key).update(signed).update(raw).digest('base64'));
  const fresh = Math.abs(Date.now() / 1000 - Number(h['webhook-timestamp'])) <= 300;
  const match = String(h['webhook-signature'] || '').split(' ').some((s) => {
    const got = Buffer.from(s);
    return got.length === expected.length && crypto.timingSafeEqual(got, expected);
  });
  const reason = !match ? 'signature does not match' : !fresh ? 'timestamp too old or too new' : '';
  out.push({ json: { valid: match && fresh, reason, event: item.json.body.type, job: item.json.body.data } });
}
return out;
`

// n8nFlow collects the nodes and connections of one workflow.
type n8nFlow struct {
	name  string
	nodes []obj
	conns obj
}

func newN8nFlow(name string) *n8nFlow { return &n8nFlow{name: name, conns: obj{}} }

func (f *n8nFlow) add(n obj) { f.nodes = append(f.nodes, n) }

// note adds the setup Sticky Note above the nodes.
func (f *n8nFlow) note(content string, column int) {
	n := n8nNode("Setup", "n8n-nodes-base.stickyNote", n8nStickyVersion, column, 0, obj{
		"content": content,
		"height":  420,
		"width":   560,
		"color":   5,
	})
	n["position"] = []int{-400, 100}
	f.add(n)
}

// connect links output out of from to the first input of to.
func (f *n8nFlow) connect(from string, out int, to string) {
	outs, _ := f.conns[from].(obj)
	if outs == nil {
		outs = obj{"main": []any{}}
		f.conns[from] = outs
	}
	main := outs["main"].([]any)
	for len(main) <= out {
		main = append(main, []any{})
	}
	main[out] = append(main[out].([]any), obj{"node": to, "type": "main", "index": 0})
	outs["main"] = main
}

func (f *n8nFlow) workflow() obj {
	list := make([]any, len(f.nodes))
	for i, n := range f.nodes {
		list[i] = n
	}
	return obj{
		"name":        f.name,
		"nodes":       list,
		"connections": f.conns,
		"active":      false,
		"settings":    obj{"executionOrder": "v1"},
		"pinData":     obj{},
		"tags":        []any{},
		"meta":        obj{"templateCredsSetupCompleted": false, "instanceId": strings.Repeat("0", 64)},
	}
}

// n8nID is a stable UUID-shaped id, so renders are byte-identical.
func n8nID(seed string) string {
	h := sha256.Sum256([]byte("imgflow-n8n:" + seed))
	x := fmt.Sprintf("%x", h[:16])
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}

// n8nNode places a node in a grid: column left to right, row -1 (upper
// branch), 0 or 1 (lower branch).
func n8nNode(name, typ string, version float64, column, row int, params obj) obj {
	return obj{
		"id":          n8nID(name),
		"name":        name,
		"type":        typ,
		"typeVersion": version,
		"position":    []int{240 + 240*column, 300 + 160*row},
		"parameters":  params,
	}
}

func n8nReadFile(name string, column int) obj {
	return n8nNode(name, "n8n-nodes-base.readWriteFile", n8nReadFileVersion, column, 0, obj{
		"fileSelector": n8nDefaultImagePath,
		"options":      obj{},
	})
}

// n8nUpload posts the item's binary "data" as the multipart file part,
// with extra text fields.
func n8nUpload(name string, column int, url string, fields []any) obj {
	params := []any{obj{"parameterType": "formBinaryData", "name": "file", "inputDataFieldName": "data"}}
	params = append(params, fields...)
	n := n8nNode(name, "n8n-nodes-base.httpRequest", n8nHTTPVersion, column, 0, obj{
		"method":          "POST",
		"url":             url,
		"authentication":  "genericCredentialType",
		"genericAuthType": "httpHeaderAuth",
		"sendBody":        true,
		"contentType":     "multipart-form-data",
		"bodyParameters":  obj{"parameters": params},
		"options":         obj{},
	})
	n["credentials"] = n8nCredential
	return n
}

// n8nDownload fetches a signed file_url (no key needed) as binary "data".
func n8nDownload(name string, column, row int, url string) obj {
	return n8nNode(name, "n8n-nodes-base.httpRequest", n8nHTTPVersion, column, row, obj{
		"url": url,
		"options": obj{"response": obj{"response": obj{
			"responseFormat":     "file",
			"outputPropertyName": "data",
		}}},
	})
}

// n8nIfEquals is an If node true when value equals want (a string, strictly).
func n8nIfEquals(name string, column int, value, want string) obj {
	return n8nNode(name, "n8n-nodes-base.if", n8nIfVersion, column, 0, obj{
		"conditions": obj{
			"options":    obj{"caseSensitive": true, "leftValue": "", "typeValidation": "strict", "version": n8nIfFilterVersion},
			"combinator": "and",
			"conditions": []any{obj{
				"id":         n8nID(name + "-condition"),
				"leftValue":  value,
				"rightValue": want,
				"operator":   obj{"type": "string", "operation": "equals"},
			}},
		},
		"options": obj{},
	})
}

func n8nStop(name string, column, row int, message string) obj {
	return n8nNode(name, "n8n-nodes-base.stopAndError", n8nStopVersion, column, row, obj{
		"errorMessage": message,
	})
}

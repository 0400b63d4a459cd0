package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// n8n templates for the hook triggers that are not about one job (Credits
// Low, Batch Finished): each a Webhook workflow of its own, subscribed to
// its event, that verifies every signature as the job trigger's does and
// then does the one thing the event calls for.

// n8nHookTriggers splits the catalog's hook triggers into the job trigger
// (whose template downloads the compressed file) and the others.
func n8nHookTriggers(c *catalog.Catalog) (job *catalog.Operation, others []catalog.Operation) {
	for _, op := range c.HookTriggers() {
		if op.File != nil && job == nil {
			op := op
			job = &op
			continue
		}
		others = append(others, op)
	}
	return job, others
}

// n8nEventFileName is the template's file name: credits-low-webhook.json.
func n8nEventFileName(op *catalog.Operation) string {
	return strings.ReplaceAll(op.Key, "_", "-") + "-webhook.json"
}

// n8nEventFlow renders the Webhook workflow of a hook trigger whose data
// is not a job. After the verified delivery is accepted, a batch's ZIP is
// downloaded (when an item completed), and a low balance is read again
// from the account (a top-up may have come since).
func n8nEventFlow(c *catalog.Catalog, op *catalog.Operation, base string) (*n8nFlow, error) {
	ev := op.FixedHookEvent()
	if ev == "" {
		return nil, fmt.Errorf("%s: an n8n event template needs a trigger with one event", op.Key)
	}
	var sub bytes.Buffer
	enc := json.NewEncoder(&sub)
	enc.SetEscapeHTML(false) // <webhook URL> as written
	if err := enc.Encode(hookSubscribeBody(op, "<webhook URL>", func(f catalog.Field) any {
		if d := typedDefault(f); d != nil {
			return d
		}
		return f.Example
	})); err != nil {
		return nil, err
	}
	var optional []string
	for _, f := range op.Inputs {
		optional = append(optional, fmt.Sprintf("`%s`, %s", f.Key, strings.ToLower(f.Help[:1])+strings.TrimSuffix(f.Help[1:], ".")))
	}
	inputs := ""
	if len(optional) > 0 {
		inputs = " Optional: " + strings.Join(optional, "; ") + "."
	}
	flow := newN8nFlow("imgflow: " + op.Label + " (webhook)")
	flow.note(fmt.Sprintf("## %s\n%s\n\n1. Activate this workflow and copy the Webhook node's production URL.\n2. Subscribe it: `POST %s%s` with `%s` and the %s header.%s\n3. Paste the `secret` of that answer into **Verify Signature** (SECRET).\n\nEach delivery's Standard Webhooks signature is checked: a bad or stale one is answered 401 and stops here; a good one is answered 204 and `data` is the %s event's data.",
		op.Label, op.Description, base, catalog.HooksPath, strings.TrimSpace(sub.String()), c.Auth.Header, inputs, ev), 0)
	trigger := "imgflow " + op.Label
	webhook := n8nNode(trigger, "n8n-nodes-base.webhook", n8nWebhookVersion, 0, 0, obj{
		"httpMethod":   "POST",
		"path":         "imgflow-" + strings.ReplaceAll(op.Key, "_", "-"),
		"responseMode": "responseNode",
		"options":      obj{"rawBody": true},
	})
	webhook["webhookId"] = n8nID(op.Key + "-webhook")
	flow.add(webhook)
	// The job template's check, handing on the event's data as `data`.
	code := strings.Replace(n8nVerifyCode, "job: item.json.body.data", "data: item.json.body.data", 1)
	if code == n8nVerifyCode {
		return nil, fmt.Errorf("%s: the signature check no longer hands on job: item.json.body.data", op.Key)
	}
	flow.addSignatureCheck(trigger, code)

	switch op.Sample.(type) {
	case *connector.Batch:
		check := n8nIfEquals("Any Completed?", 4, "={{ $json.data.counts.completed > 0 ? 'yes' : 'no' }}", "yes")
		check["position"] = []int{240 + 240*4, 300 - 160} // beside Accept
		flow.add(check)
		flow.add(n8nDownload("Download Archive", 5, -2, "={{ $json.data.links.archive }}"))
		flow.add(n8nNode("Nothing Compressed", "n8n-nodes-base.noOp", n8nNoOpVersion, 5, -1, obj{}))
		flow.connect("Accept", 0, "Any Completed?")
		flow.connect("Any Completed?", 0, "Download Archive")
		flow.connect("Any Completed?", 1, "Nothing Compressed")
	default:
		account := n8nNode("Get Account", "n8n-nodes-base.httpRequest", n8nHTTPVersion, 4, -1, obj{
			"url":             base + c.Auth.TestPath,
			"authentication":  "genericCredentialType",
			"genericAuthType": "httpHeaderAuth",
			"options":         obj{},
		})
		account["credentials"] = n8nCredential
		flow.add(account)
		flow.connect("Accept", 0, "Get Account")
	}
	return flow, nil
}

// n8nAllowCrypto is the environment setting a self-hosted n8n needs for the
// hook templates' signature check (n8n's NODE_FUNCTION_ALLOW_BUILTIN lists
// the Node built-in modules a Code node may require).
const n8nAllowCrypto = "NODE_FUNCTION_ALLOW_BUILTIN=crypto"

// n8nAllowCryptoNote ends the Setup note of every template that verifies
// signatures.
const n8nAllowCryptoNote = "\n\n**Self-hosted n8n:** Verify Signature uses Node's `crypto` module, which self-hosted n8n refuses (\"Module 'crypto' is disallowed\") unless n8n starts with `" + n8nAllowCrypto + "`: `" + n8nAllowCrypto + " n8n start`, or `docker run -e " + n8nAllowCrypto + " ...` (with external task runners, set it on the runners). n8n Cloud allows it already."

// addSignatureCheck adds what every hook template does after its Webhook
// node (trigger): Verify Signature (code, the Standard Webhooks check),
// Signature Valid?, Accept (204, output 0 of the flow's next step) and
// Refuse (401) then Stop.
//
// The check calls require('crypto'), which n8n Cloud allows and a default
// self-hosted n8n refuses ("Module 'crypto' is disallowed"): the Setup note
// and the Code node's own note say what to set (n8nAllowCrypto), and the
// real-n8n e2e runs the templates with exactly what the note says.
func (f *n8nFlow) addSignatureCheck(trigger, code string) {
	verify := n8nNode("Verify Signature", "n8n-nodes-base.code", n8nCodeVersion, 1, 0, obj{
		"mode":   "runOnceForAllItems",
		"jsCode": code,
	})
	verify["notes"] = "Self-hosted n8n: start n8n with " + n8nAllowCrypto + " (this node uses Node's crypto module)."
	verify["notesInFlow"] = true
	f.add(verify)
	for _, n := range f.nodes {
		if n["type"] == "n8n-nodes-base.stickyNote" {
			params := n["parameters"].(obj)
			params["content"] = params["content"].(string) + n8nAllowCryptoNote
			params["height"] = 560
		}
	}
	f.add(n8nIfEquals("Signature Valid?", 2, "={{ $json.valid ? 'yes' : 'no' }}", "yes"))
	f.add(n8nNode("Accept", "n8n-nodes-base.respondToWebhook", n8nRespondVersion, 3, -1, obj{
		"respondWith": "noData",
		"options":     obj{"responseCode": 204},
	}))
	f.add(n8nNode("Refuse", "n8n-nodes-base.respondToWebhook", n8nRespondVersion, 3, 1, obj{
		"respondWith":  "json",
		"responseBody": "={{ JSON.stringify({ error: 'signature not accepted: ' + $json.reason }) }}",
		"options":      obj{"responseCode": 401},
	}))
	f.add(n8nStop("Stop: bad signature", 4, 1, "={{ 'delivery refused: ' + $json.reason }}"))
	f.connect(trigger, 0, "Verify Signature")
	f.connect("Verify Signature", 0, "Signature Valid?")
	f.connect("Signature Valid?", 0, "Accept")
	f.connect("Signature Valid?", 1, "Refuse")
	f.connect("Refuse", 0, "Stop: bad signature")
}

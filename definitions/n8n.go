package definitions

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// n8nCredential is the Header Auth credential every imgflow request uses:
// the key lives in n8n's credential store, never in the workflow.
var n8nCredential = obj{"httpHeaderAuth": obj{"id": "imgflowApiKey", "name": "imgflow API key (X-API-Key)"}}

// renderN8n renders three importable workflows made of built-in nodes only:
// compress and wait inline, compress with a callback that resumes a Wait
// node, and a Webhook trigger that a hook subscription can target.
func renderN8n(c *connector.Catalog, base string) ([]File, error) {
	compress := c.Operation("compress_image")
	callback := c.Operation("compress_image_callback")
	hook := firstOfKind(c, connector.KindHookTrigger)
	example := fieldExample(compress.Inputs, "image_url")

	inline := n8nWorkflow("imgflow: Compress Image (wait inline)",
		n8nNode("Start", "n8n-nodes-base.manualTrigger", 1, 0, obj{}),
		n8nHTTP(compress.Label, 1, base+withQuery(compress.Path, compress.Query), compress.Method,
			"={\n  \"image_url\": \""+example+"\"\n}"),
	)
	wait := n8nNode("Wait for imgflow callback", "n8n-nodes-base.wait", 1.1, 2, obj{
		"resume":     "webhook",
		"httpMethod": "POST",
		"options":    obj{},
	})
	wait["webhookId"] = n8nID("callback-wait")
	async := n8nWorkflow("imgflow: "+callback.Label,
		n8nNode("Start", "n8n-nodes-base.manualTrigger", 1, 0, obj{}),
		n8nHTTP(callback.Label, 1, base+callback.Path, callback.Method,
			"={\n  \"image_url\": \""+example+"\",\n  \"callback_url\": \"{{ $execution.resumeUrl }}\"\n}"),
		wait,
	)
	webhook := n8nNode("imgflow "+hook.Label, "n8n-nodes-base.webhook", 2, 0, obj{
		"httpMethod":   "POST",
		"path":         "imgflow-job-finished",
		"responseMode": "onReceived",
		"options":      obj{},
	})
	webhook["webhookId"] = n8nID("job-finished-webhook")
	isCompleted := n8nNode("Completed?", "n8n-nodes-base.if", 1, 1, obj{
		"conditions": obj{
			"string": []any{obj{"value1": "={{ $json.body.data.status }}", "value2": "completed"}},
		},
	})
	hookFlow := n8nWorkflow("imgflow: "+hook.Label+" (webhook)", webhook, isCompleted)
	hookFlow["meta"].(obj)["description"] = fmt.Sprintf(
		"Activate this workflow, then subscribe its production webhook URL: POST %s%s with {\"target_url\": \"<webhook URL>\", \"event\": \"job.finished\"} and the X-API-Key header. Each delivery's body.data is the finished job.",
		base, connector.HooksPath)

	var files []File
	for name, wf := range map[string]obj{
		"compress-image-wait.json":     inline,
		"compress-image-callback.json": async,
		"job-finished-webhook.json":    hookFlow,
	} {
		f, err := fileOf("n8n", name, wf)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func fieldExample(fields []connector.Field, key string) string {
	for _, f := range fields {
		if f.Key == key {
			return f.Example
		}
	}
	return ""
}

// n8nID is a stable UUID-shaped id, so renders are byte-identical.
func n8nID(seed string) string {
	h := sha256.Sum256([]byte("imgflow-n8n:" + seed))
	x := fmt.Sprintf("%x", h[:16])
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}

func n8nNode(name, typ string, version float64, column int, params obj) obj {
	return obj{
		"id":          n8nID(name),
		"name":        name,
		"type":        typ,
		"typeVersion": version,
		"position":    []int{240 + 260*column, 300},
		"parameters":  params,
	}
}

func n8nHTTP(name string, column int, url, method, jsonBody string) obj {
	n := n8nNode(name, "n8n-nodes-base.httpRequest", 4.2, column, obj{
		"method":          method,
		"url":             url,
		"authentication":  "genericCredentialType",
		"genericAuthType": "httpHeaderAuth",
		"sendBody":        true,
		"specifyBody":     "json",
		"jsonBody":        jsonBody,
		"options":         obj{},
	})
	n["credentials"] = n8nCredential
	return n
}

// n8nWorkflow chains the nodes in order through their main outputs.
func n8nWorkflow(name string, nodes ...obj) obj {
	conns := obj{}
	for i := 0; i+1 < len(nodes); i++ {
		conns[nodes[i]["name"].(string)] = obj{"main": []any{[]any{
			obj{"node": nodes[i+1]["name"], "type": "main", "index": 0},
		}}}
	}
	list := make([]any, len(nodes))
	for i, n := range nodes {
		list[i] = n
	}
	return obj{
		"name":        name,
		"nodes":       list,
		"connections": conns,
		"active":      false,
		"settings":    obj{"executionOrder": "v1"},
		"pinData":     obj{},
		"tags":        []any{},
		"meta":        obj{"templateCredsSetupCompleted": false, "instanceId": strings.Repeat("0", 64)},
	}
}

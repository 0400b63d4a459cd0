package definitions

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/catalog"
)

// Every hook trigger of the catalog reaches every platform that has
// triggers, subscribing its own event(s): a trigger added to the catalog
// and missed by a renderer fails here.

func hookTriggersOf(t *testing.T) []catalog.Operation {
	hooks := catalog.Default().HookTriggers()
	if len(hooks) < 3 {
		t.Fatalf("catalog has %d hook triggers, want Job Finished, Credits Low and Batch Finished", len(hooks))
	}
	return hooks
}

// checkSubscribedEvent checks the event a rendered subscription body sends:
// the fixed event, or (for a trigger whose input picks one) the template of
// that input.
func checkSubscribedEvent(t *testing.T, where string, op catalog.Operation, got any, pickTemplate string) {
	t.Helper()
	if ev := op.FixedHookEvent(); ev != "" {
		if got != ev {
			t.Errorf("%s: %s subscribes event %v, want %s", where, op.Key, got, ev)
		}
		return
	}
	if got != pickTemplate {
		t.Errorf("%s: %s subscribes event %v, want the user's choice %s", where, op.Key, got, pickTemplate)
	}
}

func TestEveryHookTriggerIsAZapierRESTHook(t *testing.T) {
	app := zapierAppJSON(t)
	for _, op := range hookTriggersOf(t) {
		trig, ok := app["triggers"].(map[string]any)[op.Key].(map[string]any)
		if !ok {
			t.Errorf("zapier: no trigger %s", op.Key)
			continue
		}
		o := trig["operation"].(map[string]any)
		if o["type"] != "hook" {
			t.Errorf("zapier: %s is %v, want a hook", op.Key, o["type"])
		}
		for _, fn := range []string{"perform", "performSubscribe", "performUnsubscribe", "performList"} {
			if o[fn] == nil {
				t.Errorf("zapier: %s has no %s", op.Key, fn)
			}
		}
		sub := o["performSubscribe"].(map[string]any)
		body := sub["body"].(map[string]any)
		if sub["url"] != PlaceholderURL+catalog.HooksPath || body["target_url"] != "{{bundle.targetUrl}}" {
			t.Errorf("zapier: %s subscribes %v with %v", op.Key, sub["url"], body)
		}
		checkSubscribedEvent(t, "zapier", op, body["event"], "{{bundle.inputData.event}}")
		for _, f := range op.Inputs {
			if body[f.Key] != "{{bundle.inputData."+f.Key+"}}" {
				t.Errorf("zapier: %s does not send input %s (%v)", op.Key, f.Key, body[f.Key])
			}
			if !f.Required && sub["removeMissingValuesFrom"] == nil {
				t.Errorf("zapier: %s sends an empty %s instead of leaving it to the server's default", op.Key, f.Key)
			}
		}
	}
}

func TestEveryHookTriggerIsAMakeInstantTriggerWithItsWebhook(t *testing.T) {
	files := render(t)
	for _, op := range hookTriggersOf(t) {
		attach := fileJSON(t, files, "make/webhook-"+camel(op.Key)+".attach.iml.json").(map[string]any)
		body := attach["body"].(map[string]any)
		if attach["url"] != catalog.HooksPath || body["target_url"] != "{{webhook.url}}" {
			t.Errorf("make: %s attaches %v with %v", op.Key, attach["url"], body)
		}
		checkSubscribedEvent(t, "make", op, body["event"], "{{parameters.event}}")
		detach := fileJSON(t, files, "make/webhook-"+camel(op.Key)+".detach.iml.json").(map[string]any)
		if detach["method"] != "DELETE" || !strings.Contains(detach["url"].(string), "{{webhook.externalHookId}}") {
			t.Errorf("make: %s detaches with %v", op.Key, detach)
		}
		for _, part := range []string{"communication", "interface", "samples"} {
			name := "make/module-watch" + upperFirst(camel(op.Key)) + "." + part + ".iml.json"
			if !slices.ContainsFunc(files, func(f File) bool { return f.Path() == name }) {
				t.Errorf("make: %s has no %s", op.Key, name)
			}
		}
	}
}

func TestEveryHookTriggerIsAPowerAutomateWebhookTriggerOfItsOwn(t *testing.T) {
	doc := fileJSON(t, render(t), "powerautomate/apiDefinition.swagger.json").(map[string]any)
	paths := doc["paths"].(map[string]any)
	ids := map[string]string{}
	for path, item := range paths {
		if post, ok := item.(map[string]any)["post"].(map[string]any); ok && post["x-ms-trigger"] != nil {
			ids[post["operationId"].(string)] = path
		}
	}
	for _, op := range hookTriggersOf(t) {
		path, ok := ids[upperFirst(camel(op.Key))]
		if !ok {
			t.Errorf("powerautomate: no trigger operation for %s (have %v)", op.Key, ids)
			continue
		}
		// Each trigger its own path, all of them POST /v1/hooks.
		if u, err := url.Parse(path); err != nil || u.Path != catalog.HooksPath {
			t.Errorf("powerautomate: %s posts to %s, not %s", op.Key, path, catalog.HooksPath)
		}
		post := paths[path].(map[string]any)["post"].(map[string]any)
		schema := post["parameters"].([]any)[len(post["parameters"].([]any))-1].(map[string]any)["schema"].(map[string]any)
		props := schema["properties"].(map[string]any)
		if props["target_url"].(map[string]any)["x-ms-notification-url"] != true {
			t.Errorf("powerautomate: %s's target_url is not the notification URL", op.Key)
		}
		ev := props["event"].(map[string]any)
		var enum []string
		for _, e := range ev["enum"].([]any) {
			enum = append(enum, e.(string))
		}
		if !slices.Equal(enum, op.HookEvents) || !slices.Contains(toStrings(schema["required"]), "event") {
			t.Errorf("powerautomate: %s's event %v (required %v), want one of %v, required", op.Key, enum, schema["required"], op.HookEvents)
		}
		if fixed := op.FixedHookEvent(); fixed != "" && (ev["default"] != fixed || ev["x-ms-visibility"] != "internal") {
			t.Errorf("powerautomate: %s must send %s by itself (internal, default), got %v", op.Key, fixed, ev)
		}
		for _, f := range op.Inputs {
			if props[f.Key] == nil {
				t.Errorf("powerautomate: %s lacks input %s", op.Key, f.Key)
			}
		}
	}
	if len(ids) != len(hookTriggersOf(t)) {
		t.Errorf("powerautomate: trigger operations %v, want one per hook trigger", ids)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestEveryHookTriggerHasAnN8nWebhookTemplateSubscribingItsEvent(t *testing.T) {
	files := render(t)
	for _, op := range hookTriggersOf(t) {
		wf := fileJSON(t, files, "n8n/"+n8nEventFileName(&op)).(map[string]any)
		var note string
		webhook := false
		for _, n := range wf["nodes"].([]any) {
			n := n.(map[string]any)
			switch n["type"] {
			case "n8n-nodes-base.stickyNote":
				note = n["parameters"].(map[string]any)["content"].(string)
			case "n8n-nodes-base.webhook":
				webhook = n["parameters"].(map[string]any)["options"].(map[string]any)["rawBody"] == true
			}
		}
		if !webhook {
			t.Errorf("n8n: %s's template has no raw-body Webhook node", op.Key)
		}
		if !strings.Contains(note, `"event`) || !strings.Contains(note, op.HookEvents[0]) {
			t.Errorf("n8n: %s's setup does not subscribe %s: %s", op.Key, op.HookEvents[0], note)
		}
	}
}

func TestEveryHookTriggerIsInTheN8nNodeCatalogWithItsEvents(t *testing.T) {
	b, err := N8nNodeCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Operations []struct {
			Key        string   `json:"key"`
			Kind       string   `json:"kind"`
			HookEvents []string `json:"hookEvents"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	for _, op := range hookTriggersOf(t) {
		i := slices.IndexFunc(cat.Operations, func(o struct {
			Key        string   `json:"key"`
			Kind       string   `json:"kind"`
			HookEvents []string `json:"hookEvents"`
		}) bool {
			return o.Key == op.Key
		})
		if i < 0 || cat.Operations[i].Kind != string(catalog.KindHookTrigger) || !slices.Equal(cat.Operations[i].HookEvents, op.HookEvents) {
			t.Errorf("n8n node catalog: %s missing or without its events %v", op.Key, op.HookEvents)
		}
	}
}

func TestEveryHookTriggerIsACallbackOfTheOpenAPIHookSubscription(t *testing.T) {
	doc := fileJSON(t, render(t), "openapi/openapi.json").(map[string]any)
	post := doc["paths"].(map[string]any)["/v1/hooks"].(map[string]any)["post"].(map[string]any)
	callbacks := post["callbacks"].(map[string]any)
	keys := toStrings(post["x-imgflow-catalog-keys"])
	events := toStrings(doc["components"].(map[string]any)["schemas"].(map[string]any)["HookRequest"].(map[string]any)["properties"].(map[string]any)["event"].(map[string]any)["enum"])
	for _, op := range hookTriggersOf(t) {
		if !slices.Contains(keys, op.Key) || callbacks[camel(op.Key)] == nil {
			t.Errorf("openapi: %s is not listed on POST /v1/hooks with its callback", op.Key)
		}
		for _, ev := range op.HookEvents {
			if !slices.Contains(events, ev) {
				t.Errorf("openapi: HookRequest.event lacks %s (%s)", ev, op.Key)
			}
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(events)))) != len(events) {
		t.Errorf("openapi: HookRequest.event lists an event twice: %v", events)
	}
}

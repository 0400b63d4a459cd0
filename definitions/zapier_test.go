package definitions

import (
	"encoding/json"
	"strings"
	"testing"
)

func zapierApp(t *testing.T) map[string]any {
	t.Helper()
	files := Platform(render(t), "zapier")
	if len(files) != 1 {
		t.Fatalf("zapier renders %d files, want one app definition", len(files))
	}
	var app map[string]any
	if err := json.Unmarshal(files[0].Data, &app); err != nil {
		t.Fatal(err)
	}
	return app
}

// No offline Zapier validator notices a missing sample, but Zapier refuses
// to publish an operation without one.
func TestEveryZapierOperationHasASampleWithAnID(t *testing.T) {
	app := zapierApp(t)
	n := 0
	for _, group := range []string{"triggers", "searches", "creates"} {
		ops, _ := app[group].(map[string]any)
		for key, raw := range ops {
			n++
			op := raw.(map[string]any)["operation"].(map[string]any)
			sample, ok := op["sample"].(map[string]any)
			if !ok || len(sample) == 0 {
				t.Errorf("%s.%s has no sample", group, key)
				continue
			}
			if group == "triggers" && sample["id"] == nil {
				t.Errorf("trigger %s's sample has no id to dedupe on", key)
			}
			for _, f := range op["outputFields"].([]any) {
				of := f.(map[string]any)
				if of["label"] == "" || of["label"] == nil {
					t.Errorf("%s.%s output %v has no label", group, key, of["key"])
				}
			}
		}
	}
	if n != 7 {
		t.Errorf("zapier app has %d operations, want 7 (5 creates, 2 triggers)", n)
	}
}

func TestZapierCallbackActionResumesFromTheCallback(t *testing.T) {
	op := zapierApp(t)["creates"].(map[string]any)["compress_image_callback"].(map[string]any)["operation"].(map[string]any)
	perform, _ := op["perform"].(map[string]any)["source"].(string)
	if !strings.Contains(perform, "z.generateCallbackUrl()") {
		t.Errorf("callback action's perform does not send z.generateCallbackUrl(): %s", perform)
	}
	if _, ok := op["performResume"].(map[string]any)["source"]; !ok {
		t.Errorf("callback action has no performResume")
	}
}

func TestZapierHookTriggerSubscribesUnsubscribesAndLists(t *testing.T) {
	op := zapierApp(t)["triggers"].(map[string]any)["job_finished"].(map[string]any)["operation"].(map[string]any)
	for _, k := range []string{"perform", "performSubscribe", "performUnsubscribe", "performList"} {
		if op[k] == nil {
			t.Errorf("hook trigger lacks %s", k)
		}
	}
	if op["type"] != "hook" {
		t.Errorf("hook trigger has type %v", op["type"])
	}
}

package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/catalog"
)

func zapierAppJSON(t *testing.T) map[string]any {
	t.Helper()
	for _, f := range Platform(render(t), "zapier") {
		if f.Name == "imgflow-zapier-app.json" {
			var app map[string]any
			if err := json.Unmarshal(f.Data, &app); err != nil {
				t.Fatal(err)
			}
			return app
		}
	}
	t.Fatal("zapier renders no imgflow-zapier-app.json")
	return nil
}

// No offline Zapier validator notices a missing sample, but Zapier refuses
// to publish an operation without one.
func TestEveryZapierOperationHasASampleWithAnID(t *testing.T) {
	app := zapierAppJSON(t)
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
			primary := 0
			for _, f := range op["outputFields"].([]any) {
				of := f.(map[string]any)
				if of["primary"] == true {
					primary++
					if _, ok := sample[of["key"].(string)]; !ok {
						t.Errorf("%s.%s: sample lacks its primary key %v", group, key, of["key"])
					}
				}
				if of["label"] == "" || of["label"] == nil {
					t.Errorf("%s.%s output %v has no label", group, key, of["key"])
				}
			}
			if group == "triggers" && primary == 0 {
				t.Errorf("trigger %s has no primary output (id) to dedupe on", key)
			}
		}
	}
	if want := len(catalog.Default().Operations()); n != want {
		t.Errorf("zapier app has %d operations, want the catalog's %d", n, want)
	}
}

func TestZapierCallbackActionResumesFromTheCallback(t *testing.T) {
	op := zapierAppJSON(t)["creates"].(map[string]any)["compress_image_callback"].(map[string]any)["operation"].(map[string]any)
	perform, _ := op["perform"].(map[string]any)["source"].(string)
	if !strings.Contains(perform, "z.generateCallbackUrl()") {
		t.Errorf("callback action's perform does not send z.generateCallbackUrl(): %s", perform)
	}
	if _, ok := op["performResume"].(map[string]any)["source"]; !ok {
		t.Errorf("callback action has no performResume")
	}
}

func TestZapierHookTriggerSubscribesUnsubscribesAndLists(t *testing.T) {
	op := zapierAppJSON(t)["triggers"].(map[string]any)["job_finished"].(map[string]any)["operation"].(map[string]any)
	for _, k := range []string{"perform", "performSubscribe", "performUnsubscribe", "performList"} {
		if op[k] == nil {
			t.Errorf("hook trigger lacks %s", k)
		}
	}
	if op["type"] != "hook" {
		t.Errorf("hook trigger has type %v", op["type"])
	}
}

// mustJS is a value as index.js writes it.
func mustJS(v any) string {
	var b bytes.Buffer
	if err := writeJS(&b, v, ""); err != nil {
		panic(err)
	}
	return b.String()
}

// The CLI project is the JSON app plus the file output: every operation
// whose jobs carry a compressed file gets it, through functions that only
// index.js defines; the JSON app stays loadable without them.
func TestZapierCLIAppAddsTheFileOutputToJobOperations(t *testing.T) {
	c := catalog.Default()
	cli, err := zapierApp(c, PlaceholderURL, true)
	if err != nil {
		t.Fatal(err)
	}
	if cli["hydrators"] != jsRaw("hydrators") {
		t.Errorf("CLI app's hydrators = %v, want the module's hydrators", cli["hydrators"])
	}
	for _, op := range c.Operations() {
		group := "creates"
		if op.Kind == catalog.KindPollingTrigger || op.Kind == catalog.KindHookTrigger {
			group = "triggers"
		}
		operation := cli[group].(obj)[op.Key].(obj)["operation"].(obj)
		src := mustJS(operation)
		hasFile := strings.Contains(mustJS(operation["outputFields"]), `"key": "file"`)
		if (op.File != nil) != hasFile || (op.File != nil) != strings.Contains(src, "withFile(z, ") {
			t.Errorf("%s: file output %v and withFile in its functions, want both %v", op.Key, hasFile, op.File != nil)
		}
		if strings.Contains(src, "{{bundle.") && strings.Contains(src, "z.request(request)") {
			t.Errorf("%s: a function's request uses {{curlies}}, which z.request refuses since v17", op.Key)
		}
	}
	app := zapierAppJSON(t)
	if _, ok := app["hydrators"]; ok || strings.Contains(fmt.Sprint(app), "withFile") {
		t.Errorf("the JSON app references CLI-only functions")
	}
}

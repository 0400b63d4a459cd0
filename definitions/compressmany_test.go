package definitions

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/catalog"
)

// fileJSON decodes the rendered file at path (platform/name).
func fileJSON(t *testing.T, files []File, path string) any {
	t.Helper()
	for _, f := range files {
		if f.Path() == path {
			var v any
			if err := json.Unmarshal(f.Data, &v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return v
		}
	}
	t.Fatalf("no file %s rendered", path)
	return nil
}

func find(list []any, key, value string) map[string]any {
	for _, v := range list {
		if m, ok := v.(map[string]any); ok && m[key] == value {
			return m
		}
	}
	return nil
}

// names lists the value of key in every element of list.
func names(list []any, key string) []string {
	var out []string
	for _, v := range list {
		out = append(out, v.(map[string]any)[key].(string))
	}
	return out
}

// Every list input of the catalog (Compress Many's items) reaches each
// platform as that platform's list, with every record field under the
// name the API reads, and its list output as a list of records.
func TestListFieldsRenderAsEachPlatformsList(t *testing.T) {
	files := render(t)
	op := catalog.Default().Operation("compress_many")
	if op == nil {
		t.Fatal("no compress_many in the catalog")
	}
	list := op.Inputs[0]
	var want []string
	for _, f := range list.Fields {
		want = append(want, f.Key)
	}
	same := func(where string, got []string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: record fields %v, want %v", where, got, want)
		}
	}

	t.Run("make", func(t *testing.T) {
		params := fileJSON(t, files, "make/module-compressMany.mappable-params.iml.json").([]any)
		items := find(params, "name", list.Key)
		if items == nil || items["type"] != "array" || items["required"] != true {
			t.Fatalf("items parameter = %v; want a required array", items)
		}
		same("make items spec", names(items["spec"].([]any), "name"))
		comm := fileJSON(t, files, "make/module-compressMany.communication.iml.json").(map[string]any)
		if comm["url"] != op.Path || comm["body"].(map[string]any)[list.Key] != "{{parameters.items}}" || comm["qs"].(map[string]any)["include"] != "jobs" {
			t.Errorf("communication = %v; want POST %s with the array as items and include=jobs", comm, op.Path)
		}
		iface := fileJSON(t, files, "make/module-compressMany.interface.iml.json").([]any)
		if jobs := find(iface, "name", "jobs"); jobs == nil || jobs["type"] != "array" || find(jobs["spec"].([]any), "name", "result") == nil {
			t.Errorf("interface jobs = %v; want an array of collections with result", jobs)
		}
	})

	t.Run("n8n node", func(t *testing.T) {
		data, err := N8nNodeCatalog()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Operations []struct {
				Key    string `json:"key"`
				Inputs []struct {
					Key, Type string
					Fields    []struct{ Key string } `json:"fields"`
				} `json:"inputs"`
			} `json:"operations"`
		}
		json.Unmarshal(data, &doc)
		for _, o := range doc.Operations {
			if o.Key != op.Key {
				continue
			}
			var got []string
			for _, f := range o.Inputs[0].Fields {
				got = append(got, f.Key)
			}
			if o.Inputs[0].Type != "list" {
				t.Errorf("node catalog items type %q, want list", o.Inputs[0].Type)
			}
			same("n8n node items", got)
			return
		}
		t.Error("compress_many is not in the node catalog")
	})

	t.Run("n8n template", func(t *testing.T) {
		wf := fileJSON(t, files, "n8n/compress-many-wait.json").(map[string]any)
		post := find(wf["nodes"].([]any), "name", op.Label)
		if post == nil || !strings.HasSuffix(post["parameters"].(map[string]any)["url"].(string), withQuery(op.Path, op.Query)) {
			t.Fatalf("template's %s node = %v; want a POST to %s", op.Label, post, withQuery(op.Path, op.Query))
		}
		code := find(wf["nodes"].([]any), "name", "Images to Batch")["parameters"].(map[string]any)["jsCode"].(string)
		if !strings.Contains(code, "{ "+list.Key+": records }") || !strings.Contains(code, "image_base64") || !strings.Contains(code, "image_url") {
			t.Errorf("Images to Batch does not build {%s: records} from binaries and URLs:\n%s", list.Key, code)
		}
	})

	t.Run("power automate", func(t *testing.T) {
		def := fileJSON(t, files, "powerautomate/apiDefinition.swagger.json").(map[string]any)
		post, _ := def["paths"].(map[string]any)[op.Path].(map[string]any)["post"].(map[string]any)
		body := find(post["parameters"].([]any), "in", "body")
		items := body["schema"].(map[string]any)["properties"].(map[string]any)[list.Key].(map[string]any)
		if items["type"] != "array" {
			t.Fatalf("body items = %v; want an array", items)
		}
		var got []string
		for _, f := range list.Fields {
			if _, ok := items["items"].(map[string]any)["properties"].(map[string]any)[f.Key]; ok {
				got = append(got, f.Key)
			}
		}
		same("power automate items", got)
		query := map[string]any{}
		for _, p := range post["parameters"].([]any) {
			if p := p.(map[string]any); p["in"] == "query" {
				query[p["name"].(string)] = p["default"]
			}
		}
		if query["include"] != "jobs" || query["wait"] == nil || post["responses"].(map[string]any)["202"] == nil {
			t.Errorf("CompressMany query %v, responses %v; want include=jobs, wait and the 202 polling answer", query, post["responses"])
		}
		jobs := def["definitions"].(map[string]any)["BatchWithJobs"].(map[string]any)["properties"].(map[string]any)["jobs"].(map[string]any)
		if jobs["type"] != "array" || jobs["items"].(map[string]any)["properties"].(map[string]any)["result"] == nil {
			t.Errorf("BatchWithJobs.jobs = %v; want an array of jobs", jobs)
		}
	})

	t.Run("zapier", func(t *testing.T) {
		create := fileJSON(t, files, "zapier/imgflow-zapier-app.json").(map[string]any)["creates"].(map[string]any)[op.Key].(map[string]any)
		operation := create["operation"].(map[string]any)
		items := find(operation["inputFields"].([]any), "key", list.Key)
		if items == nil || items["children"] == nil {
			t.Fatalf("zapier items = %v; want line items (children)", items)
		}
		var got []string
		for _, k := range names(items["children"].([]any), "key") {
			got = append(got, strings.TrimPrefix(k, list.Key+"_"))
		}
		same("zapier line items", got)
		src := operation["perform"].(map[string]any)["source"].(string)
		if !strings.Contains(src, `child.startsWith("items_")`) || !strings.Contains(src, "include=jobs") {
			t.Errorf("perform does not map the line items back to the API's names:\n%s", src)
		}
		if jobs := find(operation["outputFields"].([]any), "key", "jobs"); jobs == nil || find(jobs["children"].([]any), "key", "result__file_url") == nil {
			t.Errorf("zapier output jobs = %v; want line items with result__file_url", jobs)
		}
	})

	t.Run("openapi", func(t *testing.T) {
		doc := fileJSON(t, files, "openapi/openapi.json").(map[string]any)
		post := doc["paths"].(map[string]any)[op.Path].(map[string]any)["post"].(map[string]any)
		if post["x-imgflow-catalog-key"] != op.Key || find(post["parameters"].([]any), "name", "include") == nil {
			t.Errorf("createBatch = %v; want the catalog key %s and the include parameter", post["x-imgflow-catalog-key"], op.Key)
		}
	})
}

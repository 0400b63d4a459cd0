package catalog

import (
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// Compress Many takes a list of images, each with the fields POST
// /v1/batches reads for an item, and answers every item's job: the list's
// fields are described as fully as any other field, and each list output's
// fields appear in the sample's records.
func TestCompressManyTakesAListOfItemsAndAnswersEveryJob(t *testing.T) {
	op := Default().Operation("compress_many")
	if op == nil || op.Method != "POST" || op.Path != "/v1/batches" || op.Query["wait"] != "25" || op.Query["include"] != connector.IncludeJobs {
		t.Fatalf("compress_many = %+v; want POST /v1/batches?wait=25&include=jobs", op)
	}
	items := op.Inputs[0]
	if items.Key != "items" || items.Type != FieldList || !items.Required {
		t.Fatalf("first input = %s (%s, required %v); want the required list items", items.Key, items.Type, items.Required)
	}
	keys := map[string]bool{}
	for _, f := range items.Fields {
		keys[f.Key] = true
		if f.Label == "" || f.Help == "" || f.Type == "" || f.Type == FieldList {
			t.Errorf("items.%s lacks label, help or a type (lists do not nest): %+v", f.Key, f)
		}
	}
	for _, k := range []string{"image_url", "image_base64", "filename", "metadata"} {
		if !keys[k] {
			t.Errorf("items lack %s", k)
		}
	}
	if keys["dedupe"] {
		t.Error("items offer dedupe, which a batch item does not take")
	}
	sample := decode(t, op.Sample)
	for _, o := range op.Outputs {
		if o.Type != FieldList {
			continue
		}
		if len(o.Fields) == 0 {
			t.Errorf("list output %s describes no fields", o.Key)
		}
		list, ok := OutputValue(sample, o.Key)
		records, _ := list.([]any)
		if !ok || len(records) < 2 {
			t.Fatalf("sample's %s = %v; want a realistic list (a completed and a failed job)", o.Key, list)
		}
		for _, f := range o.Fields {
			found := false
			for _, r := range records {
				_, in := OutputValue(r, f.Key)
				found = found || in
			}
			if !found {
				t.Errorf("%s[].%s is in no record of the sample", o.Key, f.Key)
			}
		}
	}
}

// Only list fields carry Fields: a renderer may trust that a field with
// Fields is a list and one without is not.
func TestOnlyListFieldsHaveFields(t *testing.T) {
	c := Default()
	for _, op := range append(c.Operations(), c.Manage...) {
		for _, f := range op.Inputs {
			if (f.Type == FieldList) != (len(f.Fields) > 0) {
				t.Errorf("%s.%s: type %s with %d fields", op.Key, f.Key, f.Type, len(f.Fields))
			}
		}
		for _, o := range op.Outputs {
			if (o.Type == FieldList) != (len(o.Fields) > 0) {
				t.Errorf("%s output %s: type %s with %d fields", op.Key, o.Key, o.Type, len(o.Fields))
			}
		}
	}
}

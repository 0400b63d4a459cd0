package connector

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for text, want := range map[string]int64{
		"100000": 100000, "100KB": 100000, "60KB": 60000, "60kb": 60000, "1.5MB": 1500000,
		"1.5 MB": 1500000, "200KiB": 204800, "2MiB": 2097152, "100k": 100000, "500": 500, "500B": 500,
		"0.5KiB": 512,
	} {
		got, err := ParseByteSize(text)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"", "KB", "ten KB", "100 GB", "100KBs", "1e3", "-5KB"} {
		if got, err := ParseByteSize(text); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", text, got)
		}
	}
}

func TestTargetJSON(t *testing.T) {
	var tr Transform
	body := `{"target": {"max_bytes": "100KB", "allow_resize": false, "min_score": 70}}`
	if err := json.Unmarshal([]byte(body), &tr); err != nil {
		t.Fatal(err)
	}
	if err := tr.Normalize(""); err != nil {
		t.Fatal(err)
	}
	if tr.Target.MaxBytes != 100000 || tr.Target.Resizes() || *tr.Target.MinScore != 70 {
		t.Fatalf("target = %+v", tr.Target)
	}
	short, long := Transform{}, Transform{}
	if err := json.Unmarshal([]byte(`{"target": "1KB"}`), &short); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"target": {"max_bytes": 1000, "allow_resize": true}}`), &long); err != nil {
		t.Fatal(err)
	}
	if short.Canonical() != long.Canonical() || !strings.Contains(short.Canonical(), "target=1000,true") {
		t.Fatalf("canonical %q vs %q", short.Canonical(), long.Canonical())
	}
	for body, field := range map[string]string{
		`{"target": {"max_byte": 10}}`:                    "target.max_byte",
		`{"target": {"allow_resize": true}}`:              "target.max_bytes",
		`{"target": "ten"}`:                               "target",
		`{"target": {"max_bytes": 0}}`:                    "target.max_bytes",
		`{"target": {"max_bytes": 10, "min_score": 101}}`: "target.min_score",
	} {
		var tr Transform
		err := json.Unmarshal([]byte(body), &tr)
		if err == nil {
			err = tr.Normalize("")
		}
		e, ok := err.(*Error)
		if !ok || e.Details[0].Field != field {
			t.Errorf("%s: err %v, want one naming %s", body, err, field)
		}
	}
}

func TestTargetText(t *testing.T) {
	var tr Transform
	if err := tr.ApplyText(map[string]string{"target_max_bytes": "70KB", "target_allow_resize": "false"}); err != nil {
		t.Fatal(err)
	}
	if tr.Target.MaxBytes != 70000 || tr.Target.Resizes() {
		t.Fatalf("target = %+v", tr.Target)
	}
	if err := (&Transform{}).ApplyText(map[string]string{"target_min_score": "80"}); err == nil {
		t.Fatal("target_min_score without a size: want an error")
	}
}

func TestNormalizeVariants(t *testing.T) {
	var vs []Variant
	body := `[{"id": "sm", "resize": "320x", "convert": "webp"}, {"id": "lg", "resize": "1600x", "target": "200KB"}]`
	if err := json.Unmarshal([]byte(body), &vs); err != nil {
		t.Fatal(err)
	}
	if err := NormalizeVariants(vs); err != nil {
		t.Fatal(err)
	}
	if vs[0].Resize.Width != 320 || vs[0].Convert.Type != "image/webp" || vs[1].Target.MaxBytes != 200000 {
		t.Fatalf("variants = %+v", vs)
	}
	if err := NormalizeVariants([]Variant{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Fatal("two variants named a: want an error")
	}
	if err := NormalizeVariants([]Variant{{ID: "Big One"}}); err == nil {
		t.Fatal("id with a space: want an error")
	}
}

func TestMinScoreIsPartOfTheDedupeKey(t *testing.T) {
	key := func(body string) string {
		var tr Transform
		if err := json.Unmarshal([]byte(body), &tr); err != nil {
			t.Fatal(err)
		}
		return tr.Canonical()
	}
	none := key(`{"target": {"max_bytes": 1000}}`)
	seventy := key(`{"target": {"max_bytes": 1000, "min_score": 70}}`)
	eighty := key(`{"target": {"max_bytes": 1000, "min_score": 80}}`)
	if none == seventy || seventy == eighty || seventy != key(`{"target": {"max_bytes": "1KB", "min_score": 70.0}}`) {
		t.Fatalf("keys: none %q, 70 %q, 80 %q; want min_score to tell them apart, and only it", none, seventy, eighty)
	}
}

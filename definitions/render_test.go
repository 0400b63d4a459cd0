package definitions

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// PlaceholderURL is the public URL the committed files are rendered for.
const PlaceholderURL = "https://imgflow.example.com"

var update = flag.Bool("update", false, "rewrite the committed files from Render (same as: go run . definitions --out definitions --base-url "+PlaceholderURL+")")

func render(t *testing.T) []File {
	t.Helper()
	files, err := Render(PlaceholderURL)
	if err != nil {
		t.Fatalf("Render(%q): %v", PlaceholderURL, err)
	}
	return files
}

func TestCommittedFilesEqualAFreshRender(t *testing.T) {
	files := render(t)
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path()] = true
		if *update {
			if err := os.MkdirAll(f.Platform, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.Path(), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(f.Path())
		if err != nil {
			t.Errorf("%s is not committed (%v); regenerate with: go run . definitions --out definitions --base-url %s", f.Path(), err, PlaceholderURL)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s differs from a fresh render; regenerate with: go run . definitions --out definitions --base-url %s", f.Path(), PlaceholderURL)
		}
	}
	for _, p := range Platforms {
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if path := p + "/" + e.Name(); !want[path] {
				t.Errorf("%s is committed but no longer rendered: delete it", path)
			}
		}
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	a, b := render(t), render(t)
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("%s renders differently twice in a row", a[i].Path())
		}
	}
}

// Every file is JSON but the Zapier CLI app's index.js (checked by
// node in checks/zapier.js).
func TestEveryFileIsIndentedJSONWithTrailingNewline(t *testing.T) {
	for _, f := range render(t) {
		if strings.HasSuffix(f.Name, ".json") != json.Valid(f.Data) {
			t.Errorf("%s is not valid JSON", f.Path())
		}
		if !bytes.HasSuffix(f.Data, []byte("\n")) {
			t.Errorf("%s lacks a trailing newline", f.Path())
		}
	}
}

func TestRenderUsesTheGivenBaseURL(t *testing.T) {
	files, err := Render("https://flows.acme.test/imgflow/")
	if err != nil {
		t.Fatal(err)
	}
	sampleBatch := "/v1/batches/" + catalog.Default().Operation("compress_many").Sample.(*connector.BatchAnswer).ID
	for _, f := range files {
		for _, line := range strings.Split(string(f.Data), "\n") {
			// Sample file URLs and the sample batch's links are
			// illustrations; every other URL must be the base.
			if strings.Contains(line, "imgflow.example.com/v1") && !strings.Contains(line, "?token=") && !strings.Contains(line, sampleBatch) {
				t.Errorf("%s still calls the placeholder URL: %s", f.Path(), strings.TrimSpace(line))
			}
		}
	}
	zap := string(Platform(files, "zapier")[0].Data)
	if !strings.Contains(zap, "https://flows.acme.test/imgflow/v1/account") {
		t.Errorf("zapier auth test does not call the given base URL (trailing slash trimmed)")
	}
}

func TestRenderRejectsARelativeBaseURL(t *testing.T) {
	for _, bad := range []string{"", "imgflow.example.com", "ftp://x", "https://x/?q=1"} {
		if _, err := Render(bad); err == nil {
			t.Errorf("Render(%q) succeeded, want an error", bad)
		}
	}
}

func TestOpenAPIIsTheServedOpenAPIFile(t *testing.T) {
	doc, err := OpenAPI(PlaceholderURL)
	if err != nil {
		t.Fatal(err)
	}
	if f := Platform(render(t), "openapi"); len(f) != 1 || !bytes.Equal(f[0].Data, doc) {
		t.Errorf("OpenAPI() differs from the openapi platform file")
	}
}

func TestEveryPlatformHasFiles(t *testing.T) {
	files := render(t)
	for _, p := range Platforms {
		if len(Platform(files, p)) == 0 {
			t.Errorf("platform %s renders no files", p)
		}
	}
}

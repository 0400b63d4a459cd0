package definitions

import (
	"encoding/json"
	"testing"
)

// TestOpenAPIListsEveryRouteOfTheDesign keeps the document in step with
// design.md §3.
func TestOpenAPIListsEveryRouteOfTheDesign(t *testing.T) {
	routes := []struct{ method, path string }{
		{"post", "/v1/jobs"}, {"get", "/v1/jobs"}, {"get", "/v1/jobs/{id}"}, {"get", "/v1/jobs/{id}/file"},
		{"get", "/v1/account"}, {"post", "/v1/hooks"}, {"get", "/v1/hooks"}, {"get", "/v1/hooks/{id}"}, {"delete", "/v1/hooks/{id}"},
		{"get", "/v1/definitions"}, {"get", "/v1/definitions/{platform}"}, {"get", "/v1/definitions/{platform}/{file}"},
		{"get", "/health"}, {"get", "/openapi.json"},
	}
	b, err := OpenAPI(PlaceholderURL)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if doc.Paths[r.path][r.method] == nil {
			t.Errorf("OpenAPI lacks %s %s", r.method, r.path)
		}
	}
	// Readiness, metrics and the queue dashboard are on the ops listener,
	// not on the API this document describes.
	for _, path := range []string{"/ready", "/metrics", "/admin/queues"} {
		if doc.Paths[path] != nil {
			t.Errorf("OpenAPI lists %s, which the public API does not serve", path)
		}
	}
}

func TestOpenAPIJobSchemaDescribesEveryCatalogOutput(t *testing.T) {
	b, _ := OpenAPI(PlaceholderURL)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	job := doc["components"].(map[string]any)["schemas"].(map[string]any)["Job"].(map[string]any)
	for _, key := range []string{"id", "status", "result", "error", "callback", "metadata"} {
		if job["properties"].(map[string]any)[key] == nil {
			t.Errorf("Job schema lacks %s", key)
		}
	}
}

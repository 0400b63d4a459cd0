package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// ?include=data streams the answer instead of building it with c.JSON: it
// must be the very JSON c.JSON wrote, compressed_data added, whatever the
// caller's metadata holds, and its Content-Length must be right.
func TestJobWithDataIsTheJobPlusItsBytesAsBase64(t *testing.T) {
	h := newHarness(t)
	metadata := map[string]any{"note": `<b>"imgflow-data-"</b> & co`, "n": 1}
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png", "metadata": metadata}, nil)
	id := r.str("id")
	data := bytes.Repeat([]byte("\x89PNG compressed "), 5000) // several base64 encoder blocks
	h.finish(id, data)
	key := map[string]string{"X-API-Key": h.key}
	for _, query := range []string{"", "&pretty"} {
		plain := h.do(http.MethodGet, "/v1/jobs/"+id+"?x"+query, nil, key)
		withData := h.do(http.MethodGet, "/v1/jobs/"+id+"?include=data"+query, nil, key)
		expectStatus(t, withData, http.StatusOK)
		if got := withData.header.Get("Content-Length"); got != strconv.Itoa(len(withData.body)) {
			t.Errorf("%q: Content-Length %s, body %d bytes", query, got, len(withData.body))
		}
		if got := withData.header.Get("Content-Type"); got != plain.header.Get("Content-Type") {
			t.Errorf("%q: Content-Type %q, the plain answer's is %q", query, got, plain.header.Get("Content-Type"))
		}
		if got := withData.str("result.compressed_data"); got != base64.StdEncoding.EncodeToString(data) {
			t.Fatalf("%q: compressed_data is not the stored bytes in base64 (%d characters)", query, len(got))
		}
		// The same document once compressed_data is taken out again.
		var doc map[string]any
		if err := json.Unmarshal(withData.body, &doc); err != nil {
			t.Fatalf("%q: not JSON: %v", query, err)
		}
		delete(doc["result"].(map[string]any), "compressed_data")
		again, _ := json.Marshal(doc)
		var want map[string]any
		json.Unmarshal(plain.body, &want)
		wantJSON, _ := json.Marshal(want)
		if !bytes.Equal(again, wantJSON) {
			t.Errorf("%q: the answer with data differs from the job's JSON:\n%s\n%s", query, again, wantJSON)
		}
		if query != "" && !bytes.Contains(withData.body, []byte("\n  \"id\"")) {
			t.Errorf("?pretty: expected the indented JSON c.JSON writes, got %.80s", withData.body)
		}
	}
}

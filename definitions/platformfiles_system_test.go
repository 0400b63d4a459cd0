package definitions_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// definitionFile is one generated file of a platform, rendered for the
// system under test, decoded.
func definitionFile(t *testing.T, s *systemtest.System, platform, name string) any {
	t.Helper()
	files, err := definitions.Render(s.API)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range definitions.Platform(files, platform) {
		if f.Name == name {
			var v any
			if err := json.Unmarshal(f.Data, &v); err != nil {
				t.Fatalf("%s/%s: %v", platform, name, err)
			}
			return v
		}
	}
	t.Fatalf("no %s/%s rendered", platform, name)
	return nil
}

// makeModuleRun sends what Make sends for a module (its base and
// communication, with these parameters, the key as the connection's and,
// for an instant trigger, the webhook's delivery as body) and returns the
// module's output as Make would compute it.
func makeModuleRun(t *testing.T, s *systemtest.System, module string, parameters map[string]any, delivery ...any) map[string]any {
	t.Helper()
	base := definitionFile(t, s, "make", "base.iml.json").(map[string]any)
	comm := definitionFile(t, s, "make", module+".communication.iml.json")
	requests, ok := comm.([]any)
	if !ok {
		requests = []any{comm}
	}
	ctx := map[string]any{"parameters": parameters, "connection": map[string]any{"apiKey": s.Key}}
	if len(delivery) > 0 {
		ctx["body"] = delivery[0]
	}
	var sent map[string]any
	for _, r := range requests {
		req := r.(map[string]any)
		cond, has := req["condition"].(string)
		if !has || evalIML(t, cond, ctx) == true {
			if sent != nil {
				t.Fatalf("%s: two requests' conditions hold for %v", module, parameters)
			}
			sent = req
		}
	}
	if sent == nil {
		t.Fatalf("%s: no request's condition holds for %v", module, parameters)
	}

	u, _ := url.Parse(base["baseUrl"].(string) + evalIML(t, sent["url"].(string), ctx).(string))
	q := u.Query()
	for k, v := range sent["qs"].(map[string]any) {
		if val := evalIML(t, v.(string), ctx); val != (imlUndefined{}) {
			q.Set(k, val.(string))
		}
	}
	u.RawQuery = q.Encode()
	var body io.Reader
	contentType := ""
	if sent["method"] == nil {
		sent["method"] = "GET"
	}
	switch sent["type"] {
	case "multipart/form-data":
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fields := sent["body"].(map[string]any)
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			switch v := fields[name].(type) {
			case map[string]any: // {value, options: {filename}}: a file part
				data := evalIML(t, v["value"].(string), ctx).([]byte)
				filename := evalIML(t, v["options"].(map[string]any)["filename"].(string), ctx).(string)
				w, _ := mw.CreateFormFile(name, filename)
				w.Write(data)
			case string:
				if val := evalIML(t, v, ctx); val != (imlUndefined{}) {
					mw.WriteField(name, val.(string))
				}
			}
		}
		mw.Close()
		body, contentType = &buf, mw.FormDataContentType()
	case "json":
		fields := map[string]any{}
		for k, v := range sent["body"].(map[string]any) {
			if val := evalIML(t, v.(string), ctx); val != (imlUndefined{}) {
				fields[k] = val
			}
		}
		b, _ := json.Marshal(fields)
		body, contentType = bytes.NewReader(b), "application/json"
	}
	req, _ := http.NewRequest(sent["method"].(string), u.String(), body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range base["headers"].(map[string]any) {
		req.Header.Set(k, evalIML(t, v.(string), ctx).(string))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s answered %d: %s", module, req.Method, u.Path, res.StatusCode, raw)
	}
	var answer any
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	respCtx := map[string]any{"body": answer, "parameters": parameters}
	if whole, ok := sent["response"].(map[string]any)["output"].(string); ok { // "{{body}}"
		out, _ = evalIML(t, whole, respCtx).(map[string]any)
		return out
	}
	for k, v := range sent["response"].(map[string]any)["output"].(map[string]any) {
		out[k] = evalIML(t, v.(string), respCtx)
	}
	return out
}

// The Make compress module takes Make's file pair (sent as multipart) or a
// URL (sent as JSON), and outputs the compressed image as Make's own file
// pair: fileName, and data that decodes to the very bytes the API stores.
func TestMakeCompressModuleTakesAndGivesMakesFilePair(t *testing.T) {
	s := systemtest.Start(t)
	png := images.Read(t, "photo.png")
	for name, params := range map[string]map[string]any{
		"file pair": {"fileName": "from-drive.png", "data": png},
		"URL":       {"image_url": s.Samples + "/photo.png", "filename": "from-drive.png"},
	} {
		t.Run(name, func(t *testing.T) {
			out := makeModuleRun(t, s, "module-compressImage", params)
			if out["status"] != "completed" || out["fileName"] != "from-drive.png" {
				t.Fatalf("output status %v, fileName %v; want completed from-drive.png", out["status"], out["fileName"])
			}
			data, ok := out["data"].([]byte)
			if !ok || len(data) == 0 || len(data) >= len(png) || !bytes.HasPrefix(data, png[:8]) {
				t.Fatalf("data is %T of %d bytes; want a PNG smaller than %d bytes", out["data"], len(data), len(png))
			}
			result := out["result"].(map[string]any)
			if _, leaked := result["compressed_data"]; leaked {
				t.Error("output result still carries compressed_data beside data")
			}
			st, _, stored := s.Request("GET", "/v1/jobs/"+out["id"].(string)+"/file", "", nil, map[string]string{"X-API-Key": s.Key})
			if st != http.StatusOK || !bytes.Equal(stored, data) {
				t.Errorf("data differs from GET /v1/jobs/{id}/file (%d, %d bytes)", st, len(stored))
			}
			if name == "file pair" && !strings.Contains(s.Logs.String(), `"input":"upload"`) {
				t.Error("the file pair did not arrive as an upload")
			}
		})
	}
}

// The Watch Jobs Finished trigger turns a delivery into the job with its
// compressed file as Make's pair.
func TestMakeWatchTriggerOutputsTheFinishedJobsFile(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	st, _, raw := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg","filename":"watched.jpg"}`), auth)
	job := systemtest.DecodeJob(t, st, raw)
	var asDelivered any
	json.Unmarshal(raw, &asDelivered)
	out := makeModuleRun(t, s, "module-watchJobFinished", map[string]any{},
		map[string]any{"type": "job.completed", "timestamp": "2026-11-25T01:00:00Z", "data": asDelivered})
	data, _ := out["data"].([]byte)
	if out["id"] != job.ID || out["fileName"] != "watched.jpg" || int64(len(data)) != job.Result.CompressedSize ||
		!bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}) {
		t.Errorf("output id %v, fileName %v, data %d bytes; want job %s, watched.jpg, a %d-byte JPEG",
			out["id"], out["fileName"], len(data), job.ID, job.Result.CompressedSize)
	}
}

// paRequest sends what Power Automate sends for an operation of the
// connector: basePath + path, the internal parameters' defaults in the
// query (unless overridden), the key as the security definition's header.
func paRequest(t *testing.T, s *systemtest.System, method, path string, override map[string]string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	def := definitionFile(t, s, "powerautomate", "apiDefinition.swagger.json").(map[string]any)
	op := def["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	q := url.Values{}
	for _, p := range op["parameters"].([]any) {
		p := p.(map[string]any)
		if p["in"] == "query" && p["x-ms-visibility"] == "internal" && p["default"] != nil {
			q.Set(p["name"].(string), jsonText(p["default"]))
		}
	}
	for k, v := range override {
		q.Set(k, v)
	}
	header := def["securityDefinitions"].(map[string]any)["api_key"].(map[string]any)["name"].(string)
	b, _ := json.Marshal(body)
	target := "http://" + def["host"].(string) + strings.TrimSuffix(def["basePath"].(string), "/") + path + "?" + q.Encode()
	st, h, raw := s.Request(method, strings.TrimPrefix(target, s.API), "application/json", bytes.NewReader(b), map[string]string{header: s.Key})
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s answered %d, not JSON: %.200s", method, path, st, raw)
	}
	return st, h, out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// paFile reads the compressed file an answer carries as file content,
// where the swagger says it is.
func paFile(t *testing.T, job map[string]any) []byte {
	t.Helper()
	result, _ := job["result"].(map[string]any)
	text, _ := result["compressed_data"].(string)
	data, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(data) == 0 {
		t.Fatalf("no file content in the answer (%d characters, %v)", len(text), err)
	}
	return data
}

// The Power Automate connector's Compress Image takes the image as file
// content (base64, as Power Automate sends a format byte field, or the
// {"$content-type","$content"} object an expression passes on) and answers
// with the compressed file as file content; a job that is not done in time
// answers 202 + Location + Retry-After, and polling Location ends in 200
// with the file.
func TestPowerAutomateCompressTakesAndGivesFileContent(t *testing.T) {
	s := systemtest.Start(t)
	png := images.Read(t, "photo.png")
	b64 := base64.StdEncoding.EncodeToString(png)
	for name, image := range map[string]any{
		"format byte":  b64,
		"file content": map[string]any{"$content-type": "image/png", "$content": b64},
	} {
		t.Run(name, func(t *testing.T) {
			st, _, job := paRequest(t, s, "POST", "/v1/jobs", nil, map[string]any{"image_base64": image, "filename": "pa.png"})
			if st != http.StatusOK || job["status"] != "completed" {
				t.Fatalf("answered %d, status %v; want 200 completed", st, job["status"])
			}
			data := paFile(t, job)
			result := job["result"].(map[string]any)
			if len(data) >= len(png) || !bytes.HasPrefix(data, png[:8]) || result["filename"] != "pa.png" || result["mime_type"] != "image/png" {
				t.Errorf("file content: %d bytes named %v of %v; want a PNG smaller than %d bytes named pa.png",
					len(data), result["filename"], result["mime_type"], len(png))
			}
		})
	}

	t.Run("async pattern", func(t *testing.T) {
		st, h, job := paRequest(t, s, "POST", "/v1/jobs", map[string]string{"wait": "0"}, map[string]any{"image_base64": b64})
		loc := h.Get("Location")
		if st != http.StatusAccepted || loc == "" || h.Get("Retry-After") == "" {
			t.Fatalf("answered %d, Location %q, Retry-After %q; want 202 with both", st, loc, h.Get("Retry-After"))
		}
		for i := 0; st == http.StatusAccepted && i < 200; i++ {
			var raw []byte
			st, _, raw = s.Request("GET", strings.TrimPrefix(loc, s.API), "", nil, map[string]string{"X-API-Key": s.Key})
			job = map[string]any{}
			json.Unmarshal(raw, &job)
			if st == http.StatusAccepted {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if st != http.StatusOK || job["status"] != "completed" {
			t.Fatalf("polling Location ended with %d, status %v; want 200 completed", st, job["status"])
		}
		if data := paFile(t, job); len(data) >= len(png) {
			t.Errorf("the polled answer's file is %d bytes, not smaller than %d", len(data), len(png))
		}
	})
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/server"
)

// contract validates requests and answers against the committed
// definitions/openapi/openapi.json with kin-openapi, and remembers which
// documented operations were driven.
type contract struct {
	t   *testing.T
	doc *openapi3.T
	// open is the document as published (objects open to additions):
	// every answer must match it too, with exactly one branch of each
	// oneOf, as a strict validator checks.
	open   *openapi3.T
	mu     sync.Mutex
	driven map[string]bool // "GET /v1/jobs/{id}"
}

func loadContract(t *testing.T) *contract {
	t.Helper()
	// Pages and scripts are text the document describes as strings.
	for _, ct := range []string{"text/html", "text/css", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
	doc, err := openapi3.NewLoader().LoadFromFile("../definitions/openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	open, err := openapi3.NewLoader().LoadFromFile("../definitions/openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	closeObjects(doc)
	return &contract{t: t, doc: doc, open: open, driven: map[string]bool{}}
}

// closeObjects makes every documented object refuse properties it does not
// list, for this test only: a field the server sends (or a request sends)
// that the document does not describe then fails validation, while the
// published document stays open to additions as clients expect. Objects
// that list no properties (metadata) stay free-form.
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			closed := false
			s.AdditionalProperties.Has = &closed
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
	}
	for _, ref := range doc.Components.Schemas {
		walk(ref)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, media := range op.RequestBody.Value.Content {
					walk(media.Schema)
				}
			}
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil {
					continue
				}
				for _, media := range resp.Value.Content {
					walk(media.Schema)
				}
			}
		}
	}
}

// documentedHeaders are answer headers the document must name when sent.
var documentedHeaders = []string{"Location", "Retry-After", "Content-Disposition"}

// do sends a request through h and validates it (unless badRequest: the
// request is wrong on purpose) and its answer (always).
func (c *contract) do(h *harness, method, path string, body []byte, header map[string]string, badRequest bool) *response {
	c.t.Helper()
	c.doc.Servers = openapi3.Servers{{URL: h.url}}
	router, err := gorillamux.NewRouter(c.doc)
	if err != nil {
		c.t.Fatal(err)
	}
	req, _ := http.NewRequest(method, h.url+path, bytes.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		c.t.Errorf("%s %s is not in the OpenAPI document: %v", method, path, err)
		return h.do(method, path, bytes.NewReader(body), header)
	}
	c.mu.Lock()
	c.driven[method+" "+route.Path] = true
	c.mu.Unlock()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if !badRequest {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("%s %s: the request does not match the document: %v", method, path, err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r := h.do(method, path, bytes.NewReader(body), header)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header,
		Body: io.NopCloser(bytes.NewReader(r.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("%s %s answered %d, which the document does not describe: %v\nbody: %s", method, path, r.status, err, truncate(r.body))
	}
	c.open.Servers = c.doc.Servers
	if openRouter, err := gorillamux.NewRouter(c.open); err != nil {
		c.t.Fatal(err)
	} else if openRoute, openParams, err := openRouter.FindRoute(req); err == nil {
		openIn := &openapi3filter.RequestValidationInput{Request: req, PathParams: openParams, Route: openRoute,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: openIn, Status: r.status, Header: r.header,
			Body: io.NopCloser(bytes.NewReader(r.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			c.t.Errorf("%s %s answered %d, which the published document (open objects) does not describe unambiguously: %v\nbody: %s", method, path, r.status, err, truncate(r.body))
		}
	}
	if resp := route.Operation.Responses.Status(r.status); resp != nil && resp.Value != nil {
		for _, name := range documentedHeaders {
			if r.header.Get(name) != "" && resp.Value.Headers[name] == nil {
				c.t.Errorf("%s %s: %d carries %s, undocumented", method, path, r.status, name)
			}
		}
	}
	return r
}

var echoParam = regexp.MustCompile(`:([a-z_]+)`)

// TestEveryRouteMatchesTheOpenAPIDocument drives every route the server
// has, on success and error paths, with the upstream and Redis down, and
// validates each request and answer against the committed document: an
// undocumented route, status, header or schema mismatch fails. A route
// added without a documented, driven case here fails too.
func TestEveryRouteMatchesTheOpenAPIDocument(t *testing.T) {
	c := loadContract(t)
	withDefinitions := func(cfg *harnessConfig) {
		cfg.Definitions = func(base string) ([]server.DefinitionFile, []byte, error) {
			files, err := definitions.Render(base)
			if err != nil {
				return nil, nil, err
			}
			doc, err := definitions.OpenAPI(base)
			out := make([]server.DefinitionFile, len(files))
			for i, f := range files {
				out[i] = server.DefinitionFile{Platform: f.Platform, Name: f.Name, Data: f.Data}
			}
			return out, doc, err
		}
	}
	h := newHarness(t, withDefinitions)
	key := map[string]string{"X-API-Key": h.key}
	jsonKey := map[string]string{"X-API-Key": h.key, "Content-Type": "application/json"}
	bad := map[string]string{"X-API-Key": "sk_unknown_key_0000"}
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))

	created := c.do(h, "POST", "/v1/jobs", []byte(`{"image_base64":"`+png+`","metadata":{"row":1}}`), jsonKey, false)
	expectStatus(t, created, http.StatusAccepted)
	id := created.str("id")
	c.do(h, "GET", "/v1/jobs/"+id+"?poll=1", nil, key, false)
	h.finish(id, []byte("\x89PNG compressed"))
	c.do(h, "POST", "/v1/jobs?wait=1", []byte(`{"image_url":"https://images.example.com/a.png"}`), jsonKey, false)
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"} x`), jsonKey, true)
	c.do(h, "POST", "/v1/jobs?wait=NaN", []byte(`{"image_url":"https://images.example.com/a.png"}`), jsonKey, true)
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), map[string]string{"X-API-Key": h.key, "Content-Type": "text/plain"}, true)
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), map[string]string{"X-API-Key": "sk_unknown_key_0000", "Content-Type": "application/json"}, false)
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_base64":"`+base64.StdEncoding.EncodeToString(make([]byte, connector.MaxImageSize+1))+`"}`), jsonKey, true)
	// The dry run, at both of its addresses.
	expectStatus(t, c.do(h, "POST", "/v1/jobs?dry_run=1", []byte(`{"image_base64":"`+png+`"}`), jsonKey, false), http.StatusOK)
	expectStatus(t, c.do(h, "POST", "/v1/jobs/dry-run", []byte(`{"image_base64":"`+png+`","dedupe":false}`), jsonKey, false), http.StatusOK)
	truncated := base64.StdEncoding.EncodeToString(images.Read(t, "truncated.png"))
	expectStatus(t, c.do(h, "POST", "/v1/jobs/dry-run", []byte(`{"image_base64":"`+truncated+`"}`), jsonKey, false), http.StatusBadRequest)
	expectStatus(t, c.do(h, "POST", "/v1/jobs/dry-run", []byte(`{"image_base64":"`+png+`"}`), map[string]string{"X-API-Key": "sk_unknown_key_0000", "Content-Type": "application/json"}, false), http.StatusUnauthorized)
	expectStatus(t, c.do(h, "POST", "/v1/jobs?dry_run=maybe", []byte(`{"image_base64":"`+png+`"}`), jsonKey, true), http.StatusBadRequest)
	// A set, at both of its addresses; the image as the body with the short form.
	sizes := `"variants":[{"id":"sm","resize":"32x"},{"id":"md","resize":"64x","convert":"webp"}]`
	expectStatus(t, c.do(h, "POST", "/v1/jobs/variants?include=jobs", []byte(`{"image_base64":"`+png+`",`+sizes+`}`), jsonKey, false), http.StatusAccepted)
	expectStatus(t, c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/s.png",`+sizes+`}`), jsonKey, false), http.StatusAccepted)
	expectStatus(t, c.do(h, "POST", "/v1/jobs/variants", []byte(`{"image_base64":"`+png+`"}`), jsonKey, true), http.StatusBadRequest)
	rawPNG, _ := base64.StdEncoding.DecodeString(png)
	expectStatus(t, c.do(h, "POST", "/v1/jobs/variants?variants=sm=32w,md=64w:webp", rawPNG, map[string]string{"X-API-Key": h.key, "Content-Type": "image/png"}, false), http.StatusAccepted)
	expectStatus(t, c.do(h, "POST", "/v1/jobs/variants?variants=sm=wide", rawPNG, map[string]string{"X-API-Key": h.key, "Content-Type": "image/png"}, false), http.StatusBadRequest)
	idem := map[string]string{"X-API-Key": h.key, "Content-Type": "application/json", "Idempotency-Key": "contract-1"}
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/b.png"}`), idem, false)
	c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/c.png"}`), idem, false)

	// The image as file content, and as the body itself; the file inline.
	c.do(h, "POST", "/v1/jobs?include=data", []byte(`{"image_base64":{"$content-type":"image/png","$content":"`+png+`"}}`), jsonKey, false)
	raw, _ := base64.StdEncoding.DecodeString(png)
	c.do(h, "POST", "/v1/jobs?filename=raw.png", raw, map[string]string{"X-API-Key": h.key, "Content-Type": "image/png"}, false)
	c.do(h, "POST", "/v1/jobs", raw, map[string]string{"X-API-Key": h.key, "Content-Type": "application/octet-stream"}, false)
	c.do(h, "POST", "/v1/jobs", raw, map[string]string{"X-API-Key": h.key, "Content-Type": "image/webp"}, false)
	c.do(h, "POST", "/v1/jobs?include=all", []byte(`{"image_url":"https://images.example.com/a.png"}`), jsonKey, true)

	c.do(h, "GET", "/v1/jobs/"+id, nil, key, false)
	c.do(h, "GET", "/v1/jobs/"+id+"?include=data", nil, key, false)
	c.do(h, "GET", "/v1/jobs/"+id, nil, bad, false)
	c.do(h, "GET", "/v1/jobs/0190c0de-0000-7000-8000-000000000000", nil, key, false)
	c.do(h, "GET", "/v1/jobs/"+id+"/file", nil, key, false)
	c.do(h, "GET", "/v1/jobs/"+id+"/file?token=nope", nil, nil, false)
	c.do(h, "GET", "/v1/jobs?limit=1", nil, key, false)
	c.do(h, "GET", "/v1/jobs?limit=100", nil, key, false)
	c.do(h, "GET", "/v1/jobs?limit=0", nil, key, true)
	c.do(h, "GET", "/v1/jobs", nil, nil, false)
	c.do(h, "GET", "/v1/jobs/"+id+"/deliveries", nil, key, false)
	c.do(h, "POST", "/v1/jobs/"+id+"/deliveries/nope/redeliver", nil, key, false)
	c.do(h, "GET", "/v1/account", nil, key, false)
	c.do(h, "GET", "/v1/account", nil, bad, false)

	hook := c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/in","event":"job.completed"}`), jsonKey, false)
	c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/in"}`), map[string]string{"X-API-Key": h.key, "Content-Type": "text/plain"}, true)
	c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/in","pad":"`+strings.Repeat("x", 70<<10)+`"}`), jsonKey, true)
	c.do(h, "GET", "/v1/hooks", nil, key, false)
	c.do(h, "GET", "/v1/hooks?limit=1", nil, key, false)
	c.do(h, "GET", "/v1/hooks?limit=0", nil, key, true)
	c.do(h, "GET", "/v1/hooks?cursor=not-a-cursor", nil, key, false)
	c.do(h, "GET", "/v1/hooks/"+hook.str("id"), nil, key, false)
	hid := hook.str("id")
	c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/low","event":"account.credits_low","threshold":10}`), jsonKey, false)
	c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/low","event":"job.failed","threshold":10}`), jsonKey, false)
	c.do(h, "POST", "/v1/hooks/"+hid+"/enable", nil, key, false)
	c.do(h, "POST", "/v1/hooks/"+hid+"/rotate-secret", nil, key, false)
	c.do(h, "POST", "/v1/hooks/"+hid+"/test", nil, key, false)
	c.do(h, "POST", "/v1/hooks/nope/test", nil, key, false)
	c.do(h, "POST", "/v1/hooks/"+hid+"/recover", []byte(`{"since":"2026-01-01T00:00:00Z"}`), jsonKey, false)
	c.do(h, "POST", "/v1/hooks/"+hid+"/recover", []byte(`{"since":"yesterday"}`), jsonKey, true)
	c.do(h, "POST", "/v1/hooks/"+hid+"/recover", []byte(`{"since":"2026-01-01T00:00:00Z"}`), map[string]string{"X-API-Key": h.key, "Content-Type": "text/plain"}, true)
	c.do(h, "POST", "/v1/account/rotate-secret", nil, key, false)
	c.do(h, "GET", "/v1/deliveries", nil, key, false)
	c.do(h, "GET", "/v1/deliveries?status=failed&limit=5&hook_id="+hid, nil, key, false)
	c.do(h, "GET", "/v1/deliveries?status=nope", nil, key, true)
	c.do(h, "GET", "/v1/deliveries?cursor=%25%25", nil, key, false)
	c.do(h, "DELETE", "/v1/hooks/"+hook.str("id"), nil, key, false)
	c.do(h, "DELETE", "/v1/hooks/"+hook.str("id"), nil, key, false)

	batch := c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"https://images.example.com/a.png","filename":"a.png"},{"image_base64":"`+png+`"}],"metadata":{"run":1}}`), jsonKey, false)
	expectStatus(t, batch, http.StatusAccepted)
	bid := batch.str("id")
	c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"ftp://images.example.com/a.png"}]}`), jsonKey, true)
	c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"https://images.example.com/a.png"}]}`), map[string]string{"X-API-Key": "sk_unknown_key_0000", "Content-Type": "application/json"}, false)
	// Strict input: unknown fields, a batch without a header key,
	// file content in a batch item.
	expectStatus(t, c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png","callbakc_url":"https://hooks.example.com/x"}`), jsonKey, true), http.StatusBadRequest)
	expectStatus(t, c.do(h, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/in","evnet":"job.completed"}`), jsonKey, true), http.StatusBadRequest)
	expectStatus(t, c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"https://images.example.com/a.png"}]}`), map[string]string{"Content-Type": "application/json"}, false), http.StatusUnauthorized)
	expectStatus(t, c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_base64":{"$content-type":"image/png","$content":"`+png+`"},"filename":"pa.png"}],"dedupe":false}`), jsonKey, false), http.StatusAccepted)
	c.do(h, "GET", "/v1/batches", nil, key, false)
	c.do(h, "GET", "/v1/batches/"+bid, nil, key, false)
	c.do(h, "GET", "/v1/batches/"+bid, nil, bad, false)
	c.do(h, "GET", "/v1/batches/"+bid+"?include=jobs&poll=1", nil, key, false)
	c.do(h, "GET", "/v1/batches/"+bid+"?include=nope", nil, key, true)
	c.do(h, "POST", "/v1/batches?include=jobs", []byte(`{"items":[{"image_url":"https://images.example.com/b.png"}]}`), jsonKey, false)
	c.do(h, "GET", "/v1/batches/"+bid+"/jobs?limit=1", nil, key, false)
	c.do(h, "GET", "/v1/batches/"+bid+"/jobs?cursor=x", nil, key, true)
	c.do(h, "GET", "/v1/batches/"+bid+"/archive", nil, key, false)
	c.do(h, "GET", "/v1/batches/"+bid+"/archive?token=nope", nil, nil, false)

	c.do(h, "GET", "/", nil, nil, false)
	c.do(h, "GET", "/health", nil, nil, false)
	c.do(h, "GET", "/openapi.json", nil, nil, false)
	c.do(h, "GET", "/v1/event-types", nil, nil, false)
	c.do(h, "GET", "/v1/definitions", nil, nil, false)
	c.do(h, "GET", "/v1/definitions/zapier", nil, nil, false)
	c.do(h, "GET", "/v1/definitions/nope", nil, nil, true)
	c.do(h, "GET", "/v1/definitions/openapi/openapi.json", nil, nil, false)

	// The compression API down: the key check cannot be made.
	down := newHarness(t, withDefinitions, func(cfg *harnessConfig) { cfg.Compressor = upstream.New("http://127.0.0.1:1/api") })
	c.do(down, "GET", "/v1/account", nil, map[string]string{"X-API-Key": down.key}, false)
	c.do(down, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), map[string]string{"X-API-Key": down.key, "Content-Type": "application/json"}, false)

	// A key at its cap of hooks: 409 too_many_hooks.
	hooksCapped := newHarness(t, withDefinitions, func(cfg *harnessConfig) { cfg.MaxHooksPerKey = 1 })
	hj := map[string]string{"X-API-Key": hooksCapped.key, "Content-Type": "application/json"}
	expectStatus(t, c.do(hooksCapped, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/1"}`), hj, false), http.StatusCreated)
	expectError(t, c.do(hooksCapped, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/2"}`), hj, false),
		http.StatusConflict, connector.ETOOMANYHOOKS, "")

	// A key at its cap of unfinished jobs: 429 too_many_jobs.
	capped := newHarness(t, withDefinitions, func(cfg *harnessConfig) { cfg.MaxJobsPerKey = 1 })
	cj := map[string]string{"X-API-Key": capped.key, "Content-Type": "application/json"}
	expectStatus(t, c.do(capped, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), cj, false), http.StatusAccepted)
	full := c.do(capped, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/b.png"}`), cj, false)
	expectStatus(t, full, http.StatusTooManyRequests)
	if full.str("code") != string(connector.ETOOMANY) || full.header.Get("Retry-After") == "" {
		t.Errorf("over the cap: code %q, Retry-After %q; want too_many_jobs with Retry-After", full.str("code"), full.header.Get("Retry-After"))
	}

	// Redis down: every route that needs storage answers 503.
	dead := redisstore.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), redisstore.Options{})
	gone := newHarness(t, withDefinitions, func(cfg *harnessConfig) {
		cfg.Jobs, cfg.Blobs, cfg.Idempotency, cfg.Accounts, cfg.Hooks, cfg.OpLimiter, cfg.Batches = dead.Jobs, dead.Blobs, dead.Idempotency, dead.Accounts, dead.Hooks, dead.Hooks, dead.Batches
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	})
	gk := map[string]string{"X-API-Key": gone.key}
	gj := map[string]string{"X-API-Key": gone.key, "Content-Type": "application/json"}
	token := h.keys.FileURL("", id, time.Now().Add(time.Hour))
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/" + id}, {"GET", "/v1/jobs/" + id + "/deliveries"},
		{"GET", "/v1/hooks"}, {"GET", "/v1/hooks/" + hook.str("id")}, {"DELETE", "/v1/hooks/" + hook.str("id")},
		{"GET", token}, {"POST", "/v1/jobs/" + id + "/deliveries/nope/redeliver"},
		{"POST", "/v1/hooks/" + hid + "/enable"}, {"POST", "/v1/hooks/" + hid + "/test"}, {"POST", "/v1/hooks/" + hid + "/rotate-secret"},
		{"GET", "/v1/deliveries"}, {"POST", "/v1/account/rotate-secret"},
		{"GET", "/v1/batches"}, {"GET", "/v1/batches/" + id},
	} {
		c.do(gone, r.method, r.path, nil, gk, false)
	}
	c.do(gone, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), gj, false)
	c.do(gone, "POST", "/v1/hooks", []byte(`{"target_url":"https://hooks.example.com/in"}`), gj, false)
	c.do(gone, "POST", "/v1/hooks/"+hid+"/recover", []byte(`{"since":"2026-01-01T00:00:00Z"}`), gj, false)
	c.do(gone, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"https://images.example.com/a.png"}]}`), gj, false)

	// Every route the server really has is documented and was driven.
	var missing []string
	for _, rt := range h.api.Routes() {
		path := echoParam.ReplaceAllString(rt.Path, "{$1}")
		if strings.Contains(path, "*") || rt.Method == "echo_route_any" || rt.Method == http.MethodHead {
			continue // Echo's catch-alls for 404/405; HEAD is GET without the body
		}
		item := c.doc.Paths.Find(path)
		if item == nil || item.GetOperation(rt.Method) == nil {
			missing = append(missing, rt.Method+" "+path+" (undocumented)")
		} else if !c.driven[rt.Method+" "+path] {
			missing = append(missing, rt.Method+" "+path+" (documented, not driven by this test: add its cases)")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("route %s", m)
	}
}

// TestWebhookPayloadsMatchTheOpenAPIDocument: the bodies of deliveries are
// rendered by the one public view (connector.View) the API answers with,
// so a job's webhook payload is its GET answer as of its finish, and
// every payload (job.completed, job.failed, batch.finished) matches the
// document: the envelope (HookEvent, BatchEvent) and its data (Job,
// Batch), with objects closed as for answers.
func TestWebhookPayloadsMatchTheOpenAPIDocument(t *testing.T) {
	c := loadContract(t)
	h := newHarness(t)
	ctx := context.Background()
	key := map[string]string{"X-API-Key": h.key}
	jsonKey := map[string]string{"X-API-Key": h.key, "Content-Type": "application/json"}
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	view := connector.View{PublicURL: h.url, ResultTTL: 24 * time.Hour,
		FileURL:    func(j *connector.Job, exp time.Time) string { return h.keys.FileURL(h.url, j.ID, exp) },
		ArchiveURL: func(id string, exp time.Time) string { return h.keys.ArchiveURL(h.url, id, exp) }}
	validate := func(what, schema string, body []byte) map[string]any {
		t.Helper()
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := c.doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
			t.Errorf("%s does not match the document's %s: %v\nbody: %s", what, schema, err, truncate(body))
		}
		return v
	}

	completed := c.do(h, "POST", "/v1/jobs", []byte(`{"image_base64":"`+png+`","metadata":{"row":1}}`), jsonKey, false).str("id")
	h.finish(completed, []byte("\x89PNG compressed"))
	failed := c.do(h, "POST", "/v1/jobs", []byte(`{"image_url":"https://images.example.com/a.png"}`), jsonKey, false).str("id")
	if _, err := h.store.Jobs.Update(ctx, failed, func(j *connector.Job) error {
		now := time.Now().UTC()
		j.Status, j.FinishedAt = connector.StatusFailed, &now
		j.Error = &connector.JobError{Code: connector.EINVALID, Message: "No file uploaded", UpstreamStatus: 400}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{completed, failed} {
		job, err := h.store.Jobs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(view.JobEvent(job))
		if err != nil {
			t.Fatal(err)
		}
		event := validate(job.EventType()+" payload", "HookEvent", body)
		data, _ := json.Marshal(event["data"])
		payload := validate(job.EventType()+" payload's data", "Job", data)
		answer := c.do(h, "GET", "/v1/jobs/"+id, nil, key, false).json
		// The API's answer goes on with the callback's own delivery state
		// (callback, and the updated_at of its writes); the payload is
		// the view as of the finish.
		for _, own := range []string{"callback", "updated_at"} {
			delete(answer, own)
			delete(payload, own)
		}
		if !reflect.DeepEqual(answer, payload) {
			a, _ := json.Marshal(answer)
			t.Errorf("%s: the webhook payload differs from the API's answer:\npayload %s\nanswer  %s", job.EventType(), data, a)
		}
	}

	bid := c.do(h, "POST", "/v1/batches", []byte(`{"items":[{"image_url":"https://images.example.com/a.png"},{"image_base64":"`+png+`"}]}`), jsonKey, false).str("id")
	b, err := h.store.Batches.Get(ctx, bid)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range b.JobIDs {
		if _, err := h.store.Batches.ItemEnded(ctx, bid, id, true, 10, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if b, err = h.store.Batches.Get(ctx, bid); err != nil || b.FinishedAt == nil {
		t.Fatalf("batch: expected it finished, got %+v, %v", b, err)
	}
	body, err := json.Marshal(view.BatchEvent(b))
	if err != nil {
		t.Fatal(err)
	}
	event := validate("batch.finished payload", "BatchEvent", body)
	answer := c.do(h, "GET", "/v1/batches/"+bid, nil, key, false).json
	data, _ := event["data"].(map[string]any)
	delete(answer, "callback")
	if !reflect.DeepEqual(answer, data) {
		t.Errorf("batch.finished: the webhook payload differs from the API's answer:\npayload %v\nanswer  %v", data, answer)
	}
}

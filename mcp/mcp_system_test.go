package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
	"github.com/imgflow/imgflow/mcp"
)

// The MCP server at /mcp, driven by the official Go SDK's client over real
// HTTP against the whole system (serve + work on Redis and the reference
// compression API), as an agent would.

// expectFileLink checks a completed job's result as an agent uses it: the
// resource_link downloads the compressed, smaller image without the key.
func expectFileLink(t *testing.T, res *sdk.CallToolResult, job systemtest.JobView, mime string) {
	t.Helper()
	if res.IsError || job.Status != "completed" || job.Result == nil {
		t.Fatalf("result %s / job %+v; want a completed job", systemtest.ToolText(res), job)
	}
	var link *sdk.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*sdk.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.URI != job.Result.FileURL || link.MIMEType != mime || link.Size == nil || *link.Size != job.Result.CompressedSize {
		t.Fatalf("resource_link %+v; want the file_url %s as %s of %d bytes", link, job.Result.FileURL, mime, job.Result.CompressedSize)
	}
	resp, err := http.Get(link.URI)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || int64(len(data)) != *link.Size || int64(len(data)) >= job.Result.OriginalSize {
		t.Errorf("the link answered %d with %d bytes; want 200 with %d bytes, fewer than the original %d", resp.StatusCode, len(data), *link.Size, job.Result.OriginalSize)
	}
}

func TestMCPListsTheCatalogsToolsWithSchemasAndAnnotations(t *testing.T) {
	s := startSystem(t)
	tools, err := s.mcp().ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	want := map[string]struct{ readOnly, openWorld bool }{
		"compress_image": {false, true}, "compress_many": {false, true}, "compress_variants": {false, true}, "get_job": {true, false},
		"list_jobs": {true, false}, "check_image": {true, true}, "check_account": {true, false}, "prepare_upload": {false, false},
	}
	for name, w := range want {
		tool := byName[name]
		if tool == nil {
			t.Errorf("tool %s missing; have %v", name, tools.Tools)
			continue
		}
		a := tool.Annotations
		if tool.Title == "" || tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil || a == nil {
			t.Errorf("%s: title %q, schemas %v/%v, annotations %v; want all", name, tool.Title, tool.InputSchema != nil, tool.OutputSchema != nil, a)
			continue
		}
		if a.ReadOnlyHint != w.readOnly || a.IdempotentHint != w.readOnly || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint != w.openWorld {
			t.Errorf("%s annotations %+v; want readOnly=idempotent=%v, not destructive, openWorld=%v", name, a, w.readOnly, w.openWorld)
		}
	}
	if len(byName) != len(want) {
		t.Errorf("%d tools; want %d", len(byName), len(want))
	}
	// The catalog's fields are the arguments: compress_image takes every
	// field of the Compress Image action, plus the tool's own.
	var in struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	raw, _ := json.Marshal(byName["compress_image"].InputSchema)
	json.Unmarshal(raw, &in)
	for _, f := range []string{"image_url", "image_base64", "filename", "metadata", "dedupe", "upload", "idempotency_key", "wait_seconds", "preview"} {
		if _, ok := in.Properties[f]; !ok {
			t.Errorf("compress_image input schema lacks %s: %s", f, raw)
		}
	}
}

func TestMCPCompressesByURLUploadHandleAndBase64(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()

	var job systemtest.JobView
	res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": s.Samples + "/photo.jpg", "preview": true}, &job)
	expectFileLink(t, res, job, "image/jpeg")
	if !slices.ContainsFunc(res.Content, func(c sdk.Content) bool {
		im, ok := c.(*sdk.ImageContent)
		return ok && len(im.Data) > 0 && len(im.Data) < 64<<10
	}) {
		t.Errorf("preview asked, none (or a large one) came: %s", systemtest.ToolText(res))
	}

	png := images.Read(t, "photo.png")
	res = systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_base64": base64.StdEncoding.EncodeToString(png), "filename": "inline.png"}, &job)
	expectFileLink(t, res, job, "image/png")
	if slices.ContainsFunc(res.Content, func(c sdk.Content) bool { _, ok := c.(*sdk.ImageContent); return ok }) {
		t.Error("a preview came back without being asked for")
	}

	var ticket struct {
		File     struct{ URI string }
		Transfer struct {
			Method, URL string
			Headers     map[string]string
		}
	}
	systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "upload.webp", "mimeType": "image/webp"}, &ticket)
	if ticket.Transfer.Method != http.MethodPut || strings.Contains(ticket.Transfer.URL, s.Key) || !strings.HasPrefix(ticket.File.URI, "mcp-file://") {
		t.Fatalf("prepare_upload answered %+v; want a PUT URL without the key and an mcp-file handle", ticket)
	}
	req, _ := http.NewRequest(ticket.Transfer.Method, ticket.Transfer.URL, bytes.NewReader(images.Read(t, "photo.webp")))
	req.Header.Set("Content-Type", ticket.Transfer.Headers["Content-Type"])
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	put.Body.Close()
	if put.StatusCode != http.StatusOK {
		t.Fatalf("PUT to the upload URL answered %d", put.StatusCode)
	}
	res = systemtest.CallTool(t, cs, "compress_image", map[string]any{"upload": ticket.File.URI}, &job)
	expectFileLink(t, res, job, "image/webp")
	if job.Result != nil && !strings.Contains(systemtest.ToolText(res), "upload.webp") {
		t.Errorf("the upload's name did not name the result: %s", systemtest.ToolText(res))
	}

	// The upload URL is signed: tampered, it takes nothing; another key
	// holding the handle finds nothing.
	bad, _ := http.NewRequest(http.MethodPut, ticket.Transfer.URL+"0", strings.NewReader("x"))
	if r, err := http.DefaultClient.Do(bad); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("PUT with a tampered token: %v %v; want 404", r, err)
	}
	other, _, err := s.Ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cs2 := systemtest.MCPSession(t, s.API+"/mcp", systemtest.KeyTransport{Header: "X-API-Key", Value: other, Base: http.DefaultTransport})
	res = systemtest.CallTool(t, cs2, "compress_image", map[string]any{"upload": ticket.File.URI}, nil)
	if !res.IsError || !strings.HasPrefix(systemtest.ToolText(res), "not_found") {
		t.Errorf("another key's compress of the handle: %s; want a not_found tool error", systemtest.ToolText(res))
	}
	if got := s.Credits(); got != 497 {
		t.Errorf("credits = %d after three compressions, want 497", got)
	}
}

func TestMCPBadImageIsAToolErrorWithTheRESTCode(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_base64": base64.StdEncoding.EncodeToString([]byte("not an image at all"))}, nil)
	var body struct{ Error struct{ Code string } }
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &body)
	if !res.IsError || body.Error.Code != "unsupported_format" {
		t.Errorf("bad base64 image: isError %v, structured %s; want a tool error unsupported_format, as REST answers", res.IsError, raw)
	}
	var job systemtest.JobView
	res = systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": s.Samples + "/truncated.png"}, &job)
	if !res.IsError || job.Error == nil || job.Error.Code != "unsupported_format" {
		t.Errorf("bad image URL: isError %v, job %+v; want a failed job as a tool error", res.IsError, job)
	}
	res = systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": s.Samples + "/photo.png", "colour": "red"}, nil)
	if !res.IsError || !strings.HasPrefix(systemtest.ToolText(res), "invalid_input") {
		t.Errorf("unknown argument: %s; want an invalid_input tool error", systemtest.ToolText(res))
	}
	// An unknown tool is the protocol's error, not a tool's.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "compress_everything"}); err == nil {
		t.Error("calling an unknown tool succeeded; want a JSON-RPC error")
	}
	if got := s.Credits(); got != 500 {
		t.Errorf("credits = %d, want 500: errors are free", got)
	}
}

func TestMCPRetriedIdempotencyKeyChargesOnce(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	var ids []string
	for range 3 {
		var job systemtest.JobView
		res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": s.Samples + "/screenshot.png", "dedupe": false, "idempotency_key": "agent-retry-1"}, &job)
		expectFileLink(t, res, job, "image/png")
		ids = append(ids, job.ID)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("job ids %v; want one job for one idempotency_key", ids)
	}
	if got := s.Credits(); got != 499 {
		t.Errorf("credits = %d, want 499: three calls, one charge", got)
	}
	// The job the tool made is logged under the /mcp request's id (no
	// REST request is made in between), and nothing logged carries the key.
	mcpIDs, created := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(s.Logs.String(), "\n") {
		var l struct {
			Msg, Route string
			RequestID  string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch {
		case l.Msg == "http request" && l.Route == "/mcp":
			mcpIDs[l.RequestID] = true
		case l.Msg == "http request" && strings.HasPrefix(l.Route, "/v1/jobs") && !strings.HasSuffix(l.Route, "/file"):
			t.Errorf("a tool call made an HTTP request to %s", l.Route)
		case l.Msg == "job created":
			created[l.RequestID] = true
		}
	}
	for id := range created {
		if !mcpIDs[id] {
			t.Errorf("job created under request_id %q, which no /mcp request has (%v)", id, mcpIDs)
		}
	}
	if len(created) != 1 || strings.Contains(s.Logs.String(), s.Key) {
		t.Errorf("%d job created lines (want 1); key in logs: %v", len(created), strings.Contains(s.Logs.String(), s.Key))
	}
}

func TestMCPSlowImageAnswersRunningAndGetJobFinishesIt(t *testing.T) {
	s := startSystem(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "image/png")
		w.Write(images.Read(t, "screenshot.png"))
	}))
	defer slow.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	cs := s.mcp()
	var job systemtest.JobView
	res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": slow.URL + "/slow.png", "wait_seconds": 1}, &job)
	if res.IsError || (job.Status != "queued" && job.Status != "processing") || !strings.Contains(systemtest.ToolText(res), "get_job") {
		t.Fatalf("slow image: %s (status %s); want it still running, with how to follow it", systemtest.ToolText(res), job.Status)
	}
	close(release)
	var done systemtest.JobView
	res = systemtest.CallTool(t, cs, "get_job", map[string]any{"id": job.ID}, &done)
	expectFileLink(t, res, done, "image/png")
}

func TestMCPDryRunAndAccountAgreeWithREST(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	auth := map[string]string{"X-API-Key": s.Key}
	var viaMCP, viaREST map[string]any
	systemtest.CallTool(t, cs, "check_image", map[string]any{"image_url": s.Samples + "/photo.jpg"}, &viaMCP)
	st, _, body := s.Request("POST", "/v1/jobs/dry-run", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg"}`), auth)
	json.Unmarshal(body, &viaREST)
	if a, b := mustJSON(viaMCP), mustJSON(viaREST); st != 200 || a != b {
		t.Errorf("check_image %s; REST dry run (%d) %s: want the same", a, st, b)
	}
	var acct map[string]any
	systemtest.CallTool(t, cs, "check_account", nil, &acct)
	_, _, body = s.Request("GET", "/v1/account", "", nil, auth)
	var rest map[string]any
	json.Unmarshal(body, &rest)
	if acct["credits_remaining"] != rest["credits_remaining"] || acct["user_id"] != rest["user_id"] || acct["credits_remaining"] == nil {
		t.Errorf("check_account %v; REST %v: want the same balance and user", acct, rest)
	}
	if _, leaked := acct["webhook_secret"]; leaked {
		t.Error("check_account hands the webhook signing secret to the model")
	}
	var list struct {
		Jobs []systemtest.JobView `json:"jobs"`
	}
	systemtest.CallTool(t, cs, "list_jobs", map[string]any{"limit": 5}, &list)
	if len(list.Jobs) != 0 {
		t.Errorf("list_jobs after a dry run: %d jobs; a dry run makes none", len(list.Jobs))
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestMCPRefusesAMissingOrWrongKeyBeforeReadingTheBody(t *testing.T) {
	s := startSystem(t)
	addr := strings.TrimPrefix(s.API, "http://")
	for name, header := range map[string]string{"missing": "", "wrong": "Authorization: Bearer not-a-key\r\n", "wrong X-API-Key": "X-API-Key: nope\r\n"} {
		// The body is announced (10 MiB: past what Go's server reads
		// itself to keep a connection alive) and never sent: a server
		// that read it would wait for it instead of answering.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+header+"Content-Length: 10485760\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s key: no answer before the body: %v", name, err)
			conn.Close()
			continue
		}
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s key: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		conn.Close()
	}
	// A client that asks first (Expect: 100-continue) hears 401, never
	// "100 Continue": the server never asked for the body.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nX-API-Key: nope\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Expect: 100-continue with a wrong key: %v %v; want 401 at once", resp, err)
	}
	conn.Close()
	// And the SDK client cannot connect without a key.
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	if _, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.API + "/mcp", DisableStandaloneSSE: true}, nil); err == nil {
		t.Error("connected without a key")
	}
}

// alternating sends each request to the next of several replicas.
type alternating struct {
	hosts []string
	n     atomic.Int64
	seen  sync.Map
}

func (a *alternating) RoundTrip(r *http.Request) (*http.Response, error) {
	host := a.hosts[int(a.n.Add(1))%len(a.hosts)]
	a.seen.Store(host, true)
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = host, host
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPIsStatelessAcrossServeReplicas(t *testing.T) {
	s := startSystem(t)
	// A second serve process on the same Redis and secret.
	second := s.StartReplica()
	replicas := &alternating{hosts: []string{strings.TrimPrefix(s.API, "http://"), strings.TrimPrefix(second, "http://")}}
	cs := systemtest.MCPSession(t, s.API+"/mcp", systemtest.KeyTransport{Header: "X-API-Key", Value: s.Key, Base: replicas})

	var ticket struct {
		File     struct{ URI string }
		Transfer struct{ URL string }
	}
	systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "r.png"}, &ticket)
	// The PUT goes to the other replica than the one that signed it.
	put, _ := http.NewRequest(http.MethodPut, ticket.Transfer.URL, bytes.NewReader(images.Read(t, "screenshot.png")))
	resp, err := replicas.RoundTrip(put)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT via a replica: %v %v", resp, err)
	}
	resp.Body.Close()
	var job systemtest.JobView
	// The handle as a file input URI in image_url (the draft SEP-2631's form).
	res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": ticket.File.URI, "wait_seconds": 0}, &job)
	if res.IsError || job.ID == "" {
		t.Fatalf("compress on one replica: %s", systemtest.ToolText(res))
	}
	res = systemtest.CallTool(t, cs, "get_job", map[string]any{"id": job.ID}, &job)
	expectFileLink(t, res, job, "image/png")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("tools/list on the next replica: %v", err)
	}
	n := 0
	replicas.seen.Range(func(any, any) bool { n++; return true })
	if n != 2 {
		t.Errorf("requests reached %d replicas; want both", n)
	}
}

// server.json, the MCP Registry entry, describes the endpoint as it is:
// filled in for this system (host, key), a client connects with it.
func TestServerJSONConnectsToTheMCPEndpoint(t *testing.T) {
	raw, err := os.ReadFile("../server.json")
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		Name, Description, Version string
		Remotes                    []struct {
			Type, URL string
			Headers   []struct {
				Name, Value          string
				IsRequired, IsSecret bool
			}
		}
	}
	if err := json.Unmarshal(raw, &entry); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).MatchString(entry.Name) || len(entry.Description) > 100 || entry.Version == "" || len(entry.Remotes) == 0 {
		t.Fatalf("server.json %+v: want a reverse-DNS name, a description of at most 100 characters, a version and a remote", entry)
	}
	remote := entry.Remotes[0] // the key's; the OAuth remote is tested in package oauth
	if remote.Type != "streamable-http" || !strings.HasSuffix(remote.URL, mcp.Path) || len(remote.Headers) != 1 || !remote.Headers[0].IsSecret || !remote.Headers[0].IsRequired {
		t.Fatalf("remote %+v: want streamable-http at %s with one required secret header", remote, mcp.Path)
	}
	s := startSystem(t)
	endpoint := strings.Replace(strings.Replace(remote.URL, "https://", "http://", 1), "{host}", strings.TrimPrefix(s.API, "http://"), 1)
	h := remote.Headers[0]
	tools, err := systemtest.MCPSession(t, endpoint, systemtest.KeyTransport{Header: h.Name, Value: strings.Replace(h.Value, "{api_key}", s.Key, 1), Base: http.DefaultTransport}).ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Errorf("tools/list with server.json's settings: %v", err)
	}
}

// An upload URL takes at most 10 MiB (declared or streamed) and no empty
// body; what it refuses is never stored.
func TestMCPUploadURLRefusesEmptyAndOversizedBodies(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	prepare := func() (url, handle string) {
		var ticket struct {
			File     struct{ URI string }
			Transfer struct{ URL string }
		}
		systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "big.png"}, &ticket)
		return ticket.Transfer.URL, ticket.File.URI
	}
	put := func(url string, body io.Reader, length int64) int {
		req, _ := http.NewRequest(http.MethodPut, url, body)
		req.ContentLength = length
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0 // the server may close before reading a refused body
		}
		res.Body.Close()
		return res.StatusCode
	}
	over := bytes.Repeat([]byte{0x89}, 10<<20+1)
	for name, c := range map[string]struct {
		body   io.Reader
		length int64
		want   int
	}{
		"declared over 10 MiB": {bytes.NewReader(over), int64(len(over)), http.StatusRequestEntityTooLarge},
		"streamed over 10 MiB": {io.MultiReader(bytes.NewReader(over)), -1, http.StatusRequestEntityTooLarge},
		"empty":                {strings.NewReader(""), 0, http.StatusBadRequest},
	} {
		url, handle := prepare()
		if got := put(url, c.body, c.length); got != c.want && got != 0 {
			t.Errorf("%s: PUT answered %d, want %d", name, got, c.want)
		}
		res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"upload": handle}, nil)
		if !res.IsError || !strings.HasPrefix(systemtest.ToolText(res), "not_found") {
			t.Errorf("%s: compress of the refused upload: %s; want not_found (nothing stored)", name, systemtest.ToolText(res))
		}
	}
}

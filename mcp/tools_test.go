package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// fakeBackend records the requests the tools make.
type fakeBackend struct {
	Backend
	got ImageRequest
}

func (f *fakeBackend) Compress(_ context.Context, key string, req ImageRequest) (*connector.Job, error) {
	f.got = req
	j := catalog.SampleJob()
	return j, nil
}

// A field added to the catalog's Compress Image action reaches the tool's
// input schema and the REST body, with no change in this package: how the
// transforms' options arrive.
func TestACatalogFieldReachesTheToolAndTheRESTBody(t *testing.T) {
	c := catalog.Default()
	for i, op := range c.Actions {
		if op.Key == "compress_image" {
			c.Actions[i].Inputs = append(op.Inputs, catalog.Field{Key: "max_width", Label: "Max Width", Type: catalog.FieldInteger, Help: "Resize to at most this width."})
		}
	}
	fake := &fakeBackend{}
	cs := connect(t, New(Options{Backend: fake, Catalog: c}))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	for _, tool := range tools.Tools {
		if tool.Name == "compress_image" {
			raw, _ := json.Marshal(tool.InputSchema)
			schema = string(raw)
		}
	}
	if !strings.Contains(schema, `"max_width":{"description":"Resize to at most this width.","type":"integer"}`) {
		t.Errorf("compress_image input schema %s lacks the catalog's new field", schema)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "compress_image",
		Arguments: map[string]any{"image_url": "https://images.example.com/a.png", "max_width": 640, "idempotency_key": "k", "wait_seconds": 3}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	body := fake.got.Fields
	if string(body) != `{"image_url":"https://images.example.com/a.png","max_width":640}` || fake.got.IdempotencyKey != "k" || fake.got.Wait.Seconds() != 3 {
		t.Errorf("REST request %s, idempotency %q, wait %v; want the catalog fields in the body and the tool's own as options", body, fake.got.IdempotencyKey, fake.got.Wait)
	}
}

// connect is a client session with h over HTTP, sending the key "k".
func connect(t *testing.T, h http.Handler) *sdk.ClientSession {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: keyHeader{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type keyHeader struct{}

func (keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", "k")
	return http.DefaultTransport.RoundTrip(r)
}

func TestThumbnailFitsThePreviewSide(t *testing.T) {
	// A PNG of 600×300 made by the encoder itself.
	img := newTestPNG(t, 600, 300)
	thumb, err := thumbnail(img)
	if err != nil {
		t.Fatal(err)
	}
	w, h := jpegSize(t, thumb)
	if w != previewSide || h != previewSide/2 {
		t.Errorf("preview %d×%d; want %d×%d", w, h, previewSide, previewSide/2)
	}
}

// A body that is not JSON-RPC, or a method nobody serves, is answered with
// a JSON-RPC error (the SDK's stateless handler answers plain text).
func TestProtocolErrorsAreJSONRPCErrors(t *testing.T) {
	srv := httptest.NewServer(New(Options{Backend: &fakeBackend{}}))
	defer srv.Close()
	for body, code := range map[string]float64{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_job"`: -32700,
		`{"jsonrpc":"2.0","id":1,"method":"images/sharpen"}`:                       -32601,
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    float64 `json:"code"`
				Message string  `json:"message"`
			} `json:"error"`
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if err != nil || got.JSONRPC != "2.0" || got.Error.Code != code || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %+v (%v); want a JSON-RPC error %v", body, res.StatusCode, got, err, code)
		}
	}
}

// A file input value in image_url (the draft SEP-2631's URI strings): a
// data: URI goes to the REST API as image_base64.
func TestADataURIInImageURLIsSentAsBase64(t *testing.T) {
	fake := &fakeBackend{}
	cs := connect(t, New(Options{Backend: fake}))
	uri := "data:image/png;base64,iVBORw0KGgo="
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "compress_image", Arguments: map[string]any{"image_url": uri}}); err != nil {
		t.Fatal(err)
	}
	body := fake.got.Fields
	if string(body) != `{"image_base64":"`+uri+`"}` {
		t.Errorf("REST body %s; want the data: URI as image_base64", body)
	}
}

//go:build bounds

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// The acceptance cases of "every request bounded", run against a whole
// `imgflow dev` process (the built binary: its embedded Redis, the
// reference upstream, the API and the worker in one process), on loopback.
// Each case's peak resident set is the process's VmHWM, reset before the
// case (clear_refs 5), and its growth is that peak less the resident set
// before the case. The budgets asserted are the issue's; the figures are
// printed (BENCHMARK.md, docs/capacity.md). Heavy (a 49 MP AVIF), so
// behind the bounds build tag: .ci/bounds.sh runs it.
//
//	go test -tags bounds -run TestBoundsOfADevProcess -count=1 -v .

// devProcess is a running `imgflow dev` of the built binary.
type devProcess struct {
	pid int
	api string // http://host:port
	key string // the demo key
}

func startBuiltDev(t *testing.T) *devProcess {
	t.Helper()
	if err := imaging.Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "imgflow")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d := systemtest.StartDev(t, time.Minute, bin, "dev", "--addr", "127.0.0.1:0", "--upstream-addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0")
	return &devProcess{pid: d.Cmd.Process.Pid, api: d.API, key: d.Key}
}

// mem reads the process's resident set and its peak, in bytes.
func (d *devProcess) mem(t *testing.T) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak
}

// measure runs one case and reports the process's peak resident set
// during it, its growth over the resident set before, and the time; the
// peak is reset first (clear_refs 5 sets VmHWM to VmRSS).
func (d *devProcess) measure(t *testing.T, name string, limitMiB int64, run func()) (peak, grew int64, took time.Duration) {
	t.Helper()
	time.Sleep(500 * time.Millisecond) // the previous case's stragglers end
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident set: %v", err)
	}
	before, _ := d.mem(t)
	start := time.Now()
	run()
	took = time.Since(start)
	_, peak = d.mem(t)
	grew = peak - before
	t.Logf("BOUNDS %-58s peak %4d MiB  grew %4d MiB (limit %d)  %6.1f s", name, peak>>20, grew>>20, limitMiB, took.Seconds())
	if grew > limitMiB<<20 {
		t.Errorf("%s: the process grew %d MiB; want at most %d", name, grew>>20, limitMiB)
	}
	return peak, grew, took
}

// call sends a request with the demo key in a header and decodes a JSON answer.
func (d *devProcess) call(t *testing.T, method, path, contentType string, body []byte, key bool) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, d.api+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key {
		req.Header.Set("X-API-Key", d.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	if m == nil {
		m = map[string]any{"raw": string(raw)}
	}
	return res.StatusCode, m, res.Header
}

func (d *devProcess) postJSON(t *testing.T, path string, v any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(v)
	status, m, _ := d.call(t, "POST", path, "application/json", body, true)
	return status, m
}

// credits is the demo key's balance in the reference upstream.
func (d *devProcess) credits(t *testing.T) float64 {
	t.Helper()
	status, m, _ := d.call(t, "GET", "/v1/account", "", nil, true)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/account: %d %v", status, m)
	}
	for _, k := range []string{"credits_remaining", "credits", "balance"} {
		if f, ok := m[k].(float64); ok {
			return f
		}
	}
	t.Fatalf("GET /v1/account: no balance in %v", m)
	return 0
}

// jobCount is how many jobs the demo key has.
func (d *devProcess) jobCount(t *testing.T) int {
	t.Helper()
	status, m, _ := d.call(t, "GET", "/v1/jobs?limit=100", "", nil, true)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/jobs: %d %v", status, m)
	}
	for _, k := range []string{"jobs", "items", "data"} {
		if l, ok := m[k].([]any); ok {
			return len(l)
		}
	}
	return 0
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// greyPNG is a w×h grey PNG: 49 MP in about 60 KB.
func greyPNG(t *testing.T, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	img.Set(0, 0, color.Gray{Y: 0})
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noisyPNG is a side×side PNG of random pixels: about 4 bytes a pixel.
func noisyPNG(t *testing.T, side int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	rand.Read(img.Pix)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func expectCode(t *testing.T, what string, status int, m map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || m["code"] != wantCode {
		t.Errorf("%s: answered %d %v; want %d %s", what, status, m, wantStatus, wantCode)
	}
}

func TestBoundsOfADevProcess(t *testing.T) {
	d := startBuiltDev(t)
	rss, _ := d.mem(t)
	t.Logf("BOUNDS %-58s rss  %4d MiB", "imgflow dev at rest", rss>>20)

	t.Run("dry run of a 91 KB EXIF bomb with preserve", func(t *testing.T) {
		bomb := images.JPEGWithEXIF(images.Read(t, "photo.jpg"), images.EXIFBomb(4000, 16000))
		credits := d.credits(t)
		d.measure(t, fmt.Sprintf("dry run, %d KB JPEG EXIF bomb, preserve", len(bomb)/1000), 200, func() {
			status, m := d.postJSON(t, "/v1/jobs/dry-run", map[string]any{"image_base64": b64(bomb), "preserve": "copyright"})
			expectCode(t, "dry run", status, m, http.StatusUnprocessableEntity, "metadata_too_large")
		})
		if got := d.credits(t); got != credits {
			t.Errorf("credits %v -> %v; want none charged", credits, got)
		}
	})

	t.Run("a PNG whose EXIF expands to 200 MB, kept", func(t *testing.T) {
		bomb := images.PNGWithEXIF(images.Read(t, "photo.png"), images.EXIFBomb(400, 512<<10))
		credits, jobs := d.credits(t), d.jobCount(t)
		d.measure(t, fmt.Sprintf("job, %d KB PNG, EXIF to 200 MB, preserve", len(bomb)/1000), 300, func() {
			status, m := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": b64(bomb), "preserve": "copyright"})
			expectCode(t, "job", status, m, http.StatusUnprocessableEntity, "metadata_too_large")
		})
		if got := d.credits(t); got != credits {
			t.Errorf("credits %v -> %v; want none charged", credits, got)
		}
		if got := d.jobCount(t); got != jobs {
			t.Errorf("jobs %d -> %d; want none made (no 200 MB result)", jobs, got)
		}
	})

	t.Run("oversized kept metadata refused, never charged or dropped", func(t *testing.T) {
		kept := images.PNGWithEXIF(images.Read(t, "photo.png"), images.EXIFBomb(1, 100_000))
		credits := d.credits(t)
		status, m := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": b64(kept), "preserve": "copyright"})
		expectCode(t, "100 KB of kept EXIF", status, m, http.StatusUnprocessableEntity, "metadata_too_large")
		if got := d.credits(t); got != credits {
			t.Errorf("credits %v -> %v; want none charged", credits, got)
		}
	})

	t.Run("an enlargement to 16384² refused before any work", func(t *testing.T) {
		credits, jobs := d.credits(t), d.jobCount(t)
		d.measure(t, "enlarge to 16384², refused", 50, func() {
			status, m := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": b64(images.Read(t, "photo.png")),
				"resize": map[string]any{"method": "fit", "width": 16384, "height": 16384, "enlarge": true}})
			expectCode(t, "enlargement", status, m, http.StatusBadRequest, "invalid_input")
			if !strings.Contains(fmt.Sprint(m["error"]), "megapixels") {
				t.Errorf("enlargement: %v; want the limit named", m)
			}
		})
		if got, n := d.credits(t), d.jobCount(t); got != credits || n != jobs {
			t.Errorf("credits %v -> %v, jobs %d -> %d; want nothing made or charged", credits, got, jobs, n)
		}
	})

	t.Run("a 49 MP PNG to AVIF", func(t *testing.T) {
		// Over AV1's largest picture: refused at creation, nothing made.
		grey := greyPNG(t, 7000, 7000)
		credits, jobs := d.credits(t), d.jobCount(t)
		d.measure(t, fmt.Sprintf("job, 49 MP grey PNG (%d KB) to AVIF, refused", len(grey)/1000), 100, func() {
			status, m := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": b64(grey), "convert": map[string]any{"type": "image/avif"}})
			expectCode(t, "49 MP to AVIF", status, m, http.StatusBadRequest, "invalid_input")
			if !strings.Contains(fmt.Sprint(m["error"]), "megapixels AV1 encodes") {
				t.Errorf("49 MP to AVIF: %v; want the limit named", m)
			}
		})
		if got, n := d.credits(t), d.jobCount(t); got != credits || n != jobs {
			t.Errorf("credits %v -> %v, jobs %d -> %d; want nothing made or charged", credits, got, jobs, n)
		}
	})

	t.Run("the largest AVIF, 35.6 MP", func(t *testing.T) {
		grey := greyPNG(t, 5968, 5973)
		d.measure(t, fmt.Sprintf("job, 35.6 MP grey PNG (%d KB) to AVIF, and its upstream", len(grey)/1000), 700, func() {
			start := time.Now()
			status, m := d.postJSON(t, "/v1/jobs?wait=25", map[string]any{"image_base64": b64(grey), "convert": map[string]any{"type": "image/avif"}})
			for status < 300 && m["status"] != "completed" && m["status"] != "failed" && time.Since(start) < 60*time.Second {
				status, m, _ = d.call(t, "GET", fmt.Sprintf("/v1/jobs/%s?wait=5", m["id"]), "", nil, true)
			}
			if status != http.StatusOK || m["status"] != "completed" {
				t.Errorf("35.6 MP to AVIF: answered %d %v after %s; want it completed within 60 s", status, truncateMap(m), time.Since(start).Round(time.Second))
			}
		})
		if _, peak := d.mem(t); peak > 700<<20 {
			t.Errorf("35.6 MP to AVIF: process peak %d MiB; want at most 700", peak>>20)
		}
	})

	t.Run("compress_many naming one 9.5 MiB upload 40 times", func(t *testing.T) {
		cs := d.mcp(t)
		var ticket struct {
			File     struct{ URI string }
			Transfer struct{ URL string }
		}
		systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "big.png"}, &ticket)
		big := make([]byte, 19<<19)
		copy(big, "\x89PNG\r\n\x1a\n")
		rand.Read(big[8:])
		req, _ := http.NewRequest(http.MethodPut, ticket.Transfer.URL, bytes.NewReader(big))
		put, err := http.DefaultClient.Do(req)
		if err != nil || put.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %v %v", err, put)
		}
		put.Body.Close()
		items := make([]map[string]any, 40)
		for i := range items {
			items[i] = map[string]any{"upload": ticket.File.URI}
		}
		d.measure(t, "MCP compress_many, one 9.5 MiB upload named 40 times", 200, func() {
			res := systemtest.CallTool(t, cs, "compress_many", map[string]any{"items": items}, nil)
			if !res.IsError || !strings.Contains(systemtest.ToolText(res), "once per call") {
				t.Errorf("compress_many answered %s; want a repeat refused", systemtest.ToolText(res))
			}
		})
	})

	t.Run("a JSON-RPC batch of 30 previews", func(t *testing.T) {
		status, job := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": b64(images.Read(t, "photo.png"))})
		if status != http.StatusOK || job["status"] != "completed" {
			t.Fatalf("a job to preview: %d %v", status, truncateMap(job))
		}
		var calls []string
		for i := range 30 {
			calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_job","arguments":{"id":%q,"preview":true}}}`, i, job["id"]))
		}
		d.measure(t, "MCP JSON-RPC batch of 30 get_job previews", 200, func() {
			req, _ := http.NewRequest(http.MethodPost, d.api+"/mcp", strings.NewReader("["+strings.Join(calls, ",")+"]"))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+d.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("batches")) {
				t.Errorf("batch answered %d %s; want it refused", res.StatusCode, body)
			}
		})
	})

	t.Run("45 anonymous trickling connections and a keyed upload", func(t *testing.T) {
		host := strings.TrimPrefix(d.api, "http://")
		var conns []net.Conn
		for range 45 {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			fmt.Fprintf(c, "POST /v1/jobs HTTP/1.1\r\nHost: %s\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n\x89PNG", host, 4<<20)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		stop := make(chan struct{})
		defer close(stop)
		go func() { // 4 bytes a second each
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
					for _, c := range conns {
						c.Write([]byte("\r\n\x1a\n"))
					}
				}
			}
		}()
		time.Sleep(2 * time.Second)
		upload := noisyPNG(t, 1000) // about 4 MB
		for i := range 3 {
			status, m, _ := d.call(t, "POST", "/v1/jobs", "image/png", upload, true)
			t.Logf("keyed 4 MiB upload %d among 45 trickling connections: %d %v", i, status, m["code"])
			if status != http.StatusAccepted {
				t.Errorf("keyed 4 MiB upload %d among 45 trickling connections: %d %v; want it read and queued", i, status, truncateMap(m))
			}
		}
	})

	t.Run("unknown sub-fields and query parameters", func(t *testing.T) {
		png := b64(images.Read(t, "photo.png"))
		status, m := d.postJSON(t, "/v1/jobs?resise=100", map[string]any{"image_base64": png})
		expectCode(t, "?resise=100", status, m, http.StatusBadRequest, "invalid_input")
		status, m = d.postJSON(t, "/v1/jobs", map[string]any{"image_base64": png, "resize": map[string]any{"method": "fit", "widht": 100}})
		expectCode(t, "resize.widht", status, m, http.StatusBadRequest, "invalid_input")
		status, m = d.postJSON(t, "/v1/jobs", map[string]any{"image_base64": png, "convert": map[string]any{"type": "image/webp", "qualty": 5}})
		expectCode(t, "convert.qualty", status, m, http.StatusBadRequest, "invalid_input")
	})

	t.Run("invisible filename characters", func(t *testing.T) {
		png := b64(images.Read(t, "photo.png"))
		for _, name := range []string{"a\u200bb.png", "\ufeffa.png", "a\u2028.png", "a\U000E0041.png"} {
			status, m := d.postJSON(t, "/v1/jobs?wait=20", map[string]any{"image_base64": png, "filename": name})
			if status == http.StatusBadRequest && strings.Contains(fmt.Sprint(m["error"]), "filename") {
				continue // refused
			}
			res, _ := m["result"].(map[string]any)
			got, _ := res["filename"].(string)
			if status != http.StatusOK || got == "" || strings.ContainsAny(got, "\u200b\ufeff\u2028\U000E0041") {
				t.Errorf("filename %q: answered %d, result filename %q; want refused or removed", name, status, got)
			}
		}
	})
}

func truncateMap(m map[string]any) string {
	s := fmt.Sprint(m)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// mcp connects the Go SDK's client with the demo key as a Bearer token.
func (d *devProcess) mcp(t *testing.T) *sdk.ClientSession {
	return systemtest.MCPSession(t, d.api+"/mcp", systemtest.KeyTransport{Header: "Authorization", Value: "Bearer " + d.key, Base: http.DefaultTransport})
}

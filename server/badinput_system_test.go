package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/server"
)

// The bad-input table of docs/security.md, row by row: each input gets the
// status and code the table names, charges nothing, leaves the system
// answering, and allocates within a loose bound (a multiple of what the
// input may legitimately hold, far below what mishandling it would take).

// endless is an endless reader of one byte value that allocates nothing.
type endless byte

func (b endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// allocated runs f and returns the bytes the whole process allocated
// meanwhile (server, worker, reference upstream and client alike).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// pngHeader is a PNG whose IHDR claims w×h pixels of 8-bit grey, with one
// tiny IDAT: a decompression bomb as far as any header check can tell.
func pngHeader(w, h uint32) []byte {
	chunk := func(typ string, data []byte) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
		return b.Bytes()
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8] = 8 // bit depth; colour type 0 (grey), no interlace
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", []byte{0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01})...)
	return append(out, chunk("IEND", nil)...)
}

type badInput struct {
	name        string
	contentType string
	body        func(t *testing.T) []byte
	// stream, when set, is sent instead of body, of declared length
	// (ContentLength; -1 for chunked).
	stream   io.Reader
	length   int64
	query    string
	status   int
	code     string // of the answer, or of the failed job when status is 200
	maxAlloc uint64
}

func jsonBody(s string) func(*testing.T) []byte {
	return func(*testing.T) []byte { return []byte(s) }
}

func base64Body(n int) func(*testing.T) []byte {
	return func(t *testing.T) []byte {
		img := append(images.Read(t, "photo.png"), make([]byte, n)...)[:n]
		return []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(img) + `"}`)
	}
}

func uploadBody(name string, data func(*testing.T) []byte) (string, func(*testing.T) []byte) {
	return "multipart/form-data; boundary=imgflowbadinput", func(t *testing.T) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.SetBoundary("imgflowbadinput")
		w, _ := mw.CreateFormFile("file", name)
		w.Write(data(t))
		mw.Close()
		return buf.Bytes()
	}
}

func fixture(name string) func(*testing.T) []byte {
	return func(t *testing.T) []byte { return images.Read(t, name) }
}

const mib = 1 << 20

func badInputs() []badInput {
	tenMiBPlusOne := base64Body(10*mib + 1)
	rows := []badInput{
		{name: "body over the limit, declared by Content-Length", contentType: "application/json",
			stream: endless(0), length: 1 << 30, status: 413, code: "too_large", maxAlloc: 16 * mib},
		{name: "body over the limit, chunked", contentType: "application/json",
			stream: io.MultiReader(strings.NewReader(`{"image_base64":"`), io.LimitReader(endless('A'), 64*mib)), length: -1,
			status: 413, code: "too_large", maxAlloc: 24 * mib},
		{name: "image_base64 of 10 MiB + 1 byte", contentType: "application/json", body: tenMiBPlusOne,
			status: 413, code: "too_large", maxAlloc: 24 * mib},
		{name: "malformed base64", contentType: "application/json", body: jsonBody(`{"image_base64":"iVBORw0KGgo*AAAA"}`),
			status: 400, code: "invalid_input", maxAlloc: mib},
		{name: "data: URI that is not base64", contentType: "application/json", body: jsonBody(`{"image_base64":"data:image/png,%89PNG"}`),
			status: 400, code: "invalid_input", maxAlloc: mib},
		{name: "data: URI declaring image/png, carrying text", contentType: "application/json",
			body:   jsonBody(`{"image_base64":"data:image/png;base64,` + base64.StdEncoding.EncodeToString([]byte("hello, not an image")) + `"}`),
			status: 400, code: "unsupported_format", maxAlloc: mib},
		{name: "non-image bytes as base64", contentType: "application/json",
			body:   jsonBody(`{"image_base64":"` + base64.StdEncoding.EncodeToString([]byte("hello, not an image")) + `"}`),
			status: 400, code: "unsupported_format", maxAlloc: mib},
		{name: "invalid JSON", contentType: "application/json", body: jsonBody(`{"image_url": `),
			status: 400, code: "invalid_input", maxAlloc: mib},
		{name: "JSON of the wrong shape", contentType: "application/json", body: jsonBody(`["image_url"]`),
			status: 400, code: "invalid_input", maxAlloc: mib},
		{name: "wrong content type", contentType: "text/plain", body: jsonBody(`{"image_url":"https://a.example/a.png"}`),
			status: 415, code: "unsupported_media_type", maxAlloc: mib},
		{name: "form-urlencoded", contentType: "application/x-www-form-urlencoded", body: jsonBody(`image_url=https://a.example/a.png`),
			status: 415, code: "unsupported_media_type", maxAlloc: mib},
		{name: "multipart without a boundary", contentType: "multipart/form-data", body: jsonBody("--x\r\n"),
			status: 415, code: "unsupported_media_type", maxAlloc: mib},
		{name: "wait out of range", contentType: "application/json", query: "?wait=26", body: jsonBody(`{"image_url":"https://a.example/a.png"}`),
			status: 400, code: "invalid_input", maxAlloc: mib},
	}
	add := func(name, filename string, data func(*testing.T) []byte, status int, code string, maxAlloc uint64) {
		ct, body := uploadBody(filename, data)
		rows = append(rows, badInput{name: name, contentType: ct, body: body, query: "?wait=20", status: status, code: code, maxAlloc: maxAlloc})
	}
	add("upload of 10 MiB + 1 byte", "big.png", func(t *testing.T) []byte {
		return append(images.Read(t, "photo.png"), make([]byte, 10*mib+1-len(images.Read(t, "photo.png")))...)
	}, 413, "too_large", 24*mib) // the cap once, in chunks (was 33 MiB: a buffer grown by doubling)
	add("non-image upload", "not-an-image.png", fixture("not-an-image.png"), 400, "unsupported_format", mib)
	add("empty upload", "empty.png", fixture("empty.png"), 400, "invalid_input", mib)
	add("GIF upload (another format)", "animated.gif", fixture("animated.gif"), 400, "unsupported_format", mib)
	// Accepted (the magic bytes are right), then failed by the compression
	// API without a charge.
	for _, name := range []string{"truncated.png", "truncated.jpg", "truncated.webp"} {
		add("truncated "+name[10:]+" upload", name, fixture(name), 200, "unsupported_format", 32*mib)
	}
	add("pixel bomb: PNG header claiming 30000×30000", "bomb.png", func(*testing.T) []byte { return pngHeader(30000, 30000) },
		200, "unsupported_format", 32*mib)
	return rows
}

func TestBadInputsGetTheirDocumentedAnswer(t *testing.T) {
	s := startSystem(t)
	for _, row := range badInputs() {
		t.Run(row.name, func(t *testing.T) {
			before := s.Credits()
			var body []byte
			if row.body != nil {
				body = row.body(t)
			}
			var status int
			var answer []byte
			alloc := allocated(func() {
				var r io.Reader = bytes.NewReader(body)
				if row.stream != nil {
					r = row.stream
				}
				req, err := http.NewRequest(http.MethodPost, s.API+"/v1/jobs"+row.query, r)
				if err != nil {
					t.Fatal(err)
				}
				if row.stream != nil {
					req.ContentLength = row.length
				}
				req.Header.Set("Content-Type", row.contentType)
				req.Header.Set("X-API-Key", s.Key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				answer, _ = io.ReadAll(res.Body)
				res.Body.Close()
				status = res.StatusCode
			})
			var got struct {
				Code  string `json:"code"`
				Error *struct {
					Code string `json:"code"`
				} `json:"error"`
				Status string `json:"status"`
			}
			json.Unmarshal(answer, &got)
			code := got.Code
			if status == http.StatusOK && got.Error != nil {
				code = got.Error.Code
			}
			if status != row.status || code != row.code {
				t.Errorf("got %d %s; want %d %s: %.300s", status, code, row.status, row.code, answer)
			}
			if status == http.StatusOK && got.Status != "failed" {
				t.Errorf("job %s; want failed", got.Status)
			}
			t.Logf("%d %s, %.1f MiB allocated", status, code, float64(alloc)/mib)
			if alloc > row.maxAlloc {
				t.Errorf("allocated %d MiB handling it; want at most %d MiB", alloc/mib, row.maxAlloc/mib)
			}
			if after := s.Credits(); after != before {
				t.Errorf("credits %d -> %d: a bad input was charged", before, after)
			}
		})
	}
	// Nothing crashed: the system still does a good job.
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/screenshot.png"}`), map[string]string{"X-API-Key": s.Key})
	s.ExpectCompressed(st, body, "image/png")
	if st, _, _ := s.Request("GET", "/health", "", nil, nil); st != http.StatusOK {
		t.Errorf("/health answered %d after the bad inputs", st)
	}
}

// serveWith serves the system's API with the production http.Server
// settings, changed by adjust (shorter timeouts, so the test need not wait
// the real ones), on a loopback port; it returns the host:port.
func (s *system) serveWith(t *testing.T, adjust func(*http.Server)) string {
	t.Helper()
	srv := server.NewHTTPServer(s.Handler)
	adjust(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// rawExchange writes req on a new connection, then reads until the server
// closes it (at most 10 s), and returns what came back.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the connection open: got %q so far", out)
	}
	return string(out)
}

func TestTheHTTPServerSettingsAreTheDocumentedOnes(t *testing.T) {
	srv := server.NewHTTPServer(nil)
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != 2*time.Minute || srv.MaxHeaderBytes != 64<<10 {
		t.Errorf("header timeout %s, request timeout %s, header cap %d; docs/security.md says 10s, 2m0s, 65536",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.MaxHeaderBytes)
	}
}

func TestHugeHeadersGet431BeforeImgflowReadsThem(t *testing.T) {
	s := startSystem(t)
	before := s.Credits()
	huge := "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-API-Key: " + s.Key + "\r\nX-Filler: " + strings.Repeat("a", 128<<10) + "\r\n\r\n"
	if out := rawExchange(t, strings.TrimPrefix(s.API, "http://"), huge); !strings.HasPrefix(out, "HTTP/1.1 431 ") {
		t.Errorf("got %.200q; want 431 Request Header Fields Too Large", out)
	}
	// 32 KiB of headers (long cookies, tracing) still pass.
	req, _ := http.NewRequest(http.MethodGet, s.API+"/health", nil)
	req.Header.Set("X-Filler", strings.Repeat("a", 32<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("32 KiB of headers: %v %v; want 200", res, err)
	}
	if res != nil {
		res.Body.Close()
	}
	if after := s.Credits(); after != before {
		t.Errorf("credits %d -> %d", before, after)
	}
}

// A client that never finishes its headers is cut off without an answer; one
// that never finishes its body gets 400 invalid_input and the connection
// closes. Neither is charged, and the server goes on serving.
func TestSlowClientsAreCutOff(t *testing.T) {
	s := startSystem(t)
	before := s.Credits()
	addr := s.serveWith(t, func(srv *http.Server) {
		srv.ReadHeaderTimeout = 300 * time.Millisecond
		srv.ReadTimeout = 600 * time.Millisecond
	})
	if out := rawExchange(t, addr, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-API-Key: "+s.Key+"\r\n"); out != "" {
		t.Errorf("slow headers: got %.200q; want the connection closed without an answer", out)
	}
	slowBody := "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-API-Key: " + s.Key +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"image_url\": \"http"
	out := rawExchange(t, addr, slowBody)
	if !strings.HasPrefix(out, "HTTP/1.1 400 ") || !strings.Contains(out, `"code":"invalid_input"`) {
		t.Errorf("slow body: got %.300q; want 400 invalid_input", out)
	}
	res, err := http.Get("http://" + addr + "/health")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("after slow clients: %v %v; want /health 200", res, err)
	}
	res.Body.Close()
	if after := s.Credits(); after != before {
		t.Errorf("credits %d -> %d", before, after)
	}
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/upstream"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/server"
)

// inProcessAPI is the API handler as the harness wires it (real Redis
// store, the reference upstream answering key checks), built once per fuzz
// target or flood and called in-process: a fuzzed request never leaves the
// test. It returns the handler, a valid key and the test's Redis.
func inProcessAPI(tb testing.TB) (http.Handler, string, *redistest.Redis) {
	r := redistest.New(tb)
	ledger := refupstream.NewLedger(r.Client, r.Prefix+"up:", nil)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: quiet}))
	tb.Cleanup(up.Close)
	key, _, err := ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	kr, err := keyring.New("fuzz-secret-0123456789")
	if err != nil {
		tb.Fatal(err)
	}
	store := redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix})
	cfg := harnessConfig{Config: server.Config{
		Jobs: store.Jobs, Blobs: store.Blobs, Hooks: store.Hooks, OpLimiter: store.Hooks,
		Keyring:   kr,
		PublicURL: "https://imgflow.example.com",
		CheckURL: func(ctx context.Context, field, raw string) error {
			return guard.ForField(guard.CheckURL(ctx, raw, guard.Policy{}, publicResolver{}), field)
		},
		Logger: quiet,
	},
		Idempotency: store.Idempotency, Accounts: store.Accounts, Queue: &recordingQueue{},
		Compressor: upstream.New(up.URL + "/api"),
	}
	api := cfg.wire(tb).Handler()
	return api, key, r
}

// codesOf is what each status of POST /v1/jobs may carry as its code.
var codesOf = map[int][]string{
	http.StatusBadRequest:            {"invalid_input", "url_not_allowed", "unsupported_format", "fetch_failed"},
	http.StatusUnauthorized:          {"invalid_key"},
	http.StatusConflict:              {"idempotency_in_flight"},
	http.StatusRequestEntityTooLarge: {"too_large"},
	http.StatusUnsupportedMediaType:  {"unsupported_media_type"},
	http.StatusUnprocessableEntity:   {"idempotency_mismatch"},
	http.StatusTooManyRequests:       {"insufficient_credits"},
}

// checkCreateAnswer holds one answer of POST /v1/jobs to the contract: a
// 202 with the job, or a documented 4xx with its code; never a 5xx.
func checkCreateAnswer(t *testing.T, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	var answer struct {
		ID    string `json:"id"`
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("body %q: answer %d is not JSON: %q", body, rec.Code, rec.Body.String())
	}
	if rec.Code == http.StatusAccepted {
		if answer.ID == "" {
			t.Fatalf("body %q: 202 without a job id: %s", body, rec.Body.String())
		}
		return
	}
	codes, ok := codesOf[rec.Code]
	if !ok {
		t.Fatalf("body %q: status %d is not a documented answer: %s", body, rec.Code, rec.Body.String())
	}
	for _, c := range codes {
		if answer.Code == c && answer.Error != "" {
			return
		}
	}
	t.Fatalf("body %q: status %d with code %q (want one of %v) and message %q", body, rec.Code, answer.Code, codes, answer.Error)
}

func tinyPNG(tb testing.TB) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// post sends one request in-process. A request that has not been answered
// after 30 s (any answer takes milliseconds) is a hang: it fails with every
// goroutine's stack, so the fuzzer keeps the input.
func post(t testing.TB, h http.Handler, key, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-API-Key", key)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("no answer after 30 s to %q; goroutines:\n%s", body, buf[:runtime.Stack(buf, true)])
	}
	return rec
}

// FuzzCreateJobJSON sends arbitrary JSON bodies (image_url, image_base64
// as plain base64 or a data: URI, metadata, ...) to POST /v1/jobs.
func FuzzCreateJobJSON(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString(tinyPNG(f))
	for _, s := range []string{
		`{"image_url":"https://images.example/a.png"}`,
		`{"image_base64":"` + b64 + `","filename":"a.png","metadata":{"row":7}}`,
		`{"image_base64":"data:image/png;base64,` + b64 + `"}`,
		`{"image_base64":"data:text/plain,hello"}`,
		`{"image_base64":"` + base64.RawURLEncoding.EncodeToString(tinyPNG(f)) + `"}`,
		`{"image_base64":"!!!!"}`, `{"image_base64":"aGVsbG8="}`,
		`{"image_url":"http://10.0.0.1/a.png","callback_url":"https://hooks.example/x?sig=1"}`,
		`{"image_url":"https://a.example/a.png","image_base64":"` + b64 + `"}`,
		`{"metadata":[1,2]}`, `{"image_url":7}`, `[]`, `null`, `{`, ``, `{"image_url":"https://a.example/"} trailing`,
	} {
		f.Add([]byte(s))
	}
	h, key, _ := inProcessAPI(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkCreateAnswer(t, body, post(t, h, key, "application/json", body))
	})
}

// FuzzCreateJobMultipart sends arbitrary multipart bodies (boundary
// "fuzzboundary") to POST /v1/jobs.
func FuzzCreateJobMultipart(f *testing.F) {
	form := func(fields map[string]string, file []byte) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.SetBoundary("fuzzboundary")
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		if file != nil {
			w, _ := mw.CreateFormFile("upload", "a.png")
			w.Write(file)
		}
		mw.Close()
		return buf.Bytes()
	}
	img := tinyPNG(f)
	f.Add(form(nil, img))
	f.Add(form(map[string]string{"filename": "x.png", "metadata": `{"a":1}`, "callback_url": "https://hooks.example/cb"}, img))
	f.Add(form(map[string]string{"image_url": "https://images.example/a.png"}, nil))
	f.Add(form(map[string]string{"image_base64": base64.StdEncoding.EncodeToString(img)}, nil))
	f.Add(form(nil, []byte("not an image")))
	f.Add(form(nil, []byte{}))
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n\x89PNG"))
	f.Add([]byte("--fuzzboundary--\r\n"))
	h, key, _ := inProcessAPI(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkCreateAnswer(t, body, post(t, h, key, "multipart/form-data; boundary=fuzzboundary", body))
	})
}

// FuzzBase64RoundTrip: any PNG-looking bytes sent as image_base64 (standard
// or URL-safe, padded or not, wrapped in lines, or as a data: URI) make a
// job whose input is exactly that many bytes. It runs through the handler,
// so it holds whatever shape the decoding code takes.
func FuzzBase64RoundTrip(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte("\x00\x00\x00\rIHDR"), uint8(3))
	f.Add(bytes.Repeat([]byte{0xfb, 0xff}, 100), uint8(5))
	h, key, _ := inProcessAPI(f)
	f.Fuzz(func(t *testing.T, tail []byte, form uint8) {
		if len(tail) > 4096 {
			return // the decoding is per 4 bytes: length adds time, not paths
		}
		data := append([]byte("\x89PNG\r\n\x1a\n"), tail...)
		std := base64.StdEncoding.EncodeToString(data)
		var enc string
		switch form % 6 {
		case 0:
			enc = std
		case 1:
			enc = base64.RawStdEncoding.EncodeToString(data)
		case 2:
			enc = base64.URLEncoding.EncodeToString(data)
		case 3:
			enc = base64.RawURLEncoding.EncodeToString(data)
		case 4:
			for len(std) > 76 {
				enc, std = enc+std[:76]+"\r\n", std[76:]
			}
			enc += std
		case 5:
			enc = "data:image/png;base64," + std
		}
		body, _ := json.Marshal(map[string]string{"image_base64": enc})
		rec := post(t, h, key, "application/json", body)
		var job struct {
			Input struct {
				Kind string `json:"kind"`
				Size int    `json:"size"`
			} `json:"input"`
		}
		json.Unmarshal(rec.Body.Bytes(), &job)
		if rec.Code != http.StatusAccepted || job.Input.Kind != "base64" || job.Input.Size != len(data) {
			t.Fatalf("%d bytes as %.80q: %d %s; want 202 with a base64 input of %d bytes", len(data), enc, rec.Code, rec.Body.String(), len(data))
		}
	})
}

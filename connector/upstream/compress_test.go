package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/imgflow/imgflow/connector"
)

const okAnswer = `{"success":true,"job_id":"7d9f0a52-1111-4c3b-9a55-0c2a1e5e3c11","status":"completed",
"message":"Image compressed successfully","compressed_data":"iVBORw0KGgo=","original_size":1000,
"compressed_size":8,"compression_ratio":99.2,"credits_remaining":499}`

const olderListingAnswer = `{"success":true,"job_id":"7d9f0a52-1111-4c3b-9a55-0c2a1e5e3c11","status":"completed",
"message":"Image compressed successfully","compressed_data":"iVBORw0KGgo=","original_size":1000,
"compressed_size":8,"compression_ratio":99.2}`

func TestCompressStreamsTheFormAndDecodesTheResult(t *testing.T) {
	var got received
	srv := stub(t, http.StatusOK, "", okAnswer, &got)
	res, err := New(srv.URL+"/api").Compress(context.Background(), "key-123", "", png(1000), "cat.png")
	if err != nil {
		t.Fatalf("expected a result, got %v", err)
	}
	if got.apiKey != "key-123" || got.filename != "cat.png" || got.partType != "image/png" || got.size != 1000 {
		t.Errorf("expected key-123, cat.png, image/png, 1000 bytes; stub got %+v", got)
	}
	if got, _ := io.ReadAll(connector.BytesReader(res.Data)); !bytes.Equal(got, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("expected the decoded PNG signature, got %q", got)
	}
	if res.UpstreamJobID != "7d9f0a52-1111-4c3b-9a55-0c2a1e5e3c11" || res.OriginalSize != 1000 || res.CompressedSize != 8 || res.CompressionRatio != 99.2 {
		t.Errorf("expected the answer's fields, got %+v", res)
	}
	if res.CreditsRemaining == nil || *res.CreditsRemaining != 499 {
		t.Errorf("expected credits_remaining 499, got %v", res.CreditsRemaining)
	}
}

func TestCompressLeavesCreditsNilForTheOlderListing(t *testing.T) {
	srv := stub(t, http.StatusOK, "", olderListingAnswer, nil)
	res, err := New(srv.URL).Compress(context.Background(), "k", "", png(100), "a.png")
	if err != nil {
		t.Fatalf("expected a result, got %v", err)
	}
	if res.CreditsRemaining != nil {
		t.Errorf("expected nil credits_remaining, got %d", *res.CreditsRemaining)
	}
}

func TestCompressNamesAnUnnamedPartAfterItsType(t *testing.T) {
	var got received
	srv := stub(t, http.StatusOK, "", okAnswer, &got)
	if _, err := New(srv.URL).Compress(context.Background(), "k", "", strings.NewReader("\xFF\xD8\xFF\xE0rest"), ""); err != nil {
		t.Fatal(err)
	}
	if got.filename != "image.jpg" || got.partType != "image/jpeg" {
		t.Errorf("expected image.jpg as image/jpeg, got %q as %q", got.filename, got.partType)
	}
}

func TestCompressSendsUnknownBytesAsOctetStream(t *testing.T) {
	var got received
	srv := stub(t, http.StatusBadRequest, "", `{"error":"Invalid file format"}`, &got)
	_, err := New(srv.URL).Compress(context.Background(), "k", "", strings.NewReader("GIF89a"), "a.gif")
	if got.partType != "application/octet-stream" || got.size != 6 {
		t.Errorf("expected 6 bytes of application/octet-stream, got %d of %q", got.size, got.partType)
	}
	if connector.ErrorCodeOf(err) != connector.EFORMAT {
		t.Errorf("expected %s, got %v", connector.EFORMAT, err)
	}
}

// Every answer of /compress the contract and its listings allow.
func TestCompressMapsEveryAnswer(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		code        connector.ErrorCode
		message     string
		retryable   bool
		credits     *int64
	}{
		{"wrong content type", 400, "", `{"error":"Content-Type must be multipart/form-data"}`, connector.EINVALID, "Content-Type must be multipart/form-data", false, nil},
		{"no file", 400, "", `{"error":"No file uploaded"}`, connector.EINVALID, "No file uploaded", false, nil},
		{"missing fields", 400, "", `{"error":"Missing required fields: api_key, file"}`, connector.EINVALID, "Missing required fields: api_key, file", false, nil},
		{"format", 400, "", `{"error":"Invalid file format"}`, connector.EFORMAT, "Invalid file format", false, nil},
		{"bad key", 401, "", `{"error":"Invalid API key"}`, connector.EUNAUTHORIZED, "Invalid API key", false, nil},
		{"too large", 413, "", `{"error":"Image size (10485761 bytes) exceeds maximum limit (10485760 bytes)"}`, connector.ETOOLARGE, "Image size (10485761 bytes) exceeds maximum limit (10485760 bytes)", false, nil},
		{"no credits", 429, "", `{"error":"Insufficient credits. Please purchase more credits to continue compression.","credits_remaining":0}`, connector.ENOCREDITS, "Insufficient credits. Please purchase more credits to continue compression.", false, ptr(0)},
		{"no credits without balance", 429, "", `{"error":"Insufficient credits."}`, connector.ENOCREDITS, "Insufficient credits.", false, ptr(0)},
		{"internal error", 500, "", `{"error":"Internal server error"}`, connector.EUPSTREAM, "Internal server error", true, nil},
		{"unavailable JSON", 503, "", `{"error":"Service unavailable"}`, connector.EUPSTREAM, "Service unavailable", true, nil},
		{"not found route", 404, "", `{"error":"Not found"}`, connector.EUPSTREAM, "Not found", true, nil},
		{"HTML 502 from a proxy", 502, "text/html", `<html><body><h1>502 Bad Gateway</h1></body></html>`, connector.EUPSTREAM, "compression API answered 502 Bad Gateway", true, nil},
		{"HTML 413 from a proxy", 413, "text/html", `<html><body>413 Request Entity Too Large</body></html>`, connector.ETOOLARGE, "compression API answered 413 Request Entity Too Large", false, nil},
		{"empty 504", 504, "text/plain", ``, connector.EUPSTREAM, "compression API answered 504 Gateway Timeout", true, nil},
		{"200 without data", 200, "", `{"success":true,"job_id":"x","status":"completed"}`, connector.EUPSTREAM, "compression API answered 200 without compressed_data", true, nil},
		{"200 not JSON", 200, "text/html", `<html>ok</html>`, connector.EUPSTREAM, "compression API answered 200 with a body that is not the expected JSON", true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := stub(t, c.status, c.contentType, c.body, nil)
			_, err := New(srv.URL).Compress(context.Background(), "secret-key-42", "", png(100), "a.png")
			var e *connector.Error
			if !errors.As(err, &e) {
				t.Fatalf("expected a *connector.Error, got %T %v", err, err)
			}
			if e.Code != c.code || e.Message != c.message || e.Retryable != c.retryable || e.UpstreamStatus != c.status {
				t.Errorf("expected %s %q retryable=%v status %d, got %s %q retryable=%v status %d",
					c.code, c.message, c.retryable, c.status, e.Code, e.Message, e.Retryable, e.UpstreamStatus)
			}
			if (c.credits == nil) != (e.CreditsRemaining == nil) || (c.credits != nil && *c.credits != *e.CreditsRemaining) {
				t.Errorf("expected credits %v, got %v", deref(c.credits), deref(e.CreditsRemaining))
			}
			if strings.Contains(err.Error(), "secret-key-42") {
				t.Errorf("expected the key kept out of the error, got %q", err.Error())
			}
		})
	}
}

func TestCompressTimesOutAsRetryable(t *testing.T) {
	srv := slowStub(t)
	c := New(srv.URL, WithTimeouts(100*time.Millisecond, 0))
	_, err := c.Compress(context.Background(), "secret-key-42", "", png(100), "a.png")
	e := connector.AsError(err)
	if e.Code != connector.EUPSTREAM || !e.Retryable || e.Message != "the compression API did not answer within 100ms" {
		t.Errorf("expected a retryable %s timeout, got %v", connector.EUPSTREAM, err)
	}
	if strings.Contains(err.Error(), "secret-key-42") {
		t.Errorf("expected the key kept out of the error, got %q", err.Error())
	}
}

func TestCompressReportsAnUnreachableAPIAsRetryable(t *testing.T) {
	srv := stub(t, 200, "", okAnswer, nil)
	srv.Close()
	_, err := New(srv.URL).Compress(context.Background(), "k", "", png(100), "a.png")
	e := connector.AsError(err)
	if e.Code != connector.EUPSTREAM || !e.Retryable || e.Message != "could not reach the compression API" {
		t.Errorf("expected a retryable %s, got %v", connector.EUPSTREAM, err)
	}
}

func TestCompressSendsTheUserAgent(t *testing.T) {
	var ua string
	srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		ua = r.UserAgent()
		w.Write([]byte(okAnswer))
	})
	if _, err := New(srv.URL, WithUserAgent("imgflow-test/2")).Compress(context.Background(), "k", "", png(10), "a.png"); err != nil {
		t.Fatal(err)
	}
	if ua != "imgflow-test/2" {
		t.Errorf("expected user agent imgflow-test/2, got %q", ua)
	}
}

func ptr(n int64) *int64 { return &n }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCompressKeepsTheStatusOfAnAnswerCutOff: the upstream charged when it
// sent 200; if the body then breaks off, the error must still say 200 so
// that the worker does not compress (and charge) again.
func TestCompressKeepsTheStatusOfAnAnswerCutOff(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"success":true,"job_id":"x","compressed_data":"iVBOR`))
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	_, err := New(srv.URL).Compress(context.Background(), "k", "", png(100), "a.png")
	e := connector.AsError(err)
	if e.Code != connector.EUPSTREAM || e.UpstreamStatus != http.StatusOK {
		t.Errorf("expected %s with upstream_status 200, got %v (status %d)", connector.EUPSTREAM, err, e.UpstreamStatus)
	}
}

// The worker streams uploads from the blob store into the call. A read
// failure mid-image must reach the API as a cut-off body, never as a
// complete form it could compress and charge for.
func TestCompressCutsTheBodyOffWhenTheImageFailsToRead(t *testing.T) {
	formComplete := make(chan bool, 1)
	srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		err := r.ParseMultipartForm(1 << 20)
		formComplete <- err == nil
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okAnswer)
	})
	lost := errors.New("storage lost")
	image := io.MultiReader(io.LimitReader(png(1<<20), 256<<10), iotest.ErrReader(lost))
	_, err := New(srv.URL).Compress(context.Background(), "k", "", image, "a.png")
	if err == nil || connector.AsError(err).UpstreamStatus == 200 {
		t.Fatalf("expected the call to fail without an answer, got %v", err)
	}
	select {
	case complete := <-formComplete:
		if complete {
			t.Error("the API parsed a complete form from a body whose image failed to read")
		}
	case <-time.After(5 * time.Second):
		// The server never finished reading: it had no form either.
	}
}

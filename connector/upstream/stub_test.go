package upstream

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// received is what a stub saw of a /compress request.
type received struct {
	apiKey, filename, partType string
	size                       int64
}

// stub answers every request with status and body (and Content-Type
// application/json unless contentType says otherwise), recording /compress
// forms into got when it is not nil.
func stub(t *testing.T, status int, contentType, body string, got *received) *httptest.Server {
	t.Helper()
	if contentType == "" {
		contentType = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got != nil {
			readForm(t, r, got)
		} else {
			io.Copy(io.Discard, r.Body)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readForm reads a multipart request as a stream, the way a server should.
func readForm(t *testing.T, r *http.Request, got *received) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Errorf("stub: bad Content-Type %q", r.Header.Get("Content-Type"))
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			return
		}
		switch p.FormName() {
		case "api_key":
			b, _ := io.ReadAll(p)
			got.apiKey = string(b)
		case "file":
			got.filename = p.FileName()
			got.partType = p.Header.Get("Content-Type")
			got.size, _ = io.Copy(io.Discard, p)
		}
	}
}

func png(n int) io.Reader {
	b := make([]byte, n)
	copy(b, pngHead)
	return strings.NewReader(string(b))
}

package upstream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// sizeless hides a reader's Size, as a stream of unknown length would.
type sizeless struct{ io.Reader }

// lyingSize says it holds more bytes than it does.
type lyingSize struct {
	io.Reader
	size int64
}

func (l lyingSize) Size() int64 { return l.size }

func TestCompressSendsAContentLengthWhenTheImageTellsItsSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		image   io.Reader
		size    int64
		chunked bool
	}{
		{"small, sent from memory", png(1000), 1000, false},
		{"large, streamed", png(3 * inMemoryBody), 3 * inMemoryBody, false},
		{"unknown size, chunked", sizeless{png(5000)}, 5000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got received
			var contentLength atomic.Int64
			var chunked atomic.Bool
			srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
				contentLength.Store(r.ContentLength)
				chunked.Store(len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked")
				readForm(t, r, &got)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, okAnswer)
			})
			if _, err := New(srv.URL).Compress(context.Background(), "k", "", tc.image, "a.png"); err != nil {
				t.Fatal(err)
			}
			if got.size != tc.size || got.apiKey != "k" || got.partType != "image/png" {
				t.Errorf("expected the key and a %d-byte PNG part, got %+v", tc.size, got)
			}
			if chunked.Load() != tc.chunked || (!tc.chunked && contentLength.Load() <= tc.size) {
				t.Errorf("expected chunked=%v with a Content-Length above %d, got chunked=%v, %d", tc.chunked, tc.size, chunked.Load(), contentLength.Load())
			}
		})
	}
}

func TestCompressOfAnImageShorterThanItsSizeSendsNoWholeForm(t *testing.T) {
	for _, size := range []int64{1000, 3 * inMemoryBody} {
		var forms atomic.Int32
		srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
			if _, err := r.MultipartReader(); err == nil && r.ParseMultipartForm(1<<20) == nil {
				forms.Add(1)
			}
			io.WriteString(w, okAnswer)
		})
		short := lyingSize{Reader: strings.NewReader(string(pngHead) + strings.Repeat("x", int(size/2))), size: size}
		if _, err := New(srv.URL).Compress(context.Background(), "k", "", short, "a.png"); err == nil {
			t.Errorf("%d bytes: expected an error for an image shorter than it said", size)
		}
		if forms.Load() != 0 {
			t.Errorf("%d bytes: the API got a whole form from an image cut short", size)
		}
	}
}

func TestCompressOfAnImageLongerThanItsSizeSendsNoWholeForm(t *testing.T) {
	for _, size := range []int64{1000, 3 * inMemoryBody} {
		var forms atomic.Int32
		srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.ParseMultipartForm(1<<20) == nil {
				forms.Add(1)
			}
			io.WriteString(w, okAnswer)
		})
		long := lyingSize{Reader: strings.NewReader(string(pngHead) + strings.Repeat("x", int(size*2))), size: size}
		if _, err := New(srv.URL).Compress(context.Background(), "k", "", long, "a.png"); err == nil {
			t.Errorf("%d bytes: expected an error for an image longer than it said", size)
		}
		if forms.Load() != 0 {
			t.Errorf("%d bytes: the API got a whole form of the image's first bytes", size)
		}
	}
}

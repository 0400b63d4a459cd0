package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// BenchmarkCompress10MiB sends a 10 MiB image to a stub that discards the
// body. B/op stays far below 10 MiB: the multipart body is streamed from
// the reader through a pipe, never assembled in memory. (The stub's own
// reads are in the figure too; client and stub share the process.)
func BenchmarkCompress10MiB(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"success":true,"job_id":"x","status":"completed","compressed_data":"iVBORw0KGgo=",`+
			`"original_size":10485760,"compressed_size":8,"compression_ratio":100,"credits_remaining":1}`)
	}))
	defer srv.Close()
	image := make([]byte, 10<<20)
	copy(image, pngHead)
	c := New(srv.URL)
	ctx := context.Background()

	b.SetBytes(int64(len(image)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compress(ctx, "k", "", bytes.NewReader(image), "big.png"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompressAnswer10MiB is the other way: a tiny image, and an
// answer whose compressed_data is 10 MiB (13.3 MiB of base64), with and
// without Content-Length. B/op should stay near 10 MiB either way: the
// field is decoded as it streams, into chunks that never grow by copying.
func BenchmarkCompressAnswer10MiB(b *testing.B) {
	result := make([]byte, 10<<20)
	copy(result, pngHead)
	answer := []byte(`{"success":true,"job_id":"x","status":"completed","compressed_data":"` +
		base64.StdEncoding.EncodeToString(result) +
		`","original_size":20971520,"compressed_size":10485760,"compression_ratio":50,"credits_remaining":1}`)
	for _, withLength := range []bool{true, false} {
		name := "chunked"
		if withLength {
			name = "content-length"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
				}
				w.Write(answer)
			}))
			defer srv.Close()
			c := New(srv.URL)
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Compress(context.Background(), "k", "", bytes.NewReader(pngHead), "a.png")
				if err != nil || res.Data.Size() != int64(len(result)) {
					b.Fatalf("expected %d bytes, got %v", len(result), err)
				}
			}
		})
	}
}

package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
		if _, err := c.Compress(ctx, "k", bytes.NewReader(image), "big.png"); err != nil {
			b.Fatal(err)
		}
	}
}

package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

// BenchmarkFetch10MiB fetches a 10 MiB image from a loopback host that
// sends Content-Length, and one that does not (chunked). B/op should stay
// near 10 MiB either way: the image is read into chunks (internal/chunkbuf)
// that end at the length when it is known and never grow by copying when
// it is not. (The host's writes share the process and the figure.)
func BenchmarkFetch10MiB(b *testing.B) {
	image := make([]byte, connector.MaxImageSize)
	copy(image, pngHead)
	for _, withLength := range []bool{true, false} {
		name := "chunked"
		if withLength {
			name = "content-length"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(image)))
				}
				w.Write(image)
			}))
			defer srv.Close()
			f := New(Options{Allow: guard.Loopback()})
			b.SetBytes(int64(len(image)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.FetchImage(context.Background(), srv.URL+"/big.png"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/upstream"
)

// A stand-in for the compression API: any key but "empty" compresses.
func exampleAPI() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.FormValue("api_key") == "empty" {
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"Insufficient credits. Please purchase more credits to continue compression.","credits_remaining":0}`)
			return
		}
		io.WriteString(w, `{"success":true,"job_id":"0b6f4c1e-9d7a-4f0e-8a53-2f1c6d3e4b5a","status":"completed",`+
			`"message":"Image compressed successfully","compressed_data":"iVBORw0KGgo=",`+
			`"original_size":2048,"compressed_size":8,"compression_ratio":99.61,"credits_remaining":499}`)
	}))
}

func ExampleClient_Compress() {
	api := exampleAPI()
	defer api.Close()
	client := upstream.New(api.URL + "/api")

	image := strings.NewReader("\x89PNG\r\n\x1a\n...the rest of the file...")
	res, err := client.Compress(context.Background(), "your-api-key", "", image, "photo.png")
	if err != nil {
		fmt.Println("failed:", connector.ErrorMessage(err))
		return
	}
	fmt.Printf("%d -> %d bytes (%.2f%% smaller), %d credits left\n",
		res.OriginalSize, res.CompressedSize, res.CompressionRatio, *res.CreditsRemaining)

	_, err = client.Compress(context.Background(), "empty", "", strings.NewReader("\x89PNG\r\n\x1a\n"), "photo.png")
	var e *connector.Error
	if errors.As(err, &e) && e.Code == connector.ENOCREDITS {
		fmt.Printf("upstream %d: %s (credits: %d, retry: %v)\n", e.UpstreamStatus, e.Message, *e.CreditsRemaining, e.Retryable)
	}
	// Output:
	// 2048 -> 8 bytes (99.61% smaller), 499 credits left
	// upstream 429: Insufficient credits. Please purchase more credits to continue compression. (credits: 0, retry: false)
}

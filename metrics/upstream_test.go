package metrics_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/metrics"
)

// fakeCompressor answers every call with err.
type fakeCompressor struct{ err error }

func (f fakeCompressor) Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*connector.Compressed, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &connector.Compressed{}, nil
}

func (f fakeCompressor) Validate(ctx context.Context, apiKey string) (*connector.Account, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &connector.Account{Valid: true}, nil
}

func (f fakeCompressor) Health(ctx context.Context) error { return f.err }

func TestCompressorCountsUpstreamCallsByEndpointAndStatus(t *testing.T) {
	m := metrics.New(nil)
	ctx := context.Background()
	ok := m.Compressor(fakeCompressor{})
	noCredits := m.Compressor(fakeCompressor{err: &connector.Error{Code: connector.ENOCREDITS, UpstreamStatus: 429}})
	down := m.Compressor(fakeCompressor{err: &connector.Error{Code: connector.EUPSTREAM, Retryable: true, Err: errors.New("connection refused")}})

	ok.Compress(ctx, "k", "", strings.NewReader("img"), "a.png")
	ok.Compress(ctx, "k", "", strings.NewReader("img"), "a.png")
	noCredits.Compress(ctx, "k", "", strings.NewReader("img"), "a.png")
	ok.Validate(ctx, "k")
	noCredits.Validate(ctx, "k")
	down.Health(ctx)

	got := scrape(t, m)
	got.expect(t, "imgflow_upstream_requests_total", map[string]string{"endpoint": "compress", "status": "200"}, 2)
	got.expect(t, "imgflow_upstream_requests_total", map[string]string{"endpoint": "compress", "status": "429"}, 1)
	got.expect(t, "imgflow_upstream_requests_total", map[string]string{"endpoint": "validate", "status": "200"}, 1)
	got.expect(t, "imgflow_upstream_requests_total", map[string]string{"endpoint": "validate", "status": "429"}, 1)
	got.expect(t, "imgflow_upstream_requests_total", map[string]string{"endpoint": "health", "status": "error"}, 1)
	got.expect(t, "imgflow_upstream_request_duration_seconds", map[string]string{"endpoint": "compress"}, 3)
}

func TestCompressorPassesResultsAndErrorsThrough(t *testing.T) {
	m := metrics.New(nil)
	want := &connector.Error{Code: connector.EUNAUTHORIZED, UpstreamStatus: 401}
	_, err := m.Compressor(fakeCompressor{err: want}).Validate(context.Background(), "k")
	if err != want {
		t.Fatalf("Validate error = %v, want the wrapped compressor's %v unchanged", err, want)
	}
	acct, err := m.Compressor(fakeCompressor{}).Validate(context.Background(), "k")
	if err != nil || acct == nil || !acct.Valid {
		t.Fatalf("Validate = %+v, %v; want the wrapped compressor's valid account", acct, err)
	}
}

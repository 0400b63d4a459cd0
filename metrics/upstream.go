package metrics

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Compressor wraps c so that every call of the compression API is counted
// and timed: imgflow_upstream_requests_total{endpoint,status} and
// imgflow_upstream_request_duration_seconds{endpoint}. The status is 200 on
// success, the upstream's status carried by a *connector.Error, or "error"
// when the upstream did not answer (network, timeout, cancelled).
func (m *Metrics) Compressor(c connector.Compressor) connector.Compressor {
	return &observedCompressor{next: c, m: m}
}

type observedCompressor struct {
	next connector.Compressor
	m    *Metrics
}

func (o *observedCompressor) Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*connector.Compressed, error) {
	start := time.Now()
	res, err := o.next.Compress(ctx, apiKey, idempotencyKey, image, filename)
	o.m.observeUpstream("compress", err, time.Since(start))
	return res, err
}

func (o *observedCompressor) Validate(ctx context.Context, apiKey string) (*connector.Account, error) {
	start := time.Now()
	acct, err := o.next.Validate(ctx, apiKey)
	o.m.observeUpstream("validate", err, time.Since(start))
	return acct, err
}

func (o *observedCompressor) Health(ctx context.Context) error {
	start := time.Now()
	err := o.next.Health(ctx)
	o.m.observeUpstream("health", err, time.Since(start))
	return err
}

func (m *Metrics) observeUpstream(endpoint string, err error, d time.Duration) {
	m.upstreamCalls.WithLabelValues(endpoint, upstreamStatus(err)).Inc()
	m.upstreamDuration.WithLabelValues(endpoint).Observe(d.Seconds())
}

func upstreamStatus(err error) string {
	if err == nil {
		return "200"
	}
	var e *connector.Error
	if errors.As(err, &e) && e.UpstreamStatus > 0 {
		return strconv.Itoa(e.UpstreamStatus)
	}
	return "error"
}

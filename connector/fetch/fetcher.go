package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// maxRedirects is how many redirects a fetch follows; every hop is checked
// by the guard like the first.
const maxRedirects = 5

// Options configures a Fetcher. The zero value is a safe production setup.
type Options struct {
	// Allow names the non-public destinations image URLs may reach:
	// guard.Loopback() in dev, plus IMGFLOW_ALLOW_HOSTS. The zero value
	// allows public addresses only.
	Allow guard.Policy
	// Timeout bounds one whole fetch: connecting, redirects and reading the
	// body. Default 30s. Too low fails large images on slow hosts; too high
	// lets a slow host hold a worker that long.
	Timeout time.Duration
	// MaxBytes is the largest image accepted, checked against
	// Content-Length and again while reading. Default connector.MaxImageSize
	// (10 MiB), the compression API's own limit.
	MaxBytes int64
	// UserAgent is sent with every request. Default "imgflow".
	UserAgent string
	// Resolver resolves host names for the early URL check of each hop.
	// Default net.DefaultResolver; the dial check always uses the system's.
	Resolver guard.Resolver
	// FirstByte bounds the wait for the answer's headers (each hop).
	// Default 10s: a host that has not started answering by then is down
	// or stalling, and holds a worker that other keys' jobs need.
	FirstByte time.Duration
	// MinRate is the slowest body transfer accepted, in bytes per second,
	// averaged from RateGrace on. Default 32 KiB/s (a 10 MiB image in
	// about 5 minutes at worst, but a trickling host is cut within
	// seconds).
	MinRate int64
	// RateGrace is how long a body may start slowly before MinRate is
	// enforced. Default 3s.
	RateGrace time.Duration
}

// Fetcher implements connector.ImageFetcher. It is safe for concurrent use.
type Fetcher struct {
	opts   Options
	client *http.Client
}

var _ connector.ImageFetcher = (*Fetcher)(nil)

// New returns a Fetcher with opts, defaults filled in.
func New(opts Options) *Fetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = connector.MaxImageSize
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "imgflow"
	}
	if opts.FirstByte <= 0 {
		opts.FirstByte = 10 * time.Second
	}
	if opts.MinRate <= 0 {
		opts.MinRate = 32 << 10
	}
	if opts.RateGrace <= 0 {
		opts.RateGrace = 3 * time.Second
	}
	f := &Fetcher{opts: opts}
	f.client = &http.Client{
		Transport:     guard.NewTransport(opts.Allow),
		CheckRedirect: f.checkRedirect,
	}
	return f
}

// FetchImage downloads the image at rawURL. Errors are *connector.Error:
// EURLREFUSED (a hop points into a private network, or the URL is not
// http/https), EFETCH (network failure, timeout, non-2xx answer, too many
// redirects; Retryable when a later attempt may succeed), ETOOLARGE and
// EFORMAT (not PNG, JPEG, WebP or AVIF).
func (f *Fetcher) FetchImage(ctx context.Context, rawURL string) (*connector.Image, error) {
	if err := f.checkURL(ctx, rawURL); err != nil {
		return nil, guard.ForField(err, "image_url")
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	ctx, stall := context.WithCancelCause(ctx)
	defer stall(nil)
	firstByte := time.AfterFunc(f.opts.FirstByte, func() { stall(errNoFirstByte) })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, &connector.Error{Code: connector.EINVALID, Message: "image_url is not a valid URL", Err: err}
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "image/avif,image/webp,image/png,image/jpeg;q=0.9,*/*;q=0.1")

	resp, err := f.client.Do(req)
	firstByte.Stop()
	if err != nil {
		return nil, f.requestError(ctx, req.URL.Hostname(), err)
	}
	resp.Body = f.watchRate(resp.Body, stall)
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, statusError(resp.StatusCode)
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, f.tooLarge(resp.ContentLength)
	}
	digest := sha256.New()
	data, err := f.readBody(resp, digest)
	if err != nil {
		return nil, f.requestError(ctx, resp.Request.URL.Hostname(), err)
	}
	if data.Size() > f.opts.MaxBytes {
		return nil, f.tooLarge(-1)
	}
	mimeType := connector.SniffBytes(data)
	if mimeType == "" {
		return nil, connector.Errorf(connector.EFORMAT, "the file at image_url is not a PNG, JPEG, WebP or AVIF image")
	}
	return &connector.Image{Data: data, MIMEType: mimeType, Filename: filenameOf(resp),
		SHA256: hex.EncodeToString(digest.Sum(nil))}, nil
}

// readBody reads at most MaxBytes+1 bytes, so that one byte too many is
// seen without reading the rest, into chunks: without a Content-Length the
// image is never copied into a larger buffer, and with one the chunks add
// up to it exactly. The bytes are hashed into digest as they come (the
// dedupe index's key), not read again afterwards.
func (f *Fetcher) readBody(resp *http.Response, digest io.Writer) (*chunkbuf.Buffer, error) {
	buf := chunkbuf.New(min(resp.ContentLength, f.opts.MaxBytes))
	_, err := buf.ReadFrom(io.TeeReader(io.LimitReader(resp.Body, f.opts.MaxBytes+1), digest))
	return buf, err
}

// checkRedirect re-checks every hop's URL; the dial check guards it again.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return connector.Errorf(connector.EFETCH, "image_url redirected more than %d times", maxRedirects)
	}
	if err := f.checkURL(req.Context(), req.URL.String()); err != nil {
		return guard.ForField(err, "image_url redirect")
	}
	return nil
}

func (f *Fetcher) checkURL(ctx context.Context, rawURL string) error {
	return guard.CheckURL(ctx, rawURL, f.opts.Allow, f.opts.Resolver)
}

func (f *Fetcher) tooLarge(size int64) error {
	limit := fmt.Sprintf("%d bytes", f.opts.MaxBytes)
	if f.opts.MaxBytes%(1<<20) == 0 {
		limit = fmt.Sprintf("%d MiB", f.opts.MaxBytes>>20)
	}
	if size > 0 {
		return connector.Errorf(connector.ETOOLARGE, "the image at image_url is %d bytes, over the %s limit", size, limit)
	}
	return connector.Errorf(connector.ETOOLARGE, "the image at image_url is over the %s limit", limit)
}

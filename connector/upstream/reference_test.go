package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/upstream"
	ref "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
)

// These tests run the client against imgflow's reference compression API
// (fixtures/upstream) over real HTTP, so that both sides' independent
// readings of the contract have to agree.

// reference starts the reference API and returns a client of it and its
// ledger.
func reference(t *testing.T) (*upstream.Client, *ref.Ledger) {
	t.Helper()
	r := redistest.New(t)
	ledger := ref.NewLedger(r.Client, r.Prefix, time.Now)
	srv := httptest.NewServer(ref.NewServer(ref.Config{
		Ledger: ledger,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	return upstream.New(srv.URL + "/api"), ledger
}

func account(t *testing.T, l *ref.Ledger, paid int64) string {
	t.Helper()
	key, _, err := l.CreateAccount(context.Background(), paid)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// gradientPNG is a 64x64 PNG with many colours, which palette quantization
// makes smaller.
func gradientPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			img.Set(x, y, color.NRGBA{uint8(x * 4), uint8(y * 4), uint8((x + y) * 2), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReferenceCompressesAPNGAndCharges(t *testing.T) {
	client, ledger := reference(t)
	key := account(t, ledger, 0)
	in := gradientPNG(t)

	res, err := client.Compress(context.Background(), key, "", bytes.NewReader(in), "gradient.png")
	if err != nil {
		t.Fatalf("expected a compression, got %v", err)
	}
	if res.OriginalSize != int64(len(in)) || res.CompressedSize != res.Data.Size() || res.CompressedSize > res.OriginalSize {
		t.Errorf("expected original %d and compressed = len(data) <= original, got %d, %d, len %d",
			len(in), res.OriginalSize, res.CompressedSize, res.Data.Size())
	}
	if got := connector.SniffBytes(res.Data); got != "image/png" {
		t.Errorf("expected a PNG back, got %q", got)
	}
	if res.CreditsRemaining == nil || *res.CreditsRemaining != ref.FreeCreditsPerMonth-1 {
		t.Errorf("expected %d credits left, got %v", ref.FreeCreditsPerMonth-1, res.CreditsRemaining)
	}
	if res.UpstreamJobID == "" {
		t.Errorf("expected a job id")
	}

	acct, err := client.Validate(context.Background(), key)
	if err != nil || !acct.Valid || acct.CreditsRemaining != ref.FreeCreditsPerMonth-1 || acct.MaxImageSize != connector.MaxImageSize || acct.CanCompress != nil {
		t.Errorf("expected a valid account with %d credits, max %d, no can_compress; got %+v %v",
			ref.FreeCreditsPerMonth-1, connector.MaxImageSize, acct, err)
	}
	if err := client.Health(context.Background()); err != nil {
		t.Errorf("expected healthy, got %v", err)
	}
}

func TestReferenceRefusesAnUnknownKey(t *testing.T) {
	client, _ := reference(t)
	_, err := client.Compress(context.Background(), "not-a-key", "", bytes.NewReader(gradientPNG(t)), "a.png")
	expectCode(t, err, connector.EUNAUTHORIZED, "Invalid API key", 401)

	_, err = client.Validate(context.Background(), "not-a-key")
	expectCode(t, err, connector.EUNAUTHORIZED, "Invalid API key", 401)
}

func TestReferenceAnswers429WithZeroCredits(t *testing.T) {
	client, ledger := reference(t)
	key := account(t, ledger, 0)
	for range ref.FreeCreditsPerMonth {
		if _, err := ledger.Charge(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.Compress(context.Background(), key, "", bytes.NewReader(gradientPNG(t)), "a.png")
	e := expectCode(t, err, connector.ENOCREDITS,
		"Insufficient credits. Please purchase more credits to continue compression.", 429)
	if e != nil && (e.CreditsRemaining == nil || *e.CreditsRemaining != 0) {
		t.Errorf("expected credits_remaining 0, got %v", e.CreditsRemaining)
	}
}

func TestReferenceRefusesAGIFAsInvalidFileFormat(t *testing.T) {
	client, ledger := reference(t)
	key := account(t, ledger, 0)
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	_, err := client.Compress(context.Background(), key, "", bytes.NewReader(gif), "a.gif")
	expectCode(t, err, connector.EFORMAT, "Invalid file format", 400)

	acct, err := client.Validate(context.Background(), key)
	if err != nil || acct.CreditsRemaining != ref.FreeCreditsPerMonth {
		t.Errorf("expected no credit charged (%d left), got %+v %v", ref.FreeCreditsPerMonth, acct, err)
	}
}

func expectCode(t *testing.T, err error, code connector.ErrorCode, message string, status int) *connector.Error {
	t.Helper()
	var e *connector.Error
	if !errors.As(err, &e) {
		t.Fatalf("expected a *connector.Error, got %T %v", err, err)
	}
	if e.Code != code || e.Message != message || e.UpstreamStatus != status || e.Retryable {
		t.Errorf("expected %s %q status %d not retryable, got %s %q status %d retryable=%v",
			code, message, status, e.Code, e.Message, e.UpstreamStatus, e.Retryable)
	}
	return e
}

func TestReferenceRefusesAnImageOver10MiB(t *testing.T) {
	client, ledger := reference(t)
	key := account(t, ledger, 0)
	big := make([]byte, connector.MaxImageSize+1)
	copy(big, gradientPNG(t))
	_, err := client.Compress(context.Background(), key, "", bytes.NewReader(big), "big.png")
	expectCode(t, err, connector.ETOOLARGE,
		"Image size (10485761 bytes) exceeds maximum limit (10485760 bytes)", 413)
}

// The client sends the job's Idempotency-Key and reads the upstream's echo:
// a repeat is replayed free, and the same key with other bytes is final.
func TestIdempotencyKeyAgainstTheReferenceUpstream(t *testing.T) {
	c, ledger := reference(t)
	key := account(t, ledger, 0)
	ctx := context.Background()
	img := gradientPNG(t)

	first, err := c.Compress(ctx, key, "job-1", bytes.NewReader(img), "a.png")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Compress(ctx, key, "job-1", bytes.NewReader(img), "a.png")
	if err != nil {
		t.Fatal(err)
	}
	if !first.IdempotencyHonoured || first.Replayed || !again.IdempotencyHonoured || !again.Replayed {
		t.Errorf("honoured/replayed: first %v/%v, again %v/%v; want true/false, true/true",
			first.IdempotencyHonoured, first.Replayed, again.IdempotencyHonoured, again.Replayed)
	}
	if again.UpstreamJobID != first.UpstreamJobID || *again.CreditsRemaining != *first.CreditsRemaining {
		t.Errorf("replay: job %s credits %d, want the first's %s, %d", again.UpstreamJobID, *again.CreditsRemaining, first.UpstreamJobID, *first.CreditsRemaining)
	}
	if acct, _ := ledger.Lookup(ctx, key); acct.CreditsRemaining != ref.FreeCreditsPerMonth-1 {
		t.Errorf("balance %d, want one charge", acct.CreditsRemaining)
	}
	other := gradientPNG(t)
	other = append(other[:len(other):len(other)], 0) // trailing byte: same image, other bytes
	_, err = c.Compress(ctx, key, "job-1", bytes.NewReader(other), "a.png")
	var e *connector.Error
	if !errors.As(err, &e) || e.UpstreamStatus != 422 || e.Retryable {
		t.Fatalf("same key, other bytes: %v; want a final 422", err)
	}
	noKey, err := c.Compress(ctx, key, "", bytes.NewReader(img), "a.png")
	if err != nil || noKey.IdempotencyHonoured {
		t.Fatalf("no key: honoured %v, err %v", noKey != nil && noKey.IdempotencyHonoured, err)
	}
}

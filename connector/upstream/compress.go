package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/b64json"
	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// idempotencyHeader carries a call's Idempotency-Key, and its echo.
const idempotencyHeader = "Idempotency-Key"

// sniffLen is how many leading bytes are read ahead to name the file part's
// type; they are sent first, the rest streams behind them.
const sniffLen = 64

// compressAnswer is the 200 body of /compress. Pointers tell a missing
// field from a zero one.
type compressAnswer struct {
	Success          *bool            `json:"success"`
	JobID            string           `json:"job_id"`
	Status           string           `json:"status"`
	CompressedData   *chunkbuf.Buffer `json:"-"` // compressed_data, decoded as it streams
	OriginalSize     int64            `json:"original_size"`
	CompressedSize   int64            `json:"compressed_size"`
	CompressionRatio float64          `json:"compression_ratio"`
	CreditsRemaining *int64           `json:"credits_remaining"` // absent in the older listing
}

// Compress sends image to POST /compress as multipart/form-data (api_key,
// then the file part) and returns the compressed bytes. The body streams
// from image as the transport sends it, so the image is never held a second
// time; when image tells its size (Size() int64, as connector.Bytes and the
// worker's stored images do) the request has a Content-Length and a small
// image goes out in one write. filename may be ""; the part then gets a
// generic name.
//
// Errors are *connector.Error: 400 → EINVALID (EFORMAT for "Invalid file
// format"), 401 → EUNAUTHORIZED, 413 → ETOOLARGE, 429 → ENOCREDITS with
// CreditsRemaining; 422 (the Idempotency-Key extension: key reused with
// another file) → EUPSTREAM, final; 409 (a call with the key still running),
// 5xx, other statuses, non-JSON bodies, a 200 missing its
// data, network errors and timeouts → EUPSTREAM with Retryable set.
func (c *Client) Compress(ctx context.Context, apiKey, idempotencyKey string, image io.Reader, filename string) (*connector.Compressed, error) {
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(image, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: fmt.Errorf("reading the image: %w", err)}
	}
	head = head[:n]
	contentType := connector.SniffImageType(head)
	if contentType == "" {
		// Let the upstream judge it: its 400 is the answer the flow sees.
		contentType = "application/octet-stream"
	}
	if filename == "" {
		filename = "image" + connector.ExtensionOf(contentType)
	}

	ctx, cancel := context.WithTimeout(ctx, c.compressTimeout)
	defer cancel()
	body, contentType, err := newFormBody(apiKey, filename, contentType, io.MultiReader(bytes.NewReader(head), image), sizeOf(image))
	if err != nil {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	// If the answer came before the whole body went (a 413, say), the
	// transport may still be reading it: stopping it means image is never
	// read after Compress returns.
	defer body.stop()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/compress", body.reader())
	if err != nil {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	// One Compress is one call the API may charge: the transport must never
	// send it again on its own. It would, for a POST carrying
	// Idempotency-Key with a body it can rewind (an in-memory form), when a
	// reused connection closes without an answer; the worker's call record
	// would count one call where an API that ignores the key charged two.
	// A failure is returned instead, and the worker's next call is counted.
	req.GetBody = nil
	req.ContentLength = body.size
	if body.size < 0 {
		req.ContentLength = 0
		req.TransferEncoding = []string{"chunked"}
	}
	req.Header.Set("Content-Type", contentType)
	if idempotencyKey != "" {
		req.Header.Set(idempotencyHeader, idempotencyKey)
	}
	resp, err := c.send(req, c.compressTimeout)
	if body.lied() {
		// Whatever came back answered a form the API never got whole.
		if err == nil {
			resp.Body.Close()
		}
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: errImageLonger}
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, err := readAll(resp, maxCompressAnswer)
		if err != nil {
			e := networkError(ctx, err, c.compressTimeout)
			e.UpstreamStatus = resp.StatusCode
			return nil, e
		}
		return nil, compressError(resp, body)
	}
	c2, err := decodeCompressed(resp)
	if c2 != nil && idempotencyKey != "" && resp.Header.Get(idempotencyHeader) == idempotencyKey {
		c2.IdempotencyHonoured = true
		c2.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	}
	var domainErr *connector.Error
	if err != nil && !errors.As(err, &domainErr) {
		// Cut off mid-body: the status came and a 200 was charged, so it
		// keeps its status and the worker does not compress again.
		e := networkError(ctx, err, c.compressTimeout)
		e.UpstreamStatus = resp.StatusCode
		return nil, e
	}
	return c2, err
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")

// decodeCompressed reads a 200 answer. One that is not JSON or lacks the
// compressed data is an upstream fault, retryable.
//
// compressed_data is decoded from base64 while it streams in, into chunks
// that add up to the size Content-Length implies (see internal/chunkbuf):
// the answer's text is never held, and an answer without Content-Length
// costs no buffer grown by doubling. A read failure is returned as is (no
// *connector.Error) for the caller to wrap.
func decodeCompressed(resp *http.Response) (*connector.Compressed, error) {
	var a compressAnswer
	hint := 0
	if resp.ContentLength > 0 {
		hint = int(min(resp.ContentLength, maxCompressAnswer) / 4 * 3)
	}
	res, err := b64json.Decode(io.LimitReader(resp.Body, maxCompressAnswer), b64json.Options{
		Field: "compressed_data", MaxDecoded: maxCompressAnswer / 4 * 3, DecodedHint: hint, MaxOther: maxSmallAnswer,
	}, &a)
	var b64Err *b64json.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		a.CompressedData = res.Data
	case errors.As(err, &b64Err), errors.Is(err, b64json.ErrTooLarge), errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		e := unexpected(http.StatusOK, "compression API answered 200 with a body that is not the expected JSON")
		e.Err = err
		return nil, e
	default:
		return nil, err
	}
	if a.CompressedData.Size() == 0 {
		return nil, unexpected(http.StatusOK, "compression API answered 200 without compressed_data")
	}
	if a.Success != nil && !*a.Success {
		return nil, unexpected(http.StatusOK, "compression API answered 200 with success false")
	}
	return &connector.Compressed{
		UpstreamJobID:    a.JobID,
		Data:             a.CompressedData,
		OriginalSize:     a.OriginalSize,
		CompressedSize:   a.CompressedSize,
		CompressionRatio: a.CompressionRatio,
		CreditsRemaining: a.CreditsRemaining,
	}, nil
}

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// sniffLen is how many leading bytes are read ahead to name the file part's
// type; they are sent first, the rest streams behind them.
const sniffLen = 64

// compressAnswer is the 200 body of /compress. Pointers tell a missing
// field from a zero one.
type compressAnswer struct {
	Success          *bool   `json:"success"`
	JobID            string  `json:"job_id"`
	Status           string  `json:"status"`
	CompressedData   []byte  `json:"compressed_data"` // base64 in JSON
	OriginalSize     int64   `json:"original_size"`
	CompressedSize   int64   `json:"compressed_size"`
	CompressionRatio float64 `json:"compression_ratio"`
	CreditsRemaining *int64  `json:"credits_remaining"` // absent in the older listing
}

// Compress sends image to POST /compress as multipart/form-data (api_key,
// then the file part) and returns the compressed bytes. The body is
// streamed through a pipe as it is read from image, so the image is never
// held a second time. filename may be ""; the part then gets a generic name.
//
// Errors are *connector.Error: 400 → EINVALID (EFORMAT for "Invalid file
// format"), 401 → EUNAUTHORIZED, 413 → ETOOLARGE, 429 → ENOCREDITS with
// CreditsRemaining; 5xx, other statuses, non-JSON bodies, a 200 missing its
// data, network errors and timeouts → EUPSTREAM with Retryable set.
func (c *Client) Compress(ctx context.Context, apiKey string, image io.Reader, filename string) (*connector.Compressed, error) {
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
	pr, pw := io.Pipe()
	form := multipart.NewWriter(pw)
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(writeForm(form, apiKey, filename, contentType, io.MultiReader(bytes.NewReader(head), image)))
	}()
	// If the answer came before the whole body went (a 413, say), closing
	// the pipe stops the writer; waiting for it means image is never read
	// after Compress returns.
	defer func() {
		pr.Close()
		<-written
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/compress", pr)
	if err != nil {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	resp, body, err := c.do(req, maxCompressAnswer, c.compressTimeout)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, compressError(resp, body)
	}
	return decodeCompressed(body)
}

// writeForm writes the multipart body: the api_key field, then the file
// part with its sniffed Content-Type.
func writeForm(form *multipart.Writer, apiKey, filename, contentType string, image io.Reader) error {
	if err := form.WriteField("api_key", apiKey); err != nil {
		return err
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", contentType)
	part, err := form.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, image); err != nil {
		return err
	}
	return form.Close()
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")

// decodeCompressed reads a 200 answer. One that is not JSON or lacks the
// compressed data is an upstream fault, retryable.
func decodeCompressed(body []byte) (*connector.Compressed, error) {
	var a compressAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		e := unexpected(http.StatusOK, "compression API answered 200 with a body that is not the expected JSON")
		e.Err = err
		return nil, e
	}
	if len(a.CompressedData) == 0 {
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

package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/b64json"
	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// Limits of POST /v1/batches.
const (
	// maxBatchJSONBody bounds a JSON batch: 1,000 URL items fit many times
	// over; base64 items share it (about 24 MiB of images).
	maxBatchJSONBody = 32 << 20
	// maxBatchFiles and maxBatchMultipartBody bound a multipart batch: up
	// to 100 file parts of at most 10 MiB each, 64 MiB in all.
	maxBatchFiles         = 100
	maxBatchMultipartBody = 64 << 20
)

// batchRequest is a create-batch request: its items, each checked as a
// create-job request, and the batch's own fields.
type batchRequest struct {
	APIKey      string
	CallbackURL string `validate:"omitempty,http_url,max=4096"`
	Metadata    json.RawMessage
	// Dedupe is the items' default ("dedupe" of the batch); an item's own
	// "dedupe" wins.
	Dedupe *bool
	Items  []*jobRequest
}

// batchJSON is the JSON form of a batch request.
type batchJSON struct {
	APIKey      string          `json:"api_key"`
	Items       []batchItemJSON `json:"items"`
	CallbackURL string          `json:"callback_url"`
	Metadata    json.RawMessage `json:"metadata"`
	Dedupe      *bool           `json:"dedupe"`
}

type batchItemJSON struct {
	ImageURL    string          `json:"image_url"`
	ImageBase64 *string         `json:"image_base64"`
	Filename    string          `json:"filename"`
	Metadata    json.RawMessage `json:"metadata"`
	Dedupe      *bool           `json:"dedupe"`
}

// readBatchRequest binds and checks a create-batch request; an item that
// is malformed refuses the whole request, naming its index. An inline
// image whose bytes are no known format is not malformed: its job is made
// and fails with unsupported_format, as an image URL that serves no image
// does.
func (s *Server) readBatchRequest(c echo.Context) (*batchRequest, error) {
	req := c.Request()
	mediaType, params, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	var in *batchRequest
	var err error
	switch {
	case isJSON(req.Header.Get(echo.HeaderContentType)):
		in, err = readJSONBatch(c)
	case mediaType == "multipart/form-data" && params["boundary"] != "":
		in, err = readMultipartBatch(c, params["boundary"])
	default:
		return nil, connector.Errorf(connector.EMEDIATYPE,
			"Content-Type must be application/json or multipart/form-data (got %q)", req.Header.Get(echo.HeaderContentType))
	}
	if err != nil {
		return nil, err
	}
	switch n := len(in.Items); {
	case n == 0:
		return nil, fieldError("items", "send at least one item")
	case n > connector.MaxBatchItems:
		return nil, fieldError("items", fmt.Sprintf("at most %d items per batch (got %d)", connector.MaxBatchItems, n))
	}
	if err := s.check(in); err != nil {
		return nil, err
	}
	if in.Metadata, err = checkMetadata("metadata", in.Metadata); err != nil {
		return nil, err
	}
	for i, item := range in.Items {
		if err := s.checkItem(item); err != nil {
			return nil, itemError(i, err)
		}
	}
	return in, nil
}

// checkItem checks one item as a job request, but for the bytes' format.
func (s *Server) checkItem(item *jobRequest) error {
	if err := s.check(item); err != nil {
		return err
	}
	if err := item.resolveSource(); err != nil && !isCode(err, connector.EFORMAT) {
		return err
	}
	var err error
	item.Metadata, err = checkMetadata("metadata", item.Metadata)
	return err
}

// itemError names item i in err's fields and message.
func itemError(i int, err error) error {
	var e *connector.Error
	if !errors.As(err, &e) {
		return err
	}
	prefix := "items[" + strconv.Itoa(i) + "]"
	out := *e
	out.Message = prefix + ": " + e.Message
	out.Details = make([]connector.FieldError, len(e.Details))
	for j, d := range e.Details {
		out.Details[j] = connector.FieldError{Field: prefix + "." + d.Field, Message: d.Message}
	}
	if len(out.Details) == 0 {
		out.Details = []connector.FieldError{{Field: prefix, Message: e.Message}}
	}
	return &out
}

func readJSONBatch(c echo.Context) (*batchRequest, error) {
	if err := limitBody(c, maxBatchJSONBody); err != nil {
		return nil, batchTooLarge(err)
	}
	var body batchJSON
	if err := decodeJSON(c.Request().Body, &body); err != nil {
		return nil, batchTooLarge(err)
	}
	in := &batchRequest{APIKey: body.APIKey, CallbackURL: strings.TrimSpace(body.CallbackURL), Metadata: body.Metadata,
		Dedupe: body.Dedupe, Items: make([]*jobRequest, len(body.Items))}
	for i, it := range body.Items {
		item := &jobRequest{ImageURL: strings.TrimSpace(it.ImageURL), Filename: it.Filename, Metadata: it.Metadata, Dedupe: it.Dedupe}
		if it.ImageBase64 != nil {
			res, err := b64json.DecodeText(strings.NewReader(*it.ImageBase64), base64Options(int64(len(*it.ImageBase64))))
			if err != nil {
				return nil, itemError(i, multipartError(err))
			}
			item.base64 = res
		}
		body.Items[i].ImageBase64 = nil // the decoded bytes are kept; the text can go
		in.Items[i] = item
	}
	return in, nil
}

// readMultipartBatch reads up to maxBatchFiles file parts (an item each,
// in order, named by the part's filename) and the batch's text fields.
func readMultipartBatch(c echo.Context, boundary string) (*batchRequest, error) {
	if err := limitBody(c, maxBatchMultipartBody); err != nil {
		return nil, batchTooLarge(err)
	}
	mr := multipart.NewReader(c.Request().Body, boundary)
	in := &batchRequest{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, batchTooLarge(multipartError(err))
		}
		name := part.FormName()
		if part.FileName() == "" && (name == "api_key" || name == "callback_url" || name == "metadata" || name == "dedupe") {
			val, err := io.ReadAll(io.LimitReader(part, maxTextPart+1))
			if err != nil {
				return nil, batchTooLarge(multipartError(err))
			}
			if len(val) > maxTextPart {
				return nil, fieldError(name, fmt.Sprintf("must be at most %d bytes", maxTextPart))
			}
			switch name {
			case "api_key":
				in.APIKey = strings.TrimSpace(string(val))
			case "callback_url":
				in.CallbackURL = strings.TrimSpace(string(val))
			case "metadata":
				in.Metadata = val
			case "dedupe":
				d := &jobRequest{dedupeText: strings.TrimSpace(string(val))}
				if err := d.parseDedupe(); err != nil {
					return nil, err
				}
				in.Dedupe = d.Dedupe
			}
			continue
		}
		i := len(in.Items)
		if i == maxBatchFiles {
			return nil, fieldError("file", fmt.Sprintf("at most %d files per multipart batch; send more as JSON items or in further batches", maxBatchFiles))
		}
		buf := chunkbuf.New(64 << 10)
		n, err := buf.ReadFrom(io.LimitReader(part, connector.MaxImageSize+1))
		if err != nil {
			return nil, batchTooLarge(multipartError(err))
		}
		if n > connector.MaxImageSize {
			return nil, itemError(i, errTooLarge)
		}
		if n == 0 {
			return nil, itemError(i, fieldError("file", "the uploaded file is empty"))
		}
		in.Items = append(in.Items, &jobRequest{Filename: part.FileName(), image: buf, kind: connector.InputUpload})
	}
	return in, nil
}

// batchTooLarge says which limit a batch body went over.
func batchTooLarge(err error) error {
	if isCode(err, connector.ETOOLARGE) {
		return connector.Errorf(connector.ETOOLARGE,
			"batch body too large: JSON bodies may have %d MiB, multipart bodies %d MiB (each file at most %d MiB); split the images into several batches",
			maxBatchJSONBody>>20, maxBatchMultipartBody>>20, connector.MaxImageSize>>20)
	}
	return err
}

// fingerprint identifies a batch request's content for Idempotency-Key
// checks, as jobRequest.fingerprint does for one job.
func (in *batchRequest) fingerprint() string {
	h := sha256.New()
	for _, part := range []string{"batch", in.CallbackURL, string(in.Metadata)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	if in.Dedupe != nil { // absent adds nothing: keys recorded before dedupe still match
		fmt.Fprintf(h, "dedupe=%t", *in.Dedupe)
		h.Write([]byte{0})
	}
	for _, item := range in.Items {
		h.Write([]byte(item.fingerprint()))
	}
	return hex.EncodeToString(h.Sum(nil))
}

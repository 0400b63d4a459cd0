package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"slices"
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
	// Dedupe is the batch's dedupe field: each item without its own
	// takes it.
	Dedupe *bool
	Items  []*jobRequest
	// Defaults is the batch's transform, for items that send none of
	// their own (transforminput.go).
	Defaults jobRequest
}

// batchFields are the fields of a JSON batch; itemFields those of an item,
// which are a create-job request's but for the key and the callback (the
// batch's own).
var batchFields = append([]string{"api_key", "items", "callback_url", "metadata", "dedupe"}, transformFieldNames()...)

// multipartBatchFields are the text parts of a multipart batch; every
// other part is a file.
var multipartBatchFields = append([]string{"api_key", "callback_url", "metadata", "dedupe"}, transformFieldNames()...)

func itemFields() []string {
	var out []string
	for _, f := range jobFields() {
		if f != "api_key" && f != "callback_url" && f != "variants" {
			out = append(out, f)
		}
	}
	return out
}

// readBatchRequest binds and checks a create-batch request; an item that
// is malformed refuses the whole request, naming its index. An inline
// image whose bytes are no known format is not malformed: its job is made
// and fails with unsupported_format, as an image URL that serves no image
// does.
func (s *Server) readBatchRequest(c echo.Context) (*batchRequest, error) {
	in, err := readBody(c, bodyReaders[*batchRequest]{json: readJSONBatch, multipart: readMultipartBatch})
	if err != nil {
		return nil, err
	}
	return in, s.checkBatchRequest(in)
}

// checkBatchRequest checks a decoded create-batch request, whatever it
// came from: its count of items, its fields, and each item as a job.
func (s *Server) checkBatchRequest(in *batchRequest) error {
	var err error
	switch n := len(in.Items); {
	case n == 0:
		return fieldError("items", "send at least one item")
	case n > connector.MaxBatchItems:
		return fieldError("items", fmt.Sprintf("at most %d items per batch (got %d)", connector.MaxBatchItems, n))
	}
	if err := s.check(in); err != nil {
		return err
	}
	if in.Metadata, err = checkMetadata("metadata", in.Metadata); err != nil {
		return err
	}
	defaults, err := in.transformDefaults()
	if err != nil {
		return err
	}
	for i, item := range in.Items {
		if err := s.checkItem(item); err != nil {
			return itemError(i, err)
		}
		// An item that needs libvips where it is absent is made all the
		// same: its job fails alone with transform_unavailable, before any
		// call (nothing charged), and the batch's other items run.
		if err := item.resolveTransform(defaults); err != nil && !isCode(err, connector.ETRANSFORMOFF) {
			return itemError(i, err)
		}
	}
	return nil
}

// checkItem checks one item as a job request, but for the bytes' format.
func (s *Server) checkItem(item *jobRequest) error {
	if err := s.check(item); err != nil {
		return err
	}
	if err := item.resolveSource(); err != nil && !isCode(err, connector.EFORMAT) {
		return err
	}
	if item.Variants != nil {
		return fieldError("variants", "a batch's item is one image; send a set of variants to POST /v1/jobs")
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

// readJSONBatch streams a JSON batch: each item is decoded as it arrives
// (its image from base64 as a single job's is, Power Automate file
// content included) and its text dropped, so a batch costs about its
// images' size, not several times its body's.
func readJSONBatch(c echo.Context) (*batchRequest, error) {
	if err := limitBody(c, maxBatchJSONBody); err != nil {
		return nil, batchTooLarge(err)
	}
	return decodeJSONBatch(c.Request().Body)
}

// decodeJSONBatch decodes a create-batch request's JSON from body.
func decodeJSONBatch(body io.Reader) (*batchRequest, error) {
	dec := json.NewDecoder(body)
	in := &batchRequest{}
	if err := expectDelim(dec, '{', "request body must be a JSON object"); err != nil {
		return nil, batchTooLarge(err)
	}
	seen := map[string]bool{}
	defaults := map[string]json.RawMessage{} // the items' default transform
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, batchTooLarge(bodyError(err))
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fieldError(key, "must appear only once")
		}
		seen[key] = true
		switch key {
		case "items":
			err = readJSONItems(dec, in)
		case "api_key":
			err = decodeField(dec, key, &in.APIKey)
		case "callback_url":
			err = decodeField(dec, key, &in.CallbackURL)
			in.CallbackURL = strings.TrimSpace(in.CallbackURL)
		case "metadata":
			err = decodeField(dec, key, &in.Metadata)
		case "dedupe":
			err = decodeField(dec, key, &in.Dedupe)
		default:
			if !transformTextFields[key] {
				err = unknownField(key, batchFields)
				break
			}
			var raw json.RawMessage
			if err = decodeField(dec, key, &raw); err == nil {
				defaults[key] = raw
			}
		}
		if err != nil {
			return nil, batchTooLarge(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, batchTooLarge(bodyError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, batchTooLarge(bodyError(err))
		}
		return nil, errTrailing
	}
	if err := in.Defaults.setTransformJSON(defaults); err != nil {
		return nil, err
	}
	for _, item := range in.Items {
		if item.Dedupe == nil {
			item.Dedupe = in.Dedupe
		}
	}
	return in, nil
}

// readJSONItems reads the items array, one item at a time.
func readJSONItems(dec *json.Decoder, in *batchRequest) error {
	if err := expectDelim(dec, '[', "items: must be an array of items"); err != nil {
		return fieldErrorOf("items", err)
	}
	for dec.More() {
		i := len(in.Items)
		if i == connector.MaxBatchItems {
			return fieldError("items", fmt.Sprintf("at most %d items per batch", connector.MaxBatchItems))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bodyError(err)
		}
		item, err := readJSONItem(raw)
		if err != nil {
			return itemError(i, err)
		}
		in.Items = append(in.Items, item)
	}
	_, err := dec.Token() // ]
	return bodyError(err)
}

// readJSONItem decodes one item as a create-job request's JSON is decoded.
func readJSONItem(raw []byte) (*jobRequest, error) {
	item := &jobRequest{digest: sha256.New()}
	opt := base64Options(int64(len(raw)))
	opt.Digest = item.digest
	res, err := b64json.Decode(bytes.NewReader(raw), opt, item)
	if name, ok := unknownFieldName(err); ok {
		return nil, unknownField(name, itemFields())
	}
	if err != nil {
		return nil, bodyError(err)
	}
	switch {
	case item.APIKey != "":
		return nil, fieldError("api_key", "belongs in the X-API-Key header, not in an item")
	case item.CallbackURL != "":
		return nil, fieldError("callback_url", "is the batch's: set callback_url beside items, not in an item")
	}
	item.base64 = res
	item.ImageURL = strings.TrimSpace(item.ImageURL)
	return item, nil
}

// expectDelim reads the next token, which must be delim.
func expectDelim(dec *json.Decoder, delim json.Delim, msg string) error {
	tok, err := dec.Token()
	if err != nil {
		return bodyError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != delim {
		return connector.Errorf(connector.EINVALID, "%s", msg)
	}
	return nil
}

// decodeField decodes the value of field into v.
func decodeField(dec *json.Decoder, field string, v any) error {
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldError(field, "must be a "+jsonKind(typeErr.Type.Kind().String()))
	}
	return bodyError(err)
}

// fieldErrorOf names field in a refusal that names none.
func fieldErrorOf(field string, err error) error {
	var e *connector.Error
	if errors.As(err, &e) && len(e.Details) == 0 && e.Code == connector.EINVALID {
		return fieldError(field, strings.TrimPrefix(e.Message, field+": "))
	}
	return err
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
		textField := slices.Contains(multipartBatchFields, name)
		file, ok := fileOrField(part, !textField)
		if !ok {
			return nil, unknownField(name, multipartBatchFields)
		}
		if part.FileName() == "" && textField {
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
				b, err := strconv.ParseBool(strings.TrimSpace(string(val)))
				if err != nil {
					return nil, fieldError("dedupe", "must be true or false")
				}
				in.Dedupe = &b
			default:
				in.Defaults.setTransformText(name, string(val))
			}
			continue
		}
		i := len(in.Items)
		if i == maxBatchFiles {
			return nil, fieldError("file", fmt.Sprintf("at most %d files per multipart batch; send more as JSON items or in further batches", maxBatchFiles))
		}
		buf := chunkbuf.New(64 << 10)
		n, err := buf.ReadFrom(io.LimitReader(file, connector.MaxImageSize+1))
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
	for _, item := range in.Items {
		item.Dedupe = in.Dedupe
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

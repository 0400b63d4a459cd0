package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// jobRequest is a create-job request, from JSON or multipart.
type jobRequest struct {
	APIKey      string          `json:"api_key"`
	ImageURL    string          `json:"image_url" validate:"omitempty,http_url,max=4096"`
	ImageBase64 string          `json:"image_base64"`
	Filename    string          `json:"filename" validate:"omitempty,max=255"`
	CallbackURL string          `json:"callback_url" validate:"omitempty,http_url,max=4096"`
	Metadata    json.RawMessage `json:"metadata"`

	kind  connector.InputKind
	image []byte // decoded base64 or the uploaded file
}

const (
	// maxJSONBody fits a 10 MiB image in base64 plus the other fields.
	maxJSONBody = (connector.MaxImageSize+2)/3*4 + 64<<10
	// maxMultipartBody fits a 10 MiB file plus the text parts.
	maxMultipartBody = connector.MaxImageSize + 256<<10
	maxMetadata      = 16 << 10
	maxTextPart      = 64 << 10
)

var errTooLarge = connector.Errorf(connector.ETOOLARGE,
	"image exceeds the maximum size of %d bytes", connector.MaxImageSize)

// readJobRequest binds a create-job request: JSON with image_url or
// image_base64, or multipart with one file part. Sizes are checked before
// reading when Content-Length tells, and while reading always.
func (s *Server) readJobRequest(c echo.Context) (*jobRequest, error) {
	req := c.Request()
	mediaType, params, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	var in *jobRequest
	var err error
	switch {
	case isJSON(req.Header.Get(echo.HeaderContentType)):
		in, err = readJSONJob(c, maxJSONBody)
	case mediaType == "multipart/form-data" && params["boundary"] != "":
		in, err = readMultipartJob(c, params["boundary"])
	default:
		return nil, connector.Errorf(connector.EMEDIATYPE,
			"Content-Type must be application/json or multipart/form-data (got %q)", req.Header.Get(echo.HeaderContentType))
	}
	if err != nil {
		return nil, err
	}
	if err := s.check(in); err != nil {
		return nil, err
	}
	if err := in.resolveSource(); err != nil {
		return nil, err
	}
	if len(in.Metadata) > 0 && !bytes.Equal(in.Metadata, []byte("null")) {
		if len(in.Metadata) > maxMetadata {
			return nil, fieldError("metadata", fmt.Sprintf("must be at most %d bytes of JSON", maxMetadata))
		}
		var object map[string]json.RawMessage
		if err := json.Unmarshal(in.Metadata, &object); err != nil || object == nil {
			return nil, fieldError("metadata", "must be a JSON object")
		}
	} else {
		in.Metadata = nil
	}
	return in, nil
}

// isJSON reports whether a Content-Type header names JSON.
func isJSON(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

func fieldError(field, msg string) *connector.Error {
	return &connector.Error{Code: connector.EINVALID, Message: field + ": " + msg,
		Details: []connector.FieldError{{Field: field, Message: msg}}}
}

// limitBody refuses a declared length over max at once and caps reading.
func limitBody(c echo.Context, max int64) error {
	req := c.Request()
	if req.ContentLength > max {
		return errTooLarge
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, max)
	return nil
}

func readJSONJob(c echo.Context, max int64) (*jobRequest, error) {
	if err := limitBody(c, max); err != nil {
		return nil, err
	}
	var in jobRequest
	if err := decodeJSON(c.Request().Body, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// decodeJSON decodes one JSON object and explains what is wrong with it.
func decodeJSON(body io.Reader, v any) error {
	err := json.NewDecoder(body).Decode(v)
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &maxErr):
		return errTooLarge
	case errors.Is(err, io.EOF):
		return connector.Errorf(connector.EINVALID, "request body is empty: send a JSON object")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return connector.Errorf(connector.EINVALID, "request body is not valid JSON: %v", err)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return connector.Errorf(connector.EINVALID, "request body must be a JSON object")
		}
		return fieldError(typeErr.Field, "must be a "+jsonKind(typeErr.Type.Kind().String()))
	}
	return connector.Errorf(connector.EINVALID, "request body could not be read: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "slice":
		return "JSON object"
	}
	return goKind
}

// textFields are the multipart parts read as text; any other part is the file.
var textFields = map[string]bool{"api_key": true, "image_url": true, "image_base64": true, "filename": true, "callback_url": true, "metadata": true}

// readMultipartJob streams the parts: text fields by name, and exactly one
// file part under any field name, read with the image cap.
func readMultipartJob(c echo.Context, boundary string) (*jobRequest, error) {
	if err := limitBody(c, maxMultipartBody+maxJSONBody); err != nil { // image_base64 may come as a text part
		return nil, err
	}
	mr := multipart.NewReader(c.Request().Body, boundary)
	in := &jobRequest{}
	sawFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, multipartError(err)
		}
		name := part.FormName()
		if textFields[name] && part.FileName() == "" {
			limit := int64(maxTextPart)
			if name == "image_base64" {
				limit = maxJSONBody
			}
			val, err := io.ReadAll(io.LimitReader(part, limit+1))
			if err != nil {
				return nil, multipartError(err)
			}
			if int64(len(val)) > limit {
				if name == "image_base64" {
					return nil, errTooLarge
				}
				return nil, fieldError(name, fmt.Sprintf("must be at most %d bytes", limit))
			}
			in.setText(name, string(val))
			continue
		}
		if sawFile {
			return nil, connector.Errorf(connector.EINVALID, "send exactly one file part (a second one is %q)", name)
		}
		sawFile = true
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(part, connector.MaxImageSize+1))
		if err != nil {
			return nil, multipartError(err)
		}
		if n > connector.MaxImageSize {
			return nil, errTooLarge
		}
		if n == 0 {
			return nil, fieldError(name, "the uploaded file is empty")
		}
		in.image, in.kind = buf.Bytes(), connector.InputUpload
		if in.Filename == "" {
			in.Filename = part.FileName()
		}
	}
	return in, nil
}

func multipartError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return errTooLarge
	}
	return connector.Errorf(connector.EINVALID, "multipart body could not be read: %v", err)
}

func (in *jobRequest) setText(name, val string) {
	switch name {
	case "api_key":
		in.APIKey = strings.TrimSpace(val)
	case "image_url":
		in.ImageURL = strings.TrimSpace(val)
	case "image_base64":
		in.ImageBase64 = val
	case "filename":
		in.Filename = val
	case "callback_url":
		in.CallbackURL = strings.TrimSpace(val)
	case "metadata":
		in.Metadata = json.RawMessage(val)
	}
}

// resolveSource checks that exactly one image source was sent, and decodes
// base64 and checks the bytes of inline images.
func (in *jobRequest) resolveSource() error {
	sources := []string{}
	if in.ImageURL != "" {
		sources = append(sources, "image_url")
	}
	if in.ImageBase64 != "" {
		sources = append(sources, "image_base64")
	}
	if in.kind == connector.InputUpload {
		sources = append(sources, "file")
	}
	switch len(sources) {
	case 0:
		return &connector.Error{Code: connector.EINVALID,
			Message: "send an image: one of image_url, image_base64 or a file upload is required",
			Details: []connector.FieldError{{Field: "image_url", Message: "is required when image_base64 and file are absent"},
				{Field: "image_base64", Message: "is required when image_url and file are absent"}}}
	case 1:
	default:
		e := &connector.Error{Code: connector.EINVALID, Message: "send exactly one image source, not " + strings.Join(sources, " and ")}
		for _, f := range sources {
			e.Details = append(e.Details, connector.FieldError{Field: f, Message: "only one image source is allowed"})
		}
		return e
	}
	switch {
	case in.ImageURL != "":
		in.kind = connector.InputURL
		return nil
	case in.ImageBase64 != "":
		data, err := decodeBase64Image(in.ImageBase64)
		if err != nil {
			return err
		}
		in.ImageBase64, in.image, in.kind = "", data, connector.InputBase64
	}
	if connector.SniffImageType(in.image) == "" {
		field := "file"
		if in.kind == connector.InputBase64 {
			field = "image_base64"
		}
		return &connector.Error{Code: connector.EFORMAT,
			Message: "the image is not a PNG, JPEG, WebP or AVIF file",
			Details: []connector.FieldError{{Field: field, Message: "must be a PNG, JPEG, WebP or AVIF image"}}}
	}
	return nil
}

// decodeBase64Image accepts standard or URL-safe base64, with or without
// padding and line breaks, optionally as a data: URI.
func decodeBase64Image(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		meta, payload, ok := strings.Cut(s, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, fieldError("image_base64", "a data: URI must be base64-encoded (data:image/png;base64,...)")
		}
		s = payload
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	if base64.StdEncoding.DecodedLen(len(s)) > connector.MaxImageSize+3 {
		return nil, errTooLarge
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		return nil, fieldError("image_base64", "is not valid base64: "+err.Error())
	}
	if len(data) == 0 {
		return nil, fieldError("image_base64", "is empty")
	}
	if len(data) > connector.MaxImageSize {
		return nil, errTooLarge
	}
	return data, nil
}

// fingerprint identifies a request's content for Idempotency-Key checks:
// the same image and options give the same value whatever the encoding
// (multipart boundaries differ between retries).
func (in *jobRequest) fingerprint() string {
	h := sha256.New()
	for _, part := range []string{string(in.kind), in.ImageURL, in.Filename, in.CallbackURL, string(in.Metadata)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(in.image)
	return hex.EncodeToString(h.Sum(nil))
}

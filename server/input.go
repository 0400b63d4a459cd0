package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/b64json"
	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// jobRequest is a create-job request, from JSON or multipart.
type jobRequest struct {
	APIKey      string          `json:"api_key"`
	ImageURL    string          `json:"image_url" validate:"omitempty,http_url,max=4096"`
	Filename    string          `json:"filename" validate:"omitempty,max=255,filename"`
	CallbackURL string          `json:"callback_url" validate:"omitempty,http_url,max=4096"`
	Metadata    json.RawMessage `json:"metadata"`
	// Dedupe false makes the job compress even an image its key had
	// compressed already (dedupe.go); absent or true lets it reuse one.
	Dedupe *bool `json:"dedupe"`
	// transformJSON holds the job's resize, convert and preserve
	// (transforminput.go); transform is them put together and checked.
	transformJSON
	transformText map[string]string
	transform     connector.Transform
	// Variants makes the request a responsive set (variantinput.go);
	// variantsText is them as a multipart part's JSON text.
	Variants     []connector.Variant `json:"variants"`
	variantsText string

	kind connector.InputKind
	// image is the decoded base64 or the uploaded file, in chunks: read
	// without a Content-Length it is never copied into a larger buffer.
	image *chunkbuf.Buffer
	// base64 is the decoded image_base64 field, decoded while it was read.
	base64 *b64json.Result
	// digest hashes the image's bytes while they are decoded or read
	// (the dedupe index's key): SHA-256, see imageSHA256.
	digest hash.Hash
	// dedupeText is a multipart "dedupe" part, checked by check.
	dedupeText string
}

const (
	// maxJSONBody fits a 10 MiB image in base64 plus the other fields.
	maxJSONBody = (connector.MaxImageSize+2)/3*4 + 64<<10
	// maxMultipartBody fits a 10 MiB file plus the text parts.
	maxMultipartBody = connector.MaxImageSize + 256<<10
	maxMetadata      = 16 << 10
	maxTextPart      = 64 << 10
	// maxOtherFields bounds a JSON body's fields other than image_base64.
	maxOtherFields = 128 << 10
)

var errTooLarge = connector.Errorf(connector.ETOOLARGE,
	"image exceeds the maximum size of %d bytes", connector.MaxImageSize)

// readJobRequest binds a create-job request: JSON with image_url or
// image_base64 (a string, or Power Automate file content), multipart with
// one file part, or the image itself as the body. Sizes are checked before
// reading when Content-Length tells, and while reading always.
func (s *Server) readJobRequest(c echo.Context) (*jobRequest, error) {
	mediaType, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if !isRawImage(mediaType) { // a raw body's fields are in the query (rawinput.go)
		if err := checkQuery(c, "wait", "dry_run", "include"); err != nil {
			return nil, err
		}
	}
	in, err := readBody(c, bodyReaders[*jobRequest]{
		json: func(c echo.Context) (*jobRequest, error) { return readJSONJob(c, maxJSONBody, s.bodyKeyCheck(c)) },
		multipart: func(c echo.Context, boundary string) (*jobRequest, error) {
			return readMultipartJob(c, boundary, s.bodyKeyCheck(c))
		},
		raw: readRawJob,
	})
	if err != nil {
		return nil, err
	}
	return in, s.checkJobRequest(in)
}

// checkJobRequest checks a decoded create-job request, whatever it came
// from: its fields, its one image source, dedupe, transform and metadata.
func (s *Server) checkJobRequest(in *jobRequest) error {
	if err := s.check(in); err != nil {
		return err
	}
	if err := in.resolveSource(); err != nil {
		return err
	}
	if err := in.parseDedupe(); err != nil {
		return err
	}
	if err := in.resolveTransform(connector.Transform{}); err != nil {
		return err
	}
	if err := in.resolveVariants(); err != nil {
		return err
	}
	var err error
	in.Metadata, err = checkMetadata("metadata", in.Metadata)
	return err
}

// checkMetadata refuses metadata that is not a JSON object of at most
// maxMetadata bytes; null or absent is nil.
func checkMetadata(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if len(raw) > maxMetadata {
		return nil, fieldError(field, fmt.Sprintf("must be at most %d bytes of JSON", maxMetadata))
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal(raw, &object); err != nil || object == nil {
		return nil, fieldError(field, "must be a JSON object")
	}
	return raw, nil
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

// bodyKeyCheck checks an api_key read from the body of a request without
// a key in its headers, as soon as it is read: a bad key is refused before
// the rest of the body (the image, when it follows) is read. nil when the
// headers carry the key (checked already).
func (s *Server) bodyKeyCheck(c echo.Context) func(key string) error {
	if headerKey(c) != "" {
		return nil
	}
	return func(key string) error {
		if key = strings.TrimSpace(key); key == "" {
			return nil
		}
		return s.authenticate(c, key)
	}
}

func readJSONJob(c echo.Context, max int64, checkKey func(string) error) (*jobRequest, error) {
	if err := limitBody(c, max); err != nil {
		return nil, err
	}
	return decodeJSONJob(c.Request().Body, c.Request().ContentLength, checkKey)
}

// decodeJSONJob decodes a create-job request's JSON from body, whose
// length is contentLength (-1 when unknown).
func decodeJSONJob(body io.Reader, contentLength int64, checkKey func(string) error) (*jobRequest, error) {
	in := jobRequest{digest: sha256.New()}
	opt := base64Options(contentLength)
	opt.Digest = in.digest
	if checkKey != nil {
		opt.OnField = func(name string, raw []byte) error {
			var key string
			if name != "api_key" || json.Unmarshal(raw, &key) != nil {
				return nil // a wrong type is refused with the rest
			}
			return checkKey(key)
		}
	}
	res, err := b64json.Decode(body, opt, &in)
	if name, ok := unknownFieldName(err); ok {
		return nil, unknownField(name, jobFields())
	}
	if err != nil {
		return nil, bodyError(err)
	}
	in.base64 = res
	return &in, nil
}

// base64Options decode image_base64 into one buffer sized from the body's
// declared length, never past the image cap.
func base64Options(contentLength int64) b64json.Options {
	return b64json.Options{
		Field:       "image_base64",
		MaxDecoded:  connector.MaxImageSize,
		DecodedHint: int(min(contentLength, maxJSONBody) / 4 * 3),
		MaxOther:    maxOtherFields,
		Lenient:     true,
		Strict:      true,
	}
}

// jobFields are the fields of a create-job request, for the suggestion
// given with an unknown one.
func jobFields() []string {
	return append(jsonFields(&jobRequest{}), "image_base64")
}

// decodeJSON decodes one small JSON object, and nothing after it, and
// explains what is wrong with it.
func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if name, ok := unknownFieldName(err); ok {
		return unknownField(name, jsonFields(v))
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = terr
			if err == nil {
				err = errTrailing
			}
			var maxErr *http.MaxBytesError
			if !errors.As(err, &maxErr) {
				err = errTrailing
			}
		}
	}
	return bodyError(err)
}

var errTrailing = connector.Errorf(connector.EINVALID, "request body has data after the JSON object: send exactly one object")

// bodyError explains why a JSON body was refused.
func bodyError(err error) error {
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var b64Err *b64json.Error
	var domainErr *connector.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &domainErr):
		return err
	case errors.As(err, &maxErr), errors.Is(err, b64json.ErrTooLarge):
		return errTooLarge
	case errors.As(err, &b64Err):
		if b64Err.Field != "" {
			return fieldError(b64Err.Field, b64Err.Msg)
		}
		return connector.Errorf(connector.EINVALID, "%s", b64Err.Msg)
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
var textFields = map[string]bool{"api_key": true, "image_url": true, "filename": true, "callback_url": true, "metadata": true, "dedupe": true,
	"variants": true}

// readMultipartJob streams the parts: text fields by name, and exactly one
// file part under any field name, read with the image cap.
func readMultipartJob(c echo.Context, boundary string, checkKey func(string) error) (*jobRequest, error) {
	if err := limitBody(c, maxMultipartBody+maxJSONBody); err != nil { // image_base64 may come as a text part
		return nil, err
	}
	mr := multipart.NewReader(c.Request().Body, boundary)
	in := &jobRequest{digest: sha256.New()}
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
		if name == "image_base64" && part.FileName() == "" {
			opt := base64Options(c.Request().ContentLength)
			opt.Digest = in.digest
			res, err := b64json.DecodeText(part, opt)
			if err != nil {
				return nil, multipartError(err)
			}
			in.base64 = res
			continue
		}
		text := textFields[name] || transformTextFields[name]
		file, ok := fileOrField(part, !text)
		if !ok {
			return nil, unknownField(name, jobFields())
		}
		if text && part.FileName() == "" {
			val, err := io.ReadAll(io.LimitReader(part, maxTextPart+1))
			if err != nil {
				return nil, multipartError(err)
			}
			if int64(len(val)) > maxTextPart {
				return nil, fieldError(name, fmt.Sprintf("must be at most %d bytes", maxTextPart))
			}
			in.setText(name, string(val))
			if name == "api_key" && checkKey != nil {
				if err := checkKey(in.APIKey); err != nil {
					return nil, err
				}
			}
			continue
		}
		if sawFile {
			return nil, connector.Errorf(connector.EINVALID, "send exactly one file part (a second one is %q)", name)
		}
		sawFile = true
		// Chunks, sized to end near the length the body declares.
		buf := chunkbuf.New(min(c.Request().ContentLength, connector.MaxImageSize))
		n, err := buf.ReadFrom(io.TeeReader(io.LimitReader(file, connector.MaxImageSize+1), in.digest))
		if err != nil {
			return nil, multipartError(err)
		}
		if n > connector.MaxImageSize {
			return nil, errTooLarge
		}
		if n == 0 {
			return nil, fieldError(name, "the uploaded file is empty")
		}
		in.image, in.kind = buf, connector.InputUpload
		if in.Filename == "" {
			in.Filename = part.FileName()
		}
	}
	return in, nil
}

// fileOrField tells a file part from a misspelt text field. A part with a
// name the form does not know (unknown) is a file when it says so (named
// file, a file name, or a type other than text) or when its bytes begin as an image
// does (curl -F 'file=<photo.png' sends neither); otherwise it is a field
// the request does not know, refused rather than taken for the file (ok
// false). file reads the part from its start.
func fileOrField(part *multipart.Part, unknown bool) (file io.Reader, ok bool) {
	mediaType, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
	if !unknown || part.FormName() == "file" || part.FileName() != "" || (mediaType != "" && mediaType != "text/plain") {
		return part, true
	}
	br := bufio.NewReaderSize(part, 512)
	head, _ := br.Peek(64)
	return br, connector.SniffImageType(head) != ""
}

func multipartError(err error) error {
	var maxErr *http.MaxBytesError
	var b64Err *b64json.Error
	if errors.As(err, &maxErr) || errors.Is(err, b64json.ErrTooLarge) || errors.As(err, &b64Err) {
		return bodyError(err)
	}
	return connector.Errorf(connector.EINVALID, "multipart body could not be read: %v", err)
}

func (in *jobRequest) setText(name, val string) {
	switch name {
	case "api_key":
		in.APIKey = strings.TrimSpace(val)
	case "image_url":
		in.ImageURL = strings.TrimSpace(val)
	case "filename":
		in.Filename = val
	case "callback_url":
		in.CallbackURL = strings.TrimSpace(val)
	case "metadata":
		in.Metadata = json.RawMessage(val)
	case "dedupe":
		in.dedupeText = strings.TrimSpace(val)
	case "variants":
		in.variantsText = strings.TrimSpace(val)
	default:
		if transformTextFields[name] {
			in.setTransformText(name, val)
		}
	}
}

// resolveSource checks that exactly one image source was sent, and decodes
// base64 and checks the bytes of inline images.
func (in *jobRequest) resolveSource() error {
	sources := []string{}
	if in.ImageURL != "" {
		sources = append(sources, "image_url")
	}
	if in.base64 != nil && (in.base64.Data.Size() > 0 || in.base64.MediaType != "") {
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
	case in.kind != connector.InputUpload:
		if in.base64.Data.Size() == 0 {
			return fieldError("image_base64", "is empty")
		}
		in.image, in.kind = in.base64.Data, connector.InputBase64
	}
	sniffed := connector.SniffBytes(in.image)
	if sniffed == "" {
		field := "file"
		if in.kind == connector.InputBase64 {
			field = "image_base64"
		}
		return &connector.Error{Code: connector.EFORMAT,
			Message: "the image is not a PNG, JPEG, WebP or AVIF file",
			Details: []connector.FieldError{{Field: field, Message: "must be a PNG, JPEG, WebP or AVIF image"}}}
	}
	if in.kind == connector.InputBase64 {
		return checkDeclaredType(in.base64.MediaType, sniffed)
	}
	return nil
}

// checkDeclaredType refuses a data: URI whose declared type is not what
// the bytes are: a flow that labels a GIF image/png has a bug worth
// hearing about. No type, or application/octet-stream, declares nothing.
func checkDeclaredType(declared, sniffed string) error {
	switch declared {
	case "", "application/octet-stream", sniffed:
		return nil
	case "image/jpg", "image/pjpeg":
		if sniffed == "image/jpeg" {
			return nil
		}
	}
	return fieldError("image_base64", fmt.Sprintf("the data: URI declares %s but the bytes are %s", declared, sniffed))
}

// imageSHA256 is the hex SHA-256 of a base64 or uploaded image, hashed
// while it streamed in ("" for a URL: the worker hashes what it fetches).
func (in *jobRequest) imageSHA256() string {
	if in.image == nil {
		return ""
	}
	if in.digest == nil { // not read by readJobRequest: hash the chunks
		in.digest = sha256.New()
		in.image.WriteTo(in.digest)
	}
	return hex.EncodeToString(in.digest.Sum(nil))
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
	if in.Dedupe != nil { // absent adds nothing: keys recorded before dedupe still match
		fmt.Fprintf(h, "dedupe=%t", *in.Dedupe)
		h.Write([]byte{0})
	}
	if t := in.transform.Canonical(); t != "" { // absent adds nothing, as dedupe
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	if len(in.Variants) > 0 { // absent adds nothing, as dedupe
		h.Write([]byte(connector.VariantsFingerprint(in.Variants)))
		h.Write([]byte{0})
	}
	in.image.WriteTo(h) // chunk by chunk; nothing when there is no image
	return hex.EncodeToString(h.Sum(nil))
}

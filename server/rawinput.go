package server

import (
	"io"
	"mime"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// rawImageTypes are the Content-Types of a create-job request whose body is
// the image itself, as Power Automate's HTTP actions, curl --data-binary and
// "send the file as the body" steps send it.
var rawImageTypes = map[string]bool{
	"application/octet-stream": true,
	"image/png":                true,
	"image/jpeg":               true,
	"image/jpg":                true,
	"image/webp":               true,
	"image/avif":               true,
	"image/heic":               true, // converted first (transforminput.go)
	"image/heif":               true,
}

// rawTextFields are the job's fields a raw-body upload takes from the
// query string (variants as a multipart part takes them, or in the short
// form of connector.ParseVariantSpec: ?variants=sm=320w,lg=1600w:webp);
// rawQueryFields add the route's own parameters. Any other name is
// refused, as an unknown JSON field is.
var (
	rawTextFields  = []string{"filename", "callback_url", "metadata", "dedupe", "variants"}
	rawQueryFields = append([]string{"wait", "dry_run", "include"}, rawTextFields...)
)

// isRawImage reports whether a Content-Type names an image body.
func isRawImage(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return rawImageTypes[mediaType]
}

// readRawJob reads a body that is the image: the other fields come from
// the query string under the names of the multipart text parts (never the
// key, which does not belong in a URL), and the file name also from a
// Content-Disposition header. The declared type must be what the bytes are.
func readRawJob(c echo.Context) (*jobRequest, error) {
	req := c.Request()
	if err := limitBody(c, connector.MaxImageSize); err != nil {
		return nil, err
	}
	in := &jobRequest{}
	q := req.URL.Query()
	if q.Has("api_key") {
		return nil, fieldError("api_key", "must not be in the URL: send the key as the X-API-Key header")
	}
	for name := range q {
		if !slices.Contains(rawQueryFields, name) && !transformTextFields[name] {
			return nil, unknownField(name, append(slices.Clone(rawQueryFields), transformFieldNames()...))
		}
	}
	for _, name := range rawTextFields {
		if v := q.Get(name); v != "" {
			in.setText(name, v)
		}
	}
	if q.Has("variants") && in.variantsText == "" {
		return nil, fieldError("variants", "is empty: list the sizes, such as "+connector.VariantSpecExample)
	}
	for name := range transformTextFields {
		if q.Has(name) {
			in.setTransformText(name, q.Get(name))
		}
	}
	if in.Filename == "" {
		if _, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentDisposition)); err == nil {
			in.Filename = params["filename"]
		}
	}
	buf := chunkbuf.New(min(req.ContentLength, connector.MaxImageSize))
	n, err := buf.ReadFrom(io.LimitReader(req.Body, connector.MaxImageSize+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if n > connector.MaxImageSize {
		return nil, errTooLarge
	}
	if n == 0 {
		return nil, fieldError("file", "the request body is empty: send the image as the body")
	}
	in.image, in.kind = buf, connector.InputUpload
	declared, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if sniffed := connector.SniffBytes(buf); sniffed != "" && strings.HasPrefix(declared, "image/") {
		if err := checkDeclaredType(declared, sniffed); err != nil {
			return nil, fieldError("file", "the Content-Type declares "+declared+" but the bytes are "+sniffed)
		}
	}
	return in, nil
}

package mcp

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/draw"
	_ "image/gif" // decoders a preview may need
	"image/jpeg"
	_ "image/png"
	"io"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// previewSide is the longest side of a preview, in pixels: enough to see
// the image, small enough (a few kB) for a model's context.
const previewSide = 256

// previewDecodePixels caps the pixels decoded whole for a preview when
// libvips is not there to shrink on load (4 bytes each: 48 MiB at most);
// larger images get no preview, read from their header before decoding.
const previewDecodePixels = 12_000_000

// preview is a small JPEG of a completed job's compressed image, or a line
// saying why there is none (the file expired, or an image too large or of
// a type this server cannot decode).
func (t *toolSet) preview(ctx context.Context, key string, job *connector.Job) sdk.Content {
	blob, err := t.backend.OpenJobFile(ctx, key, job.ID)
	if err != nil {
		return &sdk.TextContent{Text: "No preview: " + err.Error()}
	}
	data, err := io.ReadAll(io.LimitReader(blob, connector.MaxImageSize+1))
	blob.Close()
	if err != nil {
		return &sdk.TextContent{Text: "No preview: the file could not be read; open the file link."}
	}
	thumb, err := thumbnail(data)
	if err != nil {
		return &sdk.TextContent{Text: "No preview: " + err.Error() + "; open the file link."}
	}
	return &sdk.ImageContent{Data: thumb, MIMEType: "image/jpeg"}
}

// thumbnail scales an image down to fit previewSide and encodes it as JPEG
// (on white, for images with transparency): with libvips, shrinking on
// load (the pixels never decoded whole); without it, in Go for an image
// whose header shows at most previewDecodePixels.
func thumbnail(data []byte) ([]byte, error) {
	if imaging.Available() == nil {
		t := connector.Transform{Resize: &connector.Resize{Method: connector.ResizeFit, Width: previewSide, Height: previewSide},
			Convert: &connector.Convert{Type: "image/jpeg"}}
		res, err := imaging.Apply(data, t, 1<<20)
		if err != nil {
			return nil, errors.New("this image cannot be previewed here")
		}
		return res.Data, nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("this type cannot be previewed here")
	}
	if int64(cfg.Width)*int64(cfg.Height) > previewDecodePixels {
		return nil, errors.New("the image is too large to preview here")
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("this image cannot be previewed here")
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > previewSide || h > previewSide {
		if w >= h {
			w, h = previewSide, max(1, h*previewSide/w)
		} else {
			w, h = max(1, w*previewSide/h), previewSide
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
	xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, b, draw.Over, nil)
	var out bytes.Buffer
	if err := jpeg.Encode(&out, dst, &jpeg.Options{Quality: 75}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

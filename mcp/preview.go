package mcp

import (
	"bytes"
	"context"
	"image"
	"image/draw"
	_ "image/gif" // decoders a preview may need
	"image/jpeg"
	_ "image/png"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector"
)

// previewSide is the longest side of a preview, in pixels: enough to see
// the image, small enough (a few kB) for a model's context.
const previewSide = 256

// preview is a small JPEG of a completed job's compressed image, or a line
// saying why there is none (the file expired, or a type this server cannot
// decode, such as AVIF).
func (t *toolSet) preview(ctx context.Context, key string, job *connector.Job) sdk.Content {
	data, err := t.backend.JobFile(ctx, key, job.ID)
	if err != nil {
		return &sdk.TextContent{Text: "No preview: " + err.Error()}
	}
	thumb, err := thumbnail(data)
	if err != nil {
		return &sdk.TextContent{Text: "No preview: " + job.Result.MIMEType + " cannot be previewed here; open the file link."}
	}
	return &sdk.ImageContent{Data: thumb, MIMEType: "image/jpeg"}
}

// thumbnail scales an image down to fit previewSide and encodes it as JPEG
// (on white, for images with transparency).
func thumbnail(data []byte) ([]byte, error) {
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
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

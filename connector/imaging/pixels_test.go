package imaging

import (
	"bytes"
	"image/jpeg"
	"testing"
)

// cornerRGB decodes a JPEG and returns its top-left pixel, 0–255.
func cornerRGB(t *testing.T, data []byte) (r, g, b uint32) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the result is no JPEG: %v", err)
	}
	r, g, b, _ = img.At(img.Bounds().Min.X, img.Bounds().Min.Y).RGBA()
	return r >> 8, g >> 8, b >> 8
}

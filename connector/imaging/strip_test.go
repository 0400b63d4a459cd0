package imaging

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	_ "image/jpeg"

	"github.com/imgflow/imgflow/fixtures/images"
)

// TestStripDropsMetadataButKeepsPixelsAndOrientation: a phone JPEG loses
// its GPS, copyright and dates but keeps its pixels byte for byte and its
// orientation (so it shows the same way up); a PNG loses its text chunks.
func TestStripDropsMetadataButKeepsPixelsAndOrientation(t *testing.T) {
	orig := images.Read(t, "photo-exif.jpg")
	out, removed := Strip(orig)
	if !removed || len(out) >= len(orig) {
		t.Fatalf("removed %v, %d bytes from %d", removed, len(out), len(orig))
	}
	if bytes.Contains(out, []byte("Ada Photographer")) || bytes.Contains(out, []byte("2024:06:01")) {
		t.Error("the stripped JPEG still carries its copyright or dates")
	}
	sos := []byte{0xFF, 0xDA}
	if !bytes.Equal(orig[bytes.Index(orig, sos):], out[bytes.Index(out, sos):]) {
		t.Error("the stripped JPEG's scan data differs from the original's")
	}
	if _, _, err := image.Decode(bytes.NewReader(out)); err != nil {
		t.Fatalf("the stripped JPEG does not decode: %v", err)
	}
	if i := bytes.Index(out, []byte("Exif\x00\x00")); i < 0 || tiffOrientation(out[i+6:]) != 6 {
		t.Error("the stripped JPEG lost its orientation 6")
	}

	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 4, 4)))
	p := buf.Bytes()
	withText := append(append(append([]byte(nil), p[:33]...), pngChunk("tEXt", []byte("Author\x00Ada Photographer"))...), p[33:]...)
	out, removed = Strip(withText)
	if !removed || !bytes.Equal(out, p) {
		t.Errorf("the PNG with a tEXt chunk strips to %d bytes (removed %v); want the %d bytes without it", len(out), removed, len(p))
	}
	if _, removed := Strip(p); removed {
		t.Error("a PNG without metadata reports something removed")
	}
}

package imaging

import (
	"encoding/binary"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
)

// orientedPNG is photo.png (320×240 stored) with an EXIF Orientation of 6:
// shown 240×320.
func orientedPNG(t testing.TB) []byte {
	t.Helper()
	exif := writeTIFF(binary.LittleEndian, []tiffEntry{{tag: 0x0112, typ: 3, count: 1, value: []byte{6, 0}}}, nil, nil)
	out, err := WithMetadata(images.Read(t, "photo.png"), "image/png", exif)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOrientationIsReadFromAnyType(t *testing.T) {
	needVips(t)
	if got := Orientation(orientedPNG(t)); got != 6 {
		t.Fatalf("Orientation of a PNG tagged 6 = %d", got)
	}
	if got := Orientation(images.Read(t, "photo.png")); got != 1 {
		t.Fatalf("Orientation of an untagged PNG = %d, want 1", got)
	}
	info, err := Probe(orientedPNG(t))
	if err != nil || info.Width != 240 || info.Height != 320 {
		t.Fatalf("Probe = %+v (%v), want 240×320 as shown", info, err)
	}
}

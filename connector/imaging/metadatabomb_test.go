package imaging

import (
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
)

func exifBomb(entries, valueSize int) []byte { return images.EXIFBomb(entries, valueSize) }

// withEXIF is fixture name carrying exif as its own metadata block.
func withEXIF(t testing.TB, name, mimeType string, exif []byte) []byte {
	t.Helper()
	if mimeType == "image/jpeg" && len(exif) > MaxKeptMetadata {
		t.Fatalf("a JPEG segment holds %d bytes, not %d", MaxKeptMetadata, len(exif))
	}
	out, err := WithMetadata(images.Read(t, name), mimeType, exif)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The audit's EXIF bombs, built here: a JPEG of ~64 KB whose entries
// share one value (the 91 KB dry-run bomb), a PNG whose 400 Copyright
// entries each reference the same 512 KiB (200 MB expanded), a PNG with
// 65,535 entries.
func jpegEXIFBomb(t testing.TB) []byte {
	return withEXIF(t, "photo.jpg", "image/jpeg", exifBomb(4000, 16000))
}

func pngEXIFBomb(t testing.TB) []byte {
	return withEXIF(t, "photo.png", "image/png", exifBomb(400, 512<<10))
}

func pngManyEntries(t testing.TB) []byte {
	return withEXIF(t, "photo.png", "image/png", exifBomb(65535, 8))
}

func fixture(t testing.TB, name string) []byte { return images.Read(t, name) }

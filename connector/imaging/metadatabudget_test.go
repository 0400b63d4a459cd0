package imaging

import (
	"testing"

	"github.com/imgflow/imgflow/connector"
)

func TestEXIFBombsAreRefusedAsMetadataTooLarge(t *testing.T) {
	needVips(t)
	for name, img := range map[string][]byte{
		"JPEG, 4,000 entries sharing 16 KB": jpegEXIFBomb(t),
		"PNG, 400 entries sharing 512 KiB":  pngEXIFBomb(t),
		"PNG, 65,535 entries":               pngManyEntries(t),
		"PNG, one 2 MiB EXIF block":         withEXIF(t, "photo.png", "image/png", exifBomb(1, 2<<20)),
		"PNG, one 100 KB copyright to keep": withEXIF(t, "photo.png", "image/png", exifBomb(1, 100_000)),
	} {
		for _, out := range []string{"image/jpeg", "image/png", "image/webp"} {
			meta, err := PreservedMetadata(img, out, []string{connector.PreserveCopyright})
			if code := connector.ErrorCodeOf(err); code != connector.EMETADATA {
				t.Errorf("%s to %s: %d bytes kept, error %v; want %s", name, out, len(meta), err, connector.EMETADATA)
			}
		}
	}
}

func TestMetadataWithinTheBoundsIsKept(t *testing.T) {
	needVips(t)
	img := withEXIF(t, "photo.png", "image/png", exifBomb(1, 60_000))
	meta, err := PreservedMetadata(img, "image/jpeg", []string{connector.PreserveCopyright})
	if err != nil || len(meta) < 60_000 {
		t.Fatalf("a 60 KB copyright: %d bytes kept, %v", len(meta), err)
	}
	if _, err := WithMetadata(fixture(t, "photo.jpg"), "image/jpeg", meta); err != nil {
		t.Fatalf("what is kept does not fit a JPEG: %v", err)
	}
}

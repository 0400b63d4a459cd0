package imaging

import (
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// TestATruncatedImageFailsEveryTransform: a cut JPEG or PNG asked to be
// resized or converted is unsupported_format, never a half-grey result
// (which the compression API would charge).
func TestATruncatedImageFailsEveryTransform(t *testing.T) {
	needVips(t)
	transforms := map[string]connector.Transform{
		"resize":  {Resize: &connector.Resize{Method: "scale", Width: 100}},
		"convert": {Convert: &connector.Convert{Type: "webp"}},
	}
	for _, file := range []string{"truncated.jpg", "truncated.png", "truncated.heic"} {
		for name, tr := range transforms {
			t.Run(file+" "+name, func(t *testing.T) {
				tr := tr.Clone()
				if err := tr.Normalize(""); err != nil {
					t.Fatal(err)
				}
				res, err := Apply(images.Read(t, file), tr, connector.MaxImageSize)
				if connector.ErrorCodeOf(err) != connector.EFORMAT {
					t.Fatalf("Apply: expected unsupported_format, got %v (result %v)", err, res != nil)
				}
			})
		}
	}
}

// TestLibvipsDecodesStrictly: libvips itself, before any container
// check, refuses a JPEG and a PNG cut short instead of decoding them with
// grey where the data ends.
func TestLibvipsDecodesStrictly(t *testing.T) {
	needVips(t)
	for _, file := range []string{"truncated.jpg", "truncated.png", "truncated.heic"} {
		p := shimParams{width: 100, height: maxCoord, downOnly: true, format: fmtJPEG, quality: 90}
		if _, _, _, err := vipsTransform(images.Read(t, file), p); err == nil {
			t.Errorf("%s: libvips decoded it without an error", file)
		}
	}
}

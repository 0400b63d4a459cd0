package inspect_test

import (
	"bytes"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/inspect"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/fixtures/upstream/codec"
)

func TestImageTellsTypeAndDimensions(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		w, h      int
	}{
		{"photo.png", "image/png", 320, 240},
		{"photo.jpg", "image/jpeg", 320, 240},
		{"photo.webp", "image/webp", 320, 240},
		{"photo.avif", "image/avif", 320, 240},
		{"alpha.png", "image/png", 200, 200},
		{"alpha.avif", "image/avif", 200, 200},
		{"exif-rotate-90.jpg", "image/jpeg", 240, 160},
	} {
		data := images.Read(t, tc.name)
		info, err := inspect.Image(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := inspect.Info{Type: tc.typ, Size: int64(len(data)), Width: tc.w, Height: tc.h}
		if info != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, info, want)
		}
	}
}

// Every file the compression API refuses as "Invalid file format" is
// refused here with the code a job gets for it.
func TestImageRefusesWhatTheAPIRefuses(t *testing.T) {
	for _, name := range []string{"truncated.png", "truncated.jpg", "truncated.webp", "truncated.avif", "bomb.png", "not-an-image.png", "empty.png", "animated.gif"} {
		_, err := inspect.Image(bytes.NewReader(images.Read(t, name)))
		if code := connector.ErrorCodeOf(err); code != connector.EFORMAT {
			t.Errorf("%s: error %v (code %q), want %s", name, err, code, connector.EFORMAT)
		}
	}
}

func TestMaxPixelsIsTheReferenceUpstreams(t *testing.T) {
	if inspect.MaxPixels != codec.MaxPixels {
		t.Fatalf("inspect.MaxPixels = %d, the reference upstream decodes up to %d", inspect.MaxPixels, codec.MaxPixels)
	}
}

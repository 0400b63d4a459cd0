package imaging

import (
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// needVips skips without libvips; .ci/transforms.sh fails on any skip, so
// CI runs every test here for real.
func needVips(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
}

func apply(t *testing.T, name string, tr connector.Transform) *Result {
	t.Helper()
	if err := tr.Normalize(""); err != nil {
		t.Fatalf("options %+v: %v", tr, err)
	}
	res, err := Apply(images.Read(t, name), tr, connector.MaxImageSize)
	if err != nil {
		t.Fatalf("Apply(%s, %+v): %v", name, tr, err)
	}
	got, err := Probe(res.Data)
	if err != nil {
		t.Fatalf("the result does not read back: %v", err)
	}
	if got != res.Output {
		t.Fatalf("the result is %+v, Apply said %+v", got, res.Output)
	}
	return res
}

func TestResizeMethodsGiveTheDimensionsPlanned(t *testing.T) {
	needVips(t)
	cases := []struct {
		name   string
		file   string
		resize connector.Resize
		w, h   int
	}{
		{"scale by width", "photo.jpg", connector.Resize{Method: "scale", Width: 160}, 160, 120},
		{"scale by height", "photo.png", connector.Resize{Method: "scale", Height: 60}, 80, 60},
		{"fit in a box", "photo.jpg", connector.Resize{Method: "fit", Width: 100, Height: 100}, 100, 75},
		{"cover a box", "photo.jpg", connector.Resize{Method: "cover", Width: 100, Height: 100}, 100, 100},
		{"cover a tall box", "photo.webp", connector.Resize{Method: "cover", Width: 50, Height: 200}, 50, 200},
		{"no enlargement", "photo.jpg", connector.Resize{Method: "scale", Width: 1000}, 320, 240},
		{"no enlargement when covering", "photo.jpg", connector.Resize{Method: "cover", Width: 400, Height: 400}, 320, 240},
		{"enlarge when asked", "photo.jpg", connector.Resize{Method: "scale", Width: 640, Enlarge: true}, 640, 480},
		{"orientation applied first", "exif-rotate-90.jpg", connector.Resize{Method: "scale", Width: 80}, 80, 120},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.resize
			res := apply(t, c.file, connector.Transform{Resize: &r})
			if res.Output.Width != c.w || res.Output.Height != c.h {
				t.Fatalf("got %d×%d, want %d×%d", res.Output.Width, res.Output.Height, c.w, c.h)
			}
			if plan := Plan(res.Input, connector.Transform{Resize: &r}); plan != res.Output {
				t.Fatalf("Plan says %+v, Apply made %+v", plan, res.Output)
			}
		})
	}
}

func TestConvertToEachType(t *testing.T) {
	needVips(t)
	for _, typ := range connector.ConvertTypes {
		t.Run(typ, func(t *testing.T) {
			res := apply(t, "photo.png", connector.Transform{Convert: &connector.Convert{Type: typ}})
			if res.Output.Type != typ || res.Output.Width != 320 || res.Output.Height != 240 {
				t.Fatalf("got %+v, want a 320×240 %s", res.Output, typ)
			}
			if int64(len(res.Data)) > connector.MaxImageSize {
				t.Fatalf("the intermediate image is %d bytes, over the upstream limit", len(res.Data))
			}
		})
	}
}

func TestTransparencyFlattensOnTheBackground(t *testing.T) {
	needVips(t)
	res := apply(t, "alpha.png", connector.Transform{Convert: &connector.Convert{Type: "image/jpeg", Background: "#ff0000"}})
	r, g, b := cornerRGB(t, res.Data)
	if r < 240 || g > 15 || b > 15 {
		t.Fatalf("a transparent corner came out rgb(%d,%d,%d), want red", r, g, b)
	}
	res = apply(t, "alpha.png", connector.Transform{Convert: &connector.Convert{Type: "jpeg"}})
	if r, g, b := cornerRGB(t, res.Data); r < 240 || g < 240 || b < 240 {
		t.Fatalf("a transparent corner came out rgb(%d,%d,%d), want white by default", r, g, b)
	}
}

func TestHEICBecomesJPEG(t *testing.T) {
	needVips(t)
	res := apply(t, "photo.heic", connector.Transform{})
	if res.Input.Type != "image/heic" || res.Output.Type != "image/jpeg" || res.Output.Width != 320 {
		t.Fatalf("got input %+v output %+v, want a 320×240 HEIC in and JPEG out", res.Input, res.Output)
	}
}

func TestUnreadableImagesAreFormatErrors(t *testing.T) {
	needVips(t)
	for _, name := range []string{"truncated.heic", "bomb.png", "not-an-image.png"} {
		_, err := Apply(images.Read(t, name), connector.Transform{Resize: &connector.Resize{Method: "scale", Width: 10}}, connector.MaxImageSize)
		if connector.ErrorCodeOf(err) != connector.EFORMAT {
			t.Errorf("%s: got %v, want %s", name, err, connector.EFORMAT)
		}
	}
}

package imaging

import (
	"bytes"
	"slices"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// tagsOf reads back the EXIF tags an image carries, by IFD.
func tagsOf(t *testing.T, img []byte) (ifd0, exif, gps []uint16) {
	t.Helper()
	raw, err := vipsExif(img)
	if err != nil {
		t.Fatalf("reading the result's EXIF: %v", err)
	}
	raw = bytes.TrimPrefix(raw, []byte("Exif\x00\x00"))
	if len(raw) == 0 {
		return nil, nil, nil
	}
	tf, err := parseTIFF(raw)
	if err != nil {
		t.Fatalf("the result's EXIF does not parse: %v", err)
	}
	tags := func(es []tiffEntry) (out []uint16) {
		for _, e := range es {
			out = append(out, e.tag)
		}
		return out
	}
	return tags(tf.ifd0), tags(tf.exif), tags(tf.gps)
}

func TestPreserveKeepsOnlyTheGroupsAskedFor(t *testing.T) {
	needVips(t)
	orig := images.Read(t, "photo-exif.jpg")
	for _, typ := range []string{"image/jpeg", "image/png", "image/webp"} {
		for _, groups := range [][]string{{"copyright"}, {"creation"}, {"location"}, {"copyright", "creation", "location"}, nil} {
			tr := connector.Transform{Convert: &connector.Convert{Type: typ}, Resize: &connector.Resize{Method: "scale", Width: 100}, Preserve: groups}
			if err := tr.Normalize(""); err != nil {
				t.Fatal(err)
			}
			res, err := Apply(orig, tr, connector.MaxImageSize)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			out := res.Data
			if len(tr.Preserve) > 0 {
				meta, err := PreservedMetadata(orig, typ, tr.Preserve)
				if err != nil || meta == nil {
					t.Fatalf("%s %v: no metadata to keep (%v)", typ, groups, err)
				}
				if out, err = WithMetadata(out, typ, meta); err != nil {
					t.Fatalf("%s %v: %v", typ, groups, err)
				}
			}
			if got, err := Probe(out); err != nil || got.Width != 100 || got.Height != 133 {
				t.Fatalf("%s %v: the result reads as %+v (%v), want 100×133, upright", typ, groups, got, err)
			}
			ifd0, exif, gps := tagsOf(t, out)
			want := func(group string) bool { return slices.Contains(groups, group) }
			if slices.Contains(ifd0, 0x8298) != want("copyright") || slices.Contains(ifd0, 0x013B) != want("copyright") {
				t.Errorf("%s %v: copyright/artist present = %v, want %v (IFD0 %x)", typ, groups, !want("copyright"), want("copyright"), ifd0)
			}
			if slices.Contains(exif, 0x9003) != want("creation") {
				t.Errorf("%s %v: DateTimeOriginal present = %v, want %v", typ, groups, !want("creation"), want("creation"))
			}
			if (len(gps) > 0) != want("location") {
				t.Errorf("%s %v: GPS tags %x, want present = %v", typ, groups, gps, want("location"))
			}
		}
	}
}

func TestPreserveRefusesAVIFResultsBeforeAnyCall(t *testing.T) {
	needVips(t)
	_, err := PreservedMetadata(images.Read(t, "photo-exif.jpg"), "image/avif", []string{"copyright"})
	if connector.ErrorCodeOf(err) != connector.EINVALID {
		t.Fatalf("got %v, want %s naming preserve", err, connector.EINVALID)
	}
}

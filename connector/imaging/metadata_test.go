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
	tf, err := parseTIFF(raw, &metadataBudget{})
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

func TestPreserveCopyrightTakesXMPWhenEXIFHasNone(t *testing.T) {
	needVips(t)
	packet := `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">` +
		`<dc:rights><rdf:Alt><rdf:li xml:lang="x-default">(c) 2026 Lin &amp; Co</rdf:li></rdf:Alt></dc:rights>` +
		`<dc:creator><rdf:Seq><rdf:li>Lin Photographer</rdf:li></rdf:Seq></dc:creator>` +
		`</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
	seg := append([]byte("http://ns.adobe.com/xap/1.0/\x00"), packet...)
	jpg := images.Read(t, "photo.jpg")
	withXMP := append([]byte{0xFF, 0xD8, 0xFF, 0xE1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}, seg...)
	withXMP = append(withXMP, jpg[2:]...)

	meta, err := PreservedMetadata(withXMP, "image/jpeg", []string{"copyright"})
	if err != nil || meta == nil {
		t.Fatalf("nothing kept (%v)", err)
	}
	out, err := WithMetadata(jpg, "image/jpeg", meta)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("(c) 2026 Lin & Co\x00")) || !bytes.Contains(out, []byte("Lin Photographer\x00")) {
		t.Fatal("the XMP copyright and creator are not in the result's EXIF")
	}
	if ifd0, _, _ := tagsOf(t, out); !slices.Contains(ifd0, 0x8298) || !slices.Contains(ifd0, 0x013B) {
		t.Fatalf("IFD0 tags %x, want Copyright and Artist", ifd0)
	}
	if meta, _ := PreservedMetadata(withXMP, "image/jpeg", []string{"location"}); meta != nil {
		t.Fatal("location kept something from an image without GPS")
	}
}

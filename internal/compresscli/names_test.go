package compresscli

import (
	"bytes"
	"context"
	"crypto/rand"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

// uniqueJPEG is a w×h photo-like JPEG no other test sends (so no result
// is reused and every one is charged).
func uniqueJPEG(t *testing.T, w, h, quality int) []byte {
	t.Helper()
	salt := make([]byte, 16)
	rand.Read(salt)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*255/w) ^ salt[(x*y)%16]&7, uint8(y * 255 / h), salt[(x+y)%16], 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func needLibvips(t *testing.T) {
	t.Helper()
	if err := imaging.Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
}

func typeOf(t *testing.T, path string) (string, int, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return connector.SniffInputType(data), 0, 0
	}
	return connector.SniffInputType(data), cfg.Width, cfg.Height
}

// TestTwoInputsSharingANameGetTwoResults: logo.png and logo.jpg converted
// to WebP are two WebP files, logo.webp and logo-2.webp (the batch
// archive's rule), for two credits; a rerun skips both and charges
// nothing.
func TestTwoInputsSharingANameGetTwoResultsForTwoCredits(t *testing.T) {
	needLibvips(t)
	settle(t)
	dir := filepath.Join(t.TempDir(), "brand")
	png := writeImages(t, dir, "logo", 1)[0]
	os.Rename(png, filepath.Join(dir, "logo.png"))
	os.WriteFile(filepath.Join(dir, "logo.jpg"), uniqueJPEG(t, 64, 48, 90), 0o644)
	out := filepath.Join(t.TempDir(), "web")
	before := credits(t)
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: Transform{Convert: "webp"}})
	if err != nil || sum.Compressed+sum.Kept != 2 {
		t.Fatalf("summary %+v, err %v\n%s%s", sum, err, stdout, stderr)
	}
	settle(t)
	if charged := before - credits(t); charged != 2 {
		t.Errorf("charged %d, want 2", charged)
	}
	jpg, _, _ := typeOf(t, filepath.Join(out, "logo.webp"))
	pngOut, _, _ := typeOf(t, filepath.Join(out, "logo-2.webp"))
	if jpg != "image/webp" || pngOut != "image/webp" {
		t.Errorf("logo.webp is %s, logo-2.webp is %s; want two WebP files", jpg, pngOut)
	}
	a, _ := os.ReadFile(filepath.Join(out, "logo.webp"))
	b, _ := os.ReadFile(filepath.Join(out, "logo-2.webp"))
	if bytes.Equal(a, b) {
		t.Error("logo.webp and logo-2.webp are the same file")
	}
	before = credits(t)
	sum, stdout, _, _ = compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: Transform{Convert: "webp"}})
	settle(t)
	if sum.Skipped != 2 || credits(t) != before {
		t.Errorf("rerun: %+v, charged %d; want 2 skipped, nothing charged\n%s", sum, before-credits(t), stdout)
	}
}

// TestInPlaceNeverReplacesAFileWithAnothersPicture: IMG_7.heic and a
// different picture IMG_7.jpg, in place: IMG_7.jpg keeps its own 480×320
// picture and the HEIC's JPEG goes beside it as IMG_7-2.jpg; a rerun
// charges nothing and writes no third file.
func TestInPlaceNeverReplacesAFileWithAnothersPicture(t *testing.T) {
	needLibvips(t)
	settle(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "phone")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "IMG_7.heic"), images.Read(t, "photo.heic"), 0o644)
	os.WriteFile(filepath.Join(dir, "IMG_7.jpg"), uniqueJPEG(t, 480, 320, 95), 0o644)
	sum, stdout, stderr, err := compress(context.Background(), Options{InPlace: true, Paths: []string{dir}})
	if err != nil || sum.Failed != 0 {
		t.Fatalf("summary %+v, err %v\n%s%s", sum, err, stdout, stderr)
	}
	if typ, w, h := typeOf(t, filepath.Join(dir, "IMG_7.jpg")); typ != "image/jpeg" || w != 480 || h != 320 {
		t.Errorf("IMG_7.jpg is %s %d×%d; want its own 480×320 JPEG", typ, w, h)
	}
	if typ, w, h := typeOf(t, filepath.Join(dir, "IMG_7-2.jpg")); typ != "image/jpeg" || w != 320 || h != 240 {
		t.Errorf("IMG_7-2.jpg is %s %d×%d; want the HEIC's 320×240 JPEG", typ, w, h)
	}
	if _, err := os.Stat(filepath.Join(dir, "IMG_7.heic")); err != nil {
		t.Errorf("the HEIC original is gone: %v", err)
	}
	settle(t)
	before := credits(t)
	sum, stdout, _, _ = compress(context.Background(), Options{InPlace: true, Paths: []string{dir}})
	settle(t)
	if sum.Skipped != sum.Total || credits(t) != before {
		t.Errorf("rerun: %+v, charged %d; want all skipped, nothing charged\n%s", sum, before-credits(t), stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "IMG_7-3.jpg")); err == nil {
		t.Error("the rerun wrote IMG_7-3.jpg")
	}
}

// TestWhatIsAskedIsInTheResultEvenWhenLarger: a HEIC photo whose every
// JPEG is larger comes out as JPEG bytes under .jpg, and --convert png of
// a photo JPEG (any PNG of it is larger) comes out a PNG; never the
// original's bytes under the new name.
func TestWhatIsAskedIsInTheResultEvenWhenLarger(t *testing.T) {
	needLibvips(t)
	settle(t)
	dir := filepath.Join(t.TempDir(), "in")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ramp.heic"), images.Read(t, "gradient-3000x2000.heic"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
	if err != nil || sum.Failed != 0 {
		t.Fatalf("summary %+v, err %v\n%s%s", sum, err, stdout, stderr)
	}
	if typ, w, h := typeOf(t, filepath.Join(out, "ramp.jpg")); typ != "image/jpeg" || w != 3000 || h != 2000 {
		t.Errorf("ramp.jpg is %s %d×%d; want a 3000×2000 JPEG", typ, w, h)
	}

	photo := filepath.Join(dir, "photo.jpg")
	os.Remove(filepath.Join(dir, "ramp.heic"))
	os.WriteFile(photo, uniqueJPEG(t, 200, 150, 80), 0o644)
	sum, stdout, stderr, err = compress(context.Background(), Options{Out: out, Paths: []string{photo}, Transform: Transform{Convert: "png"}})
	if err != nil || sum.Failed != 0 {
		t.Fatalf("summary %+v, err %v\n%s%s", sum, err, stdout, stderr)
	}
	if typ, _, _ := typeOf(t, filepath.Join(out, "photo.png")); typ != "image/png" {
		t.Errorf("photo.png is %s; want a PNG", typ)
	}
}

// TestAKeptOriginalLosesItsMetadata: a JPEG the API cannot make smaller
// is kept, but without its EXIF (GPS, copyright): results carry no
// metadata unless asked.
func TestAKeptOriginalLosesItsMetadata(t *testing.T) {
	settle(t)
	dir := filepath.Join(t.TempDir(), "in")
	os.MkdirAll(dir, 0o755)
	// Noise at quality 60: the API's own pass does not make it smaller.
	low := noisyJPEG(t, 320, 240, 60)
	exif := exifSegment(t, images.Read(t, "photo-exif.jpg"))
	withGPS := append(append(append([]byte(nil), low[:2]...), exif...), low[2:]...)
	os.WriteFile(filepath.Join(dir, "low.jpg"), withGPS, 0o644)
	out := filepath.Join(t.TempDir(), "out")
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
	if err != nil || sum.Kept != 1 {
		t.Fatalf("summary %+v, err %v; want the original kept\n%s%s", sum, err, stdout, stderr)
	}
	kept, _ := os.ReadFile(filepath.Join(out, "low.jpg"))
	if bytes.Contains(kept, []byte("Ada Photographer")) || bytes.Contains(kept, exif[4:40]) {
		t.Error("the kept original still carries the EXIF it had")
	}
	if _, _, err := image.Decode(bytes.NewReader(kept)); err != nil {
		t.Errorf("the kept original does not decode: %v", err)
	}
}

// exifSegment is the APP1 Exif segment of a JPEG.
func exifSegment(t *testing.T, data []byte) []byte {
	t.Helper()
	i := bytes.Index(data, []byte("\xff\xe1"))
	if i < 0 {
		t.Fatal("no APP1 segment")
	}
	n := int(data[i+2])<<8 | int(data[i+3])
	return data[i : i+2+n]
}

// noisyJPEG is w×h random noise as a JPEG.
func noisyJPEG(t *testing.T, w, h, quality int) []byte {
	t.Helper()
	noise := make([]byte, w*h*4)
	rand.Read(noise)
	img := &image.RGBA{Pix: noise, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

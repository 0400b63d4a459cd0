package compresscli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionsTheAPIWouldRefuseAreRefusedBeforeUpload: the API's own rules,
// checked before anything is sent: one message naming the flags, a
// UsageError (exit 2), nothing charged and no file read.
func TestOptionsTheAPIWouldRefuseAreRefusedBeforeUpload(t *testing.T) {
	settle(t)
	dir := folder(t)
	before := credits(t)
	for _, c := range []struct {
		tr   Transform
		want string
	}{
		{Transform{Resize: "1600x", ResizeMethod: "fit"}, "--resize 1600x --resize-method fit: fit needs both width and height"},
		{Transform{Resize: "wide"}, "--resize wide"},
		{Transform{ResizeMethod: "cover"}, "--resize-method cover"},
		{Transform{Convert: "gif"}, "--convert gif"},
		{Transform{Preserve: "faces"}, "--preserve faces"},
		{Transform{Resize: "99999x"}, "--resize 99999x"},
	} {
		sum, stdout, stderr, err := compress(context.Background(), Options{Out: filepath.Join(t.TempDir(), "o"), Paths: []string{dir}, Transform: c.tr})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, c.want) || strings.Contains(ue.Msg, "\n") {
			t.Errorf("%+v: %v; want one line, a usage error containing %q", c.tr, err, c.want)
		}
		if sum.Total != 0 || stdout != "" || stderr != "" {
			t.Errorf("%+v: %+v, printed %q %q; want nothing done", c.tr, sum, stdout, stderr)
		}
	}
	if got := credits(t); got != before {
		t.Errorf("charged %d", before-got)
	}
}

// TestJFIFAndExtensionlessImagesAreFoundByContent: a folder's .jfif and
// .jpe files, and an image without an extension, are compressed (their
// content says JPEG); a text file without one is not sent; one file is
// "1 file".
func TestJFIFAndExtensionlessImagesAreFoundByContent(t *testing.T) {
	settle(t)
	dir := filepath.Join(t.TempDir(), "odd")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "scan.jfif"), uniqueJPEG(t, 160, 120, 92), 0o644)
	os.WriteFile(filepath.Join(dir, "old.jpe"), uniqueJPEG(t, 160, 120, 92), 0o644)
	os.WriteFile(filepath.Join(dir, "IMG_0001"), uniqueJPEG(t, 160, 120, 92), 0o644)
	os.WriteFile(filepath.Join(dir, "README"), []byte("not an image"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
	if err != nil || sum.Total != 3 || sum.Compressed+sum.Kept != 3 {
		t.Fatalf("summary %+v, err %v\n%s%s", sum, err, stdout, stderr)
	}
	for _, name := range []string{"scan.jfif", "old.jpe", "IMG_0001"} {
		if typ, _, _ := typeOf(t, filepath.Join(out, name)); typ != "image/jpeg" {
			t.Errorf("%s: %s; want a JPEG under its own name", name, typ)
		}
	}
	// A PNG no other test sends: a shared sample would make the other
	// tests' first runs free repeats.
	one := writeImages(t, t.TempDir(), "one", 1)[0]
	_, _, stderr, _ = compress(context.Background(), Options{Out: filepath.Join(t.TempDir(), "o"), Paths: []string{one}})
	if !strings.Contains(stderr, "1 file: ") {
		t.Errorf("summary of one file: %q; want \"1 file: \"", stderr)
	}
}

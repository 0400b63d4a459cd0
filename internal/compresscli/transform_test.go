package compresscli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

func TestCompressCommandResizesAndConvertsForOneCreditEach(t *testing.T) {
	if err := imaging.Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
	settle(t)
	dir := folder(t)
	os.WriteFile(filepath.Join(dir, "sub", "phone.heic"), images.Read(t, "photo.heic"), 0o644)
	out := filepath.Join(t.TempDir(), "web")
	before := credits(t)
	tr := Transform{Resize: "100x", Convert: "webp", Preserve: "copyright"}
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: tr})
	if err != nil || sum.Compressed != 4 || sum.Failed != 1 {
		t.Fatalf("summary %+v, err %v\nstdout:\n%s\nstderr:\n%s", sum, err, stdout, stderr)
	}
	for _, rel := range []string{"a.webp", "sub/b.webp", "sub/c.webp", "sub/phone.webp"} {
		data, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatalf("%s not written: %v", rel, err)
		}
		if info, err := imaging.Probe(data); err != nil || info.Type != "image/webp" || info.Width != 100 {
			t.Errorf("%s: %+v (%v); want a 100-wide image/webp", rel, info, err)
		}
	}
	if charged := before - credits(t); charged != 4 {
		t.Errorf("charged %d; want 4, one per image", charged)
	}
	// The same files at another size: not skipped as done, each made again.
	tr.Resize = "50x"
	sum, stdout, _, err = compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: tr})
	if err != nil || sum.Compressed != 4 || sum.Skipped != 0 {
		t.Fatalf("another size: summary %+v, err %v\n%s", sum, err, stdout)
	}
	if data, _ := os.ReadFile(filepath.Join(out, "a.webp")); len(data) == 0 {
		t.Fatal("a.webp missing after the second run")
	} else if info, _ := imaging.Probe(data); info.Width != 50 {
		t.Errorf("a.webp is %d wide after the run at 50x, want 50", info.Width)
	}
	// And the same again: all skipped, nothing charged.
	before = credits(t)
	if sum, _, _, _ = compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: tr}); sum.Skipped != 4 || credits(t) != before {
		t.Errorf("the same run again: %+v, charged %d; want 4 skipped, nothing charged", sum, before-credits(t))
	}
	if _, _, _, err := compress(context.Background(), Options{InPlace: true, Paths: []string{dir}, Transform: Transform{Convert: "webp"}}); err == nil {
		t.Error("--convert with --in-place was accepted")
	}
	if _, _, _, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}, Transform: Transform{Resize: "wide"}}); err == nil {
		t.Error("--resize wide was accepted")
	}
}

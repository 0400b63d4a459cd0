package compresscli

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

func TestParseVariantsShortFormAndRefusals(t *testing.T) {
	vs, err := ParseVariants("sm=320w,md=x400,lg=1600w:webp")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[0].Resize.Width != 320 || vs[1].Resize.Height != 400 || vs[2].Convert == nil || vs[2].Convert.Type != "image/webp" {
		t.Fatalf("parsed %+v", vs)
	}
	for _, bad := range []string{"sm", "sm=", "SM=320w", "a=320w,a=640w", "a=wide"} {
		if _, err := ParseVariants(bad); err == nil {
			t.Errorf("--variants %q accepted; want a usage error", bad)
		}
	}
}

func TestCompressVariantsWritesAFilePerVariant(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	settle(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "photo.jpg"), images.Read(t, "photo.jpg"), 0o644)
	out := filepath.Join(t.TempDir(), "web")
	vs, err := ParseVariants("sm=64w,lg=128w:webp")
	if err != nil {
		t.Fatal(err)
	}
	before := credits(t)
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}, Variants: vs})
	if err != nil || sum.Compressed != 2 {
		t.Fatalf("summary %+v, %v\n%s\n%s", sum, err, stdout, stderr)
	}
	for name, width := range map[string]int{"photo-sm.jpg": 64, "photo-lg.webp": 128} {
		fh, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, stdout)
			continue
		}
		cfg, _, err := image.DecodeConfig(fh)
		fh.Close()
		if name == "photo-sm.jpg" && (err != nil || cfg.Width != width) {
			t.Errorf("%s is %d wide (%v); want %d", name, cfg.Width, err, width)
		}
	}
	if spent := before - credits(t); spent != 2 {
		t.Errorf("a set of two cost %d credits; want 2", spent)
	}
	// Again: the same set, nothing charged.
	if _, _, _, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}, Variants: vs}); err != nil {
		t.Fatal(err)
	}
	if spent := before - credits(t); spent != 2 {
		t.Errorf("the set again cost %d more credits; want none", spent-2)
	}
}

package compresscli

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
)

// folder makes photos/{a.png, sub/b.jpg, sub/c.png, notes.txt, broken.png}.
func folder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "photos")
	for src, dst := range map[string]string{"photo.png": "a.png", "photo.jpg": "sub/b.jpg", "screenshot.png": "sub/c.png",
		"not-an-image.png": "broken.png"} {
		data, err := os.ReadFile(images.Path(src))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, dst)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an image, not sent"), 0o644)
	return dir
}

func TestCompressWritesSmallerFilesAndASecondRunChargesNothing(t *testing.T) {
	settle(t)
	dir := folder(t)
	out := filepath.Join(t.TempDir(), "small")
	before := credits(t)

	sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 4 || sum.Compressed != 3 || sum.Failed != 1 {
		t.Fatalf("summary %+v\nstdout:\n%s\nstderr:\n%s", sum, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.Contains(stdout, "failed     "+filepath.Join(dir, "broken.png")) {
		t.Errorf("want one line per file, the broken one failed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "4 files: 3 compressed") {
		t.Errorf("summary line: %s", stderr)
	}
	for _, rel := range []string{"a.png", "sub/b.jpg", "sub/c.png"} {
		orig, _ := os.Stat(filepath.Join(dir, rel))
		got, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatalf("%s not written: %v", rel, err)
		}
		if int64(len(got)) >= orig.Size() {
			t.Errorf("%s: %d bytes, not smaller than %d", rel, len(got), orig.Size())
		}
		if _, _, err := image.Decode(bytes.NewReader(got)); err != nil {
			t.Errorf("%s does not decode: %v", rel, err)
		}
	}
	settle(t)
	if charged := before - credits(t); charged != 3 {
		t.Errorf("first run charged %d; want 3", charged)
	}

	// The same command again: the three done are skipped, the broken one
	// fails again (uncharged), and nothing is paid.
	before = credits(t)
	sum, stdout, _, _ = compress(context.Background(), Options{Out: out, Paths: []string{dir}, JSON: true})
	settle(t)
	if sum.Skipped != 3 || sum.Failed != 1 || before != credits(t) {
		t.Fatalf("second run %+v charged %d; want 3 skipped, nothing charged\n%s", sum, before-credits(t), stdout)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct{ File, Status string }
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.File == "" {
			t.Errorf("--json line %q is not a file's JSON object", l)
		}
	}
}

func TestCompressInPlaceReplacesOnlyWhenSmallerAndIsNotPaidTwice(t *testing.T) {
	settle(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := folder(t)
	os.Remove(filepath.Join(dir, "broken.png"))
	orig, _ := os.Stat(filepath.Join(dir, "a.png"))
	before := credits(t)
	sum, stdout, _, err := compress(context.Background(), Options{InPlace: true, Paths: []string{filepath.Join(dir, "*.png"), filepath.Join(dir, "sub")}})
	if err != nil || sum.Compressed != 3 {
		t.Fatalf("%+v %v\n%s", sum, err, stdout)
	}
	now, _ := os.Stat(filepath.Join(dir, "a.png"))
	if now.Size() >= orig.Size() {
		t.Errorf("a.png %d bytes after, %d before", now.Size(), orig.Size())
	}
	// The first run costs at most one credit a file (a file this dev's key
	// compressed before, in another test, is a free repeat: dedupe); the
	// second run costs nothing.
	settle(t)
	first := before - credits(t)
	if first > 3 {
		t.Errorf("first run charged %d for 3 files", first)
	}
	sum, _, _, _ = compress(context.Background(), Options{InPlace: true, Paths: []string{dir}})
	settle(t)
	if second := before - credits(t) - first; sum.Skipped != 3 || second != 0 {
		t.Errorf("second run %+v, charged %d; want 3 skipped and nothing charged", sum, second)
	}
}

func TestCompressDrawsAProgressBarOnATerminal(t *testing.T) {
	dir := folder(t)
	sum, stdout, stderr, _ := compress(context.Background(), Options{Out: t.TempDir(), Paths: []string{dir}, Terminal: true})
	if sum.Compressed != 3 || stdout != "" {
		t.Fatalf("%+v, stdout %q", sum, stdout)
	}
	if !strings.Contains(stderr, "4/4") || !strings.Contains(stderr, "saved") || !strings.Contains(stderr, "files/s") {
		t.Errorf("no progress bar (count, saving, rate) on stderr:\n%q", stderr)
	}
}

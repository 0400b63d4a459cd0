package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/compresscli"
)

// folder makes photos/{a.png, sub/b.jpg, sub/c.png, notes.txt, broken.png}.
func folder(t *testing.T) string {
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

func (s *system) compressFiles(o compresscli.Options) (compresscli.Summary, string, string, error) {
	var stdout, stderr bytes.Buffer
	o.API, o.Key, o.Stdout, o.Stderr = s.api, s.key, &stdout, &stderr
	sum, err := compresscli.Run(context.Background(), o)
	return sum, stdout.String(), stderr.String(), err
}

func TestCompressCommandWritesSmallerFilesAndASecondRunChargesNothing(t *testing.T) {
	s := startSystem(t)
	dir := folder(t)
	out := filepath.Join(t.TempDir(), "small")
	before := s.credits()

	sum, stdout, stderr, err := s.compressFiles(compresscli.Options{Out: out, Paths: []string{dir}})
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
	if charged := before - s.credits(); charged != 3 {
		t.Errorf("first run charged %d; want 3", charged)
	}

	// The same command again: the three done are skipped, the broken one
	// fails again (uncharged), and nothing is paid.
	before = s.credits()
	sum, stdout, _, _ = s.compressFiles(compresscli.Options{Out: out, Paths: []string{dir}, JSON: true})
	if sum.Skipped != 3 || sum.Failed != 1 || before != s.credits() {
		t.Fatalf("second run %+v charged %d; want 3 skipped, nothing charged\n%s", sum, before-s.credits(), stdout)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct{ File, Status string }
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.File == "" {
			t.Errorf("--json line %q is not a file's JSON object", l)
		}
	}
}

func TestCompressInPlaceReplacesOnlyWhenSmallerAndIsNotPaidTwice(t *testing.T) {
	s := startSystem(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := folder(t)
	os.Remove(filepath.Join(dir, "broken.png"))
	orig, _ := os.Stat(filepath.Join(dir, "a.png"))
	before := s.credits()
	sum, stdout, _, err := s.compressFiles(compresscli.Options{InPlace: true, Paths: []string{filepath.Join(dir, "*.png"), filepath.Join(dir, "sub")}})
	if err != nil || sum.Compressed != 3 {
		t.Fatalf("%+v %v\n%s", sum, err, stdout)
	}
	now, _ := os.Stat(filepath.Join(dir, "a.png"))
	if now.Size() >= orig.Size() {
		t.Errorf("a.png %d bytes after, %d before", now.Size(), orig.Size())
	}
	sum, _, _, _ = s.compressFiles(compresscli.Options{InPlace: true, Paths: []string{dir}})
	if sum.Skipped != 3 || before-s.credits() != 3 {
		t.Errorf("second run %+v, charged %d in all; want 3 skipped and 3 credits", sum, before-s.credits())
	}
}

func TestCompressDrawsAProgressBarOnATerminal(t *testing.T) {
	s := startSystem(t)
	dir := folder(t)
	sum, stdout, stderr, _ := s.compressFiles(compresscli.Options{Out: t.TempDir(), Paths: []string{dir}, Terminal: true})
	if sum.Compressed != 3 || stdout != "" {
		t.Fatalf("%+v, stdout %q", sum, stdout)
	}
	if !strings.Contains(stderr, "4/4") || !strings.Contains(stderr, "saved") || !strings.Contains(stderr, "files/s") {
		t.Errorf("no progress bar (count, saving, rate) on stderr:\n%q", stderr)
	}
}

// A folder larger than one batch on a server whose cap of unfinished jobs
// is smaller than a batch: the batches after the first wait for the key's
// places (429 too_many_jobs) and go when the first drains, so every file
// is written; none fails for the cap.
func TestCompressWaitsForTheKeysCapBetweenBatches(t *testing.T) {
	s := startSystem(t, func(o *appOptions) { o.MaxJobsPerKey = 20 })
	dir := t.TempDir()
	png := images.Read(t, "screenshot.png")
	for i := range 101 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shot-%03d.png", i)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, stdout, stderr, err := s.compressFiles(compresscli.Options{Out: filepath.Join(t.TempDir(), "small"), Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 101 || sum.Failed != 0 || sum.Compressed+sum.Kept+sum.Skipped != 101 {
		t.Fatalf("summary %+v, want 101 files and none failed\nstdout (end):\n%.2000s\nstderr:\n%s", sum, stdout[max(0, len(stdout)-2000):], stderr)
	}
}

package compresscli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A result is the user's file: the original's permissions, and its
// modification time when asked, under --out and in place alike.
func TestResultsKeepTheOriginalsModeAndMtimeWhenAsked(t *testing.T) {
	settle(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "www")
	paths := writeImages(t, dir, "mode", 3)
	os.Chmod(paths[1], 0o640)
	os.Chmod(paths[2], 0o755)
	if os.Geteuid() == 0 {
		os.Chown(paths[1], 1234, 5678) // another user's file: root keeps it theirs
	}
	old := time.Date(2021, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range paths {
		os.Chtimes(p, old, old)
	}
	out := filepath.Join(t.TempDir(), "small")
	if sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}}); err != nil || sum.Compressed != 3 {
		t.Fatalf("--out: %+v %v\n%s%s", sum, err, stdout, stderr)
	}
	for i, p := range paths {
		want, _ := os.Stat(p)
		got, err := os.Stat(filepath.Join(out, filepath.Base(p)))
		if err != nil {
			t.Fatal(err)
		}
		if ws, gs := want.Sys().(*syscall.Stat_t), got.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (ws.Uid != gs.Uid || ws.Gid != gs.Gid) {
			t.Errorf("--out result %d owned by %d:%d; want the original's %d:%d", i, gs.Uid, gs.Gid, ws.Uid, ws.Gid)
		}
		if got.Mode().Perm() != want.Mode().Perm() {
			t.Errorf("--out result %d has mode %v; want the original's %v", i, got.Mode().Perm(), want.Mode().Perm())
		}
		if got.ModTime().Equal(old) {
			t.Errorf("--out result %d kept the original's time without --keep-mtime", i)
		}
	}

	if sum, stdout, stderr, err := compress(context.Background(), Options{InPlace: true, KeepMtime: true, Paths: []string{dir}}); err != nil || sum.Compressed != 3 {
		t.Fatalf("--in-place: %+v %v\n%s%s", sum, err, stdout, stderr)
	}
	for i, p := range paths {
		got, _ := os.Stat(p)
		if want := []os.FileMode{0o644, 0o640, 0o755}[i]; got.Mode().Perm() != want {
			t.Errorf("in place, file %d has mode %v; want %v kept", i, got.Mode().Perm(), want)
		}
		if !got.ModTime().Equal(old) {
			t.Errorf("in place with --keep-mtime, file %d modified %s; want %s kept", i, got.ModTime(), old)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.part")); len(left) > 0 {
		t.Errorf("temporary files left beside the results: %v", left)
	}
}

// --out inside the folder compressed: the first run charges each image
// once, the second nothing, and no output folder appears inside the
// output folder.
func TestAnOutputFolderInsideTheInputIsNeverReadAsInput(t *testing.T) {
	settle(t)
	dir := filepath.Join(t.TempDir(), "photos")
	writeImages(t, dir, "nest", 4)
	out := filepath.Join(dir, "small")
	before := credits(t)
	for run, want := range []int64{4, 0} {
		sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
		settle(t)
		if err != nil || sum.Total != 4 {
			t.Fatalf("run %d: %+v %v\n%s%s", run+1, sum, err, stdout, stderr)
		}
		if charged := before - credits(t); charged != want {
			t.Errorf("run %d charged %d; want %d", run+1, charged, want)
		}
		before = credits(t)
	}
	if _, err := os.Stat(filepath.Join(out, "small")); err == nil {
		t.Errorf("a nested output folder %s was made", filepath.Join(out, "small"))
	}
	if got, _ := filepath.Glob(filepath.Join(out, "*.png")); len(got) != 4 {
		t.Errorf("%d results; want 4", len(got))
	}
}

// A symlink that stays in the folder is the file it names (sent once); one
// that leads out is named and passed over, unless --follow-symlinks.
func TestSymlinksOutOfTheFolderAreFollowedOnlyWhenAsked(t *testing.T) {
	settle(t)
	root := t.TempDir()
	dir := filepath.Join(root, "photos")
	inside := writeImages(t, dir, "link-in", 2)
	outside := writeImages(t, filepath.Join(root, "elsewhere"), "link-out", 1)
	os.Symlink(inside[0], filepath.Join(dir, "again.png"))
	os.Symlink(outside[0], filepath.Join(dir, "away.png"))
	os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(dir, "away-folder"))

	sum, _, stderr, err := compress(context.Background(), Options{Out: filepath.Join(root, "out1"), Paths: []string{dir}})
	if err != nil || sum.Total != 2 || sum.Compressed != 2 {
		t.Fatalf("%+v %v\n%s", sum, err, stderr)
	}
	if !strings.Contains(stderr, "not followed: 2 symlinks") || !strings.Contains(stderr, "away.png") || !strings.Contains(stderr, "away-folder") {
		t.Errorf("want the two symlinks leading out named:\n%s", stderr)
	}

	sum, _, stderr, err = compress(context.Background(), Options{Out: filepath.Join(root, "out2"), Paths: []string{dir}, FollowSymlinks: true})
	if err != nil || sum.Total != 3 {
		t.Fatalf("--follow-symlinks: %+v %v\n%s", sum, err, stderr)
	}
}

// --in-place through a symlink inside the folder replaces the file it
// names, once, and leaves the symlink a symlink.
func TestInPlaceThroughASymlinkReplacesItsTargetOnce(t *testing.T) {
	settle(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "site")
	target := writeImages(t, dir, "target", 1)[0]
	link := filepath.Join(dir, "alias.png")
	os.Symlink(target, link)
	orig, _ := os.Stat(target)
	before := credits(t)
	sum, stdout, stderr, err := compress(context.Background(), Options{InPlace: true, Paths: []string{dir}})
	settle(t)
	if err != nil || sum.Total != 1 || sum.Compressed != 1 {
		t.Fatalf("%+v %v\n%s%s", sum, err, stdout, stderr)
	}
	if charged := before - credits(t); charged != 1 {
		t.Errorf("charged %d for one file reached twice; want 1", charged)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink: %v", link, err)
	}
	if now, _ := os.Stat(target); now.Size() >= orig.Size() {
		t.Errorf("the target is %d bytes, %d before; want it replaced by the smaller result", now.Size(), orig.Size())
	}
}

func TestTheSupportedFormatsReadAsASentence(t *testing.T) {
	if got := formatNames(); got != "PNG, JPEG, WebP, AVIF or HEIC" {
		t.Errorf("formatNames() = %q", got)
	}
}

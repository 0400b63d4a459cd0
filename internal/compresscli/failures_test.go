package compresscli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One file that cannot be read (its mode lets no one read it) or that is
// gone by the time it is read (a dangling symlink is one that vanished)
// fails alone, with its own reason; the twelve others are written and
// charged.
func TestOneUnreadableOrVanishedFileAmongThirteenFailsAlone(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		make         func(dir string) string
	}{
		{"unreadable", "permission denied", func(dir string) string {
			p := writeImages(t, dir, "locked", 1)[0]
			os.Chmod(p, 0)
			return p
		}},
		{"vanished", "no such file", func(dir string) string {
			p := filepath.Join(dir, "gone.png")
			os.Symlink(filepath.Join(dir, "deleted-meanwhile.png"), p)
			return p
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			settle(t)
			dir := filepath.Join(t.TempDir(), "photos")
			writeImages(t, dir, "alone", 12)
			bad := c.make(dir)
			out := filepath.Join(t.TempDir(), "out")
			before := credits(t)
			sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
			settle(t)
			if err != nil || sum.Total != 13 || sum.Compressed != 12 || sum.Failed != 1 {
				t.Fatalf("%+v %v; want 12 compressed, 1 failed\n%s%s", sum, err, stdout, stderr)
			}
			var failed []string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "failed") {
					failed = append(failed, l)
				}
			}
			if len(failed) != 1 || !strings.Contains(failed[0], bad) || !strings.Contains(failed[0], c.reason) {
				t.Errorf("want one failed line, naming %s and why (%s):\n%s", bad, c.reason, stdout)
			}
			if got, _ := filepath.Glob(filepath.Join(out, "*.png")); len(got) != 12 {
				t.Errorf("%d written; want 12", len(got))
			}
			if charged := before - credits(t); charged != 12 {
				t.Errorf("charged %d; want 12", charged)
			}
		})
	}
}

// A file that cannot be read while its batch is uploading fails alone
// and the batch is sent without it.
func TestAFileUnreadableMidUploadFailsAloneAndTheBatchGoesOn(t *testing.T) {
	settle(t)
	dir := filepath.Join(t.TempDir(), "photos")
	paths := writeImages(t, dir, "midway", 3)
	r := &run{o: Options{Out: t.TempDir(), Stdout: &strings.Builder{}, Stderr: &strings.Builder{}, PollEvery: 50 * time.Millisecond}, c: &client{api: dev.api, key: dev.key, http: newHTTPClient()},
		st: &state{path: filepath.Join(t.TempDir(), "state.json"), Files: map[string]*fileState{}}, waiting: map[string]*file{}, batches: map[string][]string{}}
	r.rep = newReporter(r.o, 3)
	var files []*file
	for _, p := range paths {
		f := &file{Path: p, Real: p, Rel: filepath.Base(p)}
		if err := hashFile(f); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// A folder opens fine and fails on read: the middle file "became" one.
	os.Remove(paths[1])
	os.Mkdir(paths[1], 0o755)
	if err := r.send(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	if r.sum.Failed != 1 || len(r.waiting) != 2 {
		t.Fatalf("summary %+v, %d jobs followed; want the one file failed and two sent\n%s", r.sum, len(r.waiting), r.o.Stdout)
	}
	if out := r.o.Stdout.(*strings.Builder).String(); !strings.Contains(out, paths[1]) || strings.Contains(out, paths[0]) {
		t.Errorf("want only %s failed:\n%s", paths[1], out)
	}
	if err := r.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.sum.Compressed != 2 || len(r.st.Pending) != 0 {
		t.Errorf("summary %+v, pending %v; want the other two compressed", r.sum, r.st.Pending)
	}
}

// Image types the API does not take are named, counted and not sent; a
// folder with none it takes is an error.
func TestUnsupportedTypesAreNamedAndAFolderWithoutImagesFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mixed")
	writeImages(t, dir, "mixed", 1)
	for _, name := range []string{"anim.gif", "scan.tiff", "doc.pdf"} {
		os.WriteFile(filepath.Join(dir, name), []byte("not sent"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an image"), 0o644)
	sum, stdout, stderr, err := compress(context.Background(), Options{Out: t.TempDir(), Paths: []string{dir}})
	if err != nil || sum.Total != 1 || sum.Unsupported != 3 {
		t.Fatalf("%+v %v\n%s%s", sum, err, stdout, stderr)
	}
	if !strings.Contains(stderr, "skipped 3 files: anim.gif, doc.pdf, scan.tiff — not PNG, JPEG, WebP, AVIF or HEIC") {
		t.Errorf("want the skipped files named:\n%s", stderr)
	}
	if !strings.Contains(stderr, "3 not sent") {
		t.Errorf("want them counted in the summary:\n%s", stderr)
	}

	os.Remove(filepath.Join(dir, "mixed-00.png"))
	_, _, stderr, err = compress(context.Background(), Options{Out: t.TempDir(), Paths: []string{dir}})
	if !errors.Is(err, ErrNoImages) || !strings.Contains(err.Error(), dir) || !strings.Contains(stderr, "anim.gif") {
		t.Errorf("a folder of no supported image: %v; want ErrNoImages naming the folder\n%s", err, stderr)
	}
}

// An API that does not answer is one error naming its address and how to
// start one, not a line per file.
func TestAnUnreachableAPIIsOneLineNamingTheAddress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "photos")
	writeImages(t, dir, "down", 5)
	api := "http://" + freeAddr() // nothing listens there any more
	os.WriteFile(filepath.Join(dir, "anim.gif"), []byte("not sent"), 0o644)
	sum, stdout, stderr, err := compress(context.Background(), Options{API: api, Out: t.TempDir(), Paths: []string{dir}})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), api) || !strings.Contains(err.Error(), "go run . dev") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v; want one line naming %s and how to start dev", err, api)
	}
	if stdout != "" || stderr != "" || sum.Failed != 0 {
		t.Errorf("want nothing else printed, got %+v\nstdout: %s\nstderr: %s", sum, stdout, stderr)
	}
}

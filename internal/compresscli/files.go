package compresscli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Formats are the image types a folder contributes, by extension, and the
// names the "skipped" line gives them. A folder's file without an
// extension is sent when its content is one of them (sniffed); a file
// named on the command line is sent whatever its name (the API says what
// it is).
var Formats = []Format{
	{"PNG", "image/png", []string{".png"}},
	{"JPEG", "image/jpeg", []string{".jpg", ".jpeg", ".jfif", ".jpe"}},
	{"WebP", "image/webp", []string{".webp"}},
	{"AVIF", "image/avif", []string{".avif"}},
	{"HEIC", "image/heic", []string{".heic", ".heif"}},
}

// Format is one image type the API compresses.
type Format struct {
	Name      string
	MediaType string
	Exts      []string // lower case, with the dot
}

// otherImageExts are files a photographer's folder holds that look like
// images but that the API does not take: they are named in the run's
// "skipped" line instead of being passed over without a word.
var otherImageExts = map[string]bool{
	".gif": true, ".tif": true, ".tiff": true, ".bmp": true, ".pdf": true, ".svg": true, ".psd": true,
	".ico": true, ".jxl": true, ".jp2": true, ".eps": true, ".raw": true, ".dng": true, ".cr2": true,
	".cr3": true, ".nef": true, ".arw": true, ".orf": true, ".rw2": true, ".raf": true,
}

func supported(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range Formats {
		for _, e := range f.Exts {
			if e == ext {
				return true
			}
		}
	}
	return false
}

// formatNames is "PNG, JPEG, WebP, AVIF or HEIC".
func formatNames() string {
	var names []string
	for _, f := range Formats {
		names = append(names, f.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// maxImageSize is the API's limit per image (10 MiB).
const maxImageSize = 10 << 20

// file is one image to compress.
type file struct {
	Path string // as found (argument, or under a folder argument)
	Real string // the file itself, symlinks resolved: read from, and replaced by --in-place
	Rel  string // where its result goes under --out: relative to its folder argument, or its base name
	Size int64
	Hash string // sha256 of its content, hex
	Info os.FileInfo
	Type string // its content's media type, sniffed ("" when none of the API's)
	Want string // the media type its result is expected to have
	Dest string // where its result goes (names.go)
}

// found is what the arguments name: the files to compress, and what was
// passed over with the reason.
type found struct {
	files       []*file
	unsupported []string // image-like files the API does not take
	outside     []string // symlinks leading out of their folder, not followed
}

// walker collects files; out (absolute, symlinks resolved) is the output
// folder, never read as input.
type walker struct {
	out    string
	follow bool // --follow-symlinks
	found
	seen map[string]bool   // real paths
	rels map[string]string // Rel -> the path that took it
}

// collect expands the arguments: files, folders (recursively, supported
// image files only) and globs (for shells that leave them unexpanded).
// Each file appears once; two files that would share an output path are
// an error. Under a folder, the output folder is skipped, dot-folders are
// skipped, and a symlink is followed only when it stays inside the folder
// (or with follow).
func collect(args []string, out string, follow bool) (*found, error) {
	w := &walker{out: realPath(out), follow: follow, seen: map[string]bool{}, rels: map[string]string{}}
	for _, arg := range args {
		matches := []string{arg}
		if _, err := os.Lstat(arg); errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(arg, "*?[") {
			if matches, err = filepath.Glob(arg); err != nil {
				return nil, fmt.Errorf("%s: %w", arg, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("%s: no file matches", arg)
			}
		}
		for _, m := range matches {
			info, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !info.IsDir() {
				if w.out != "" && within(realPath(m), w.out) {
					continue // a glob reaching into the output folder
				}
				if err := w.add(m, filepath.Base(m)); err != nil {
					return nil, err
				}
				continue
			}
			root := realPath(m)
			if err := w.walk(m, m, root, root, map[string]bool{root: true}); err != nil {
				return nil, err
			}
		}
	}
	return &w.found, nil
}

// walk adds the supported files under the folder phys, shown as the path
// shown under the argument arg whose real path is root. visiting guards
// against symlink loops.
func (w *walker) walk(arg, shown, phys, root string, visiting map[string]bool) error {
	var found []string
	var links []string
	err := filepath.WalkDir(phys, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == phys {
				return err
			}
			return nil // an unreadable subfolder: what it holds is not named, so not sent
		}
		onDisk := p
		if rel, _ := filepath.Rel(phys, p); rel != "." {
			p = filepath.Join(shown, rel)
		} else {
			p = shown
		}
		if d.IsDir() {
			if p != shown && (strings.HasPrefix(d.Name(), ".") || (w.out != "" && realPath(p) == w.out)) {
				return filepath.SkipDir // .git, our own state, the output folder
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			links = append(links, p)
		case !d.Type().IsRegular():
		case supported(p), filepath.Ext(d.Name()) == "" && sniffFile(onDisk) != "":
			found = append(found, p)
		case otherImageExts[strings.ToLower(filepath.Ext(p))]:
			w.unsupported = append(w.unsupported, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range links {
		real := realPath(p)
		info, err := os.Stat(real)
		if err != nil {
			if supported(p) {
				found = append(found, p) // dangling: fails alone, with its reason
			}
			continue
		}
		if !within(real, root) && !w.follow {
			if info.IsDir() || supported(p) {
				w.outside = append(w.outside, p)
			}
			continue
		}
		if info.IsDir() {
			// Inside the folder it is walked anyway; outside only when asked.
			if !within(real, root) && !visiting[real] && (w.out == "" || !within(real, w.out)) {
				visiting[real] = true
				if err := w.walk(arg, p, real, root, visiting); err != nil {
					return err
				}
			}
			continue
		}
		if supported(p) {
			found = append(found, p)
		}
	}
	sort.Strings(found)
	for _, p := range found {
		rel, _ := filepath.Rel(arg, p)
		if err := w.add(p, rel); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) add(path, rel string) error {
	real := realPath(path)
	if w.seen[real] {
		return nil // the same file reached twice (a symlink inside the folder)
	}
	if other, ok := w.rels[rel]; ok {
		return fmt.Errorf("%s and %s would both be written as %s: name them from a common folder", other, path, rel)
	}
	w.seen[real], w.rels[rel] = true, path
	w.files = append(w.files, &file{Path: path, Real: real, Rel: rel})
	return nil
}

// realPath is path made absolute with its symlinks resolved, as far as
// they resolve.
func realPath(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Not there (yet): resolve the folder it would be in.
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(r, filepath.Base(abs))
	}
	return abs
}

// within reports whether path is dir or under it (both real).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// hashFile reads a file's size, mode and content hash.
func hashFile(f *file) error {
	r, err := os.Open(f.Real)
	if err != nil {
		return err
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o444 == 0 {
		// Only root gets this far: the mode says no one reads this file,
		// and a file marked so is not sent anywhere.
		return &fs.PathError{Op: "open", Path: f.Real, Err: fmt.Errorf("%w: its mode %04o lets no one read it", fs.ErrPermission, info.Mode().Perm())}
	}
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return err
	}
	f.Size, f.Hash, f.Info = n, hex.EncodeToString(h.Sum(nil)), info
	return nil
}

// reason is an error about one file, without the path the line already
// names ("open photos/a.png: permission denied" -> "permission denied").
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

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

// imageExts are the files a folder contributes; a file named on the
// command line is sent whatever its name.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".webp": true, ".avif": true, ".heic": true, ".heif": true}

// maxImageSize is the API's limit per image (10 MiB).
const maxImageSize = 10 << 20

// file is one image to compress.
type file struct {
	Path string // as found (argument, or under a folder argument)
	Abs  string
	Rel  string // where its result goes under --out: relative to its folder argument, or its base name
	Size int64
	Hash string // sha256 of its content, hex
}

// collect expands the arguments: files, folders (recursively, image
// files only) and globs (for shells that leave them unexpanded). Each file
// appears once; two files that would share an output path are an error.
func collect(args []string) ([]*file, error) {
	var out []*file
	seen := map[string]bool{}
	rels := map[string]string{}
	add := func(path, rel string) error {
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if seen[abs] {
			return nil
		}
		if other, ok := rels[rel]; ok {
			return fmt.Errorf("%s and %s would both be written as %s: name them from a common folder", other, path, rel)
		}
		seen[abs], rels[rel] = true, path
		out = append(out, &file{Path: path, Abs: abs, Rel: rel})
		return nil
	}
	for _, arg := range args {
		matches := []string{arg}
		if _, err := os.Stat(arg); errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(arg, "*?[") {
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
				if err := add(m, filepath.Base(m)); err != nil {
					return nil, err
				}
				continue
			}
			var found []string
			err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && p != m && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir // .git, our own state, ...
				}
				if d.Type().IsRegular() && imageExts[strings.ToLower(filepath.Ext(p))] {
					found = append(found, p)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			sort.Strings(found)
			for _, p := range found {
				rel, _ := filepath.Rel(m, p)
				if err := add(p, rel); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// hashFile reads a file's size and content hash.
func hashFile(f *file) error {
	r, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return err
	}
	f.Size, f.Hash = n, hex.EncodeToString(h.Sum(nil))
	return nil
}
